"""The one boundary where LLM JSON becomes a typed object (seed 001 applied).

``TolerantModel`` matches incoming keys tolerantly — case, ``-``/``_``/space variants of the same
field name (``Trigger-Moment`` → ``trigger_moment``) — without rewriting values. True misses still
fail; :func:`contract_violation` turns the pydantic error into a typed
:class:`~haytham.errors.ContractViolation` with the expected and actual shapes.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from haytham.errors import ContractViolation

_SEPARATORS = re.compile(r"[\s\-]+")


def normalize_key(key: str) -> str:
    """The documented normalisation: lower case, runs of spaces/hyphens become ``_``."""
    return _SEPARATORS.sub("_", key.strip()).lower()


class TolerantModel(BaseModel):
    """Base for models filled by an LLM: tolerant key matching, unknown keys ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _match_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        if all(k in fields for k in data):
            return data
        by_norm = {normalize_key(name): name for name in fields}
        matched: dict[str, Any] = {}
        for key, value in data.items():
            if key in fields:
                matched[key] = value
                continue
            target = by_norm.get(normalize_key(str(key))) if isinstance(key, str) else None
            if target is not None and target not in data and target not in matched:
                matched[target] = value
            else:
                matched[key] = value
        return matched


def _shape(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def contract_violation(
    model: type[BaseModel], data: Any, error: ValidationError, *, where: str = ""
) -> ContractViolation:
    """Describe why ``data`` does not satisfy ``model`` as a typed contract violation."""
    errors = error.errors()
    kinds = {e.get("type", "") for e in errors}
    if "missing" in kinds:
        mismatch = "missing_required_key"
    elif any(e.get("input", 0) is None for e in errors):
        mismatch = "nil_required_input"
    else:
        mismatch = "type_mismatch"
    details = [
        f"{'.'.join(str(p) for p in e.get('loc', ())) or '<root>'}: {e.get('msg', '')}"
        for e in errors[:20]
    ]
    required = [n for n, f in model.model_fields.items() if f.is_required()]
    actual = sorted(str(k) for k in data) if isinstance(data, dict) else []
    prefix = f"{where}: " if where else ""
    return ContractViolation(
        f"{prefix}output does not match {model.__name__} ({mismatch}; {details[0] if details else ''})",
        expected_shape="object",
        actual_shape=_shape(data),
        expected_keys=required,
        actual_keys=actual,
        mismatch=mismatch,
        details=details,
    )


def parse_contract(model: type[BaseModel], data: Any, *, where: str = "") -> Any:
    """Validate ``data`` against ``model``; raise :class:`ContractViolation` on any mismatch."""
    if data is None or data == {} or data == []:
        raise ContractViolation(
            f"{where + ': ' if where else ''}required input for {model.__name__} is empty",
            actual_shape=_shape(data),
            expected_keys=[n for n, f in model.model_fields.items() if f.is_required()],
            mismatch="nil_required_input",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise contract_violation(model, data, exc, where=where) from None
