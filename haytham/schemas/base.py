"""The one boundary where LLM JSON becomes a typed object (seed 001 applied).

``TolerantModel`` matches incoming keys tolerantly — case, ``-``/``_``/space variants of the same
field name (``Trigger-Moment`` → ``trigger_moment``) — and repairs the shapes a weak model gets
wrong without changing what they say: a single item where a list is expected, a number where text
is expected, an enum value in another case or spelling (``"No Go"`` → ``"NO-GO"``), ``null`` for
a field that has a default. True misses still fail; :func:`contract_violation` turns the
pydantic error into a typed :class:`~haytham.errors.ContractViolation` with the expected and
actual shapes.
"""

from __future__ import annotations

import copy
import re
import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainValidator,
    ValidationError,
    WrapValidator,
    model_validator,
)
from pydantic.fields import FieldInfo

from haytham.errors import ContractViolation

_SEPARATORS = re.compile(r"[\s\-]+")


def normalize_key(key: str) -> str:
    """The documented normalisation: lower case, runs of spaces/hyphens become ``_``."""
    return _SEPARATORS.sub("_", key.strip()).lower()


_PARSERS = (BeforeValidator, PlainValidator, WrapValidator)


def _enum_key(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", value.lower())


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without ``| None``, whether ``None`` is allowed)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], len(args) < len(get_args(annotation))
    return annotation, annotation is type(None)


def near_literal(value: object, options: tuple[Any, ...]) -> object:
    """``value`` as one of ``options`` when it differs only in case, spaces or punctuation."""
    if not isinstance(value, str) or value in options:
        return value
    wanted = _enum_key(value)
    hits = [o for o in options if isinstance(o, str) and _enum_key(o) == wanted]
    return hits[0] if len(hits) == 1 else value


def _lenient(field: FieldInfo, value: Any, own_parser: bool) -> Any:
    """``value`` in the shape ``field`` wants, where only the shape (never the meaning) differs."""
    annotation, _ = _unwrap(field.annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return near_literal(value, get_args(annotation))
    if annotation is str and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if origin is list and not own_parser:
        (item,) = get_args(annotation) or (Any,)
        if isinstance(value, dict | str | int | float) and not isinstance(value, bool):
            value = [value] if value != "" else []
        if isinstance(value, list) and item is str:
            value = [
                str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                for v in value
            ]
    return value


class TolerantModel(BaseModel):
    """Base for models filled by an LLM: tolerant key matching, unknown keys ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _match_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        own = {
            name
            for dec in cls.__pydantic_decorators__.field_validators.values()
            if dec.info.mode in ("before", "plain", "wrap")
            for name in dec.info.fields
        }
        out: dict[str, Any] = {}
        for key, value in cls._matched(data).items():
            field = fields.get(key)
            if field is None:
                out[key] = value
            elif value is None and not field.is_required() and not _unwrap(field.annotation)[1]:
                continue  # null for a field with a default: the default
            else:
                parses = key in own or any(isinstance(m, _PARSERS) for m in field.metadata)
                out[key] = _lenient(field, value, parses)
        return out

    @classmethod
    def _matched(cls, data: dict[Any, Any]) -> dict[Any, Any]:
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


MISSING_TEXT = "(not given by the model)"
_SALVAGE_ROUNDS = 60


def salvage(model: type[BaseModel], data: Any, *, where: str = "") -> tuple[Any, list[str]]:
    """The usable part of an answer that breaks its contract, and what was changed to keep it.

    Repairs, one pydantic error at a time: a list over its maximum keeps its first items; an
    item of a list that is still invalid is dropped; a missing or empty required text gets
    :data:`MISSING_TEXT`. Nothing is invented beyond that; if the answer still does not parse
    (no payload at all, a required list left empty), the :class:`ContractViolation` is raised.
    """
    if not isinstance(data, dict) or not data:
        return parse_contract(model, data, where=where), []  # raises: nothing to keep
    work = copy.deepcopy(data)
    notes: list[str] = []
    for _ in range(_SALVAGE_ROUNDS):
        try:
            return model.model_validate(work), notes
        except ValidationError as exc:
            if not _repair_one(model, work, exc.errors()[0], notes):
                raise contract_violation(model, data, exc, where=where) from None
    return parse_contract(model, work, where=where), notes


def _find(container: Any, step: Any) -> Any:
    """``container[step]``, matching a field name tolerantly against the answer's own keys."""
    if isinstance(container, list) and isinstance(step, int) and 0 <= step < len(container):
        return step
    if isinstance(container, dict) and isinstance(step, str):
        if step in container:
            return step
        return next((k for k in container if normalize_key(str(k)) == step), None)
    return None


def _annotation_at(model: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    """The declared type at ``loc`` inside ``model`` (``None`` where it cannot be told)."""
    current: Any = model
    for step in loc:
        current, _ = _unwrap(current)
        if isinstance(step, int) and get_origin(current) is list:
            current = (get_args(current) or (None,))[0]
        elif (
            isinstance(current, type)
            and issubclass(current, BaseModel)
            and step in current.model_fields
        ):
            current = current.model_fields[step].annotation
        else:
            return None
    return _unwrap(current)[0]


def _repair_one(
    model: type[BaseModel], work: dict[str, Any], error: Mapping[str, Any], notes: list[str]
) -> bool:
    loc, kind = tuple(error.get("loc", ())), error.get("type", "")
    path = ".".join(str(p) for p in loc) or "<root>"
    nodes: list[Any] = [work]  # nodes[i] is the value at loc[:i]
    keys: list[Any] = []  # the answer's own key for each step
    for step in loc:
        key = _find(nodes[-1], step)
        if key is None:
            break
        keys.append(key)
        nodes.append(nodes[-1][key])
    max_length = (error.get("ctx") or {}).get("max_length")
    if kind == "too_long" and len(keys) == len(loc) and isinstance(nodes[-1], list) and max_length:
        del nodes[-1][max_length:]
        notes.append(f"{path}: more than {max_length} items; kept the first {max_length}")
        return True
    text_field = _annotation_at(model, loc) is str
    if text_field and kind in ("missing", "string_too_short", "string_type", "none_required"):
        parent = nodes[len(loc) - 1] if len(keys) >= len(loc) - 1 else None
        key = _find(parent, loc[-1]) if isinstance(parent, dict) else None
        key = str(loc[-1]) if key is None else key
        if isinstance(parent, dict) and parent.get(key) != MISSING_TEXT:
            parent[key] = MISSING_TEXT
            notes.append(f"{path}: {error.get('msg', '')}; set to {MISSING_TEXT!r}")
            return True
    for depth in range(len(keys) - 1, -1, -1):  # the innermost list item that can go
        container = nodes[depth]
        if isinstance(container, list) and len(container) > 1:
            del container[keys[depth]]
            notes.append(f"{path}: {error.get('msg', '')}; dropped that item")
            return True
    return False
