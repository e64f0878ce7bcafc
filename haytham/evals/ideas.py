"""Test ideas (``tests/fixtures/ideas.json``) and the deterministic checks of their expectations.

Each idea carries expected characteristics. They are checked by code, never by a judge:
``has_auth`` / ``has_realtime`` / ``primary_interface`` against the system-traits output,
``complexity`` against the mvp-scope appetite, and each expected invariant (``any_of`` keywords,
case-insensitive) against the rendered concept anchor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from haytham.errors import ConfigError, InputError
from haytham.schemas.traits import Interface
from haytham.stages import mvp_scope, system_traits
from haytham.stages.mvp_scope import Appetite

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_IDEAS_FILE = REPO_ROOT / "tests" / "fixtures" / "ideas.json"


class ExpectedInvariant(BaseModel):
    """An invariant the anchor must state: found when any of its keywords appears (any case)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    any_of: tuple[str, ...] = Field(min_length=1)


class Expected(BaseModel):
    """What a faithful pipeline must produce for an idea, checked by code against the system
    traits, the mvp-scope appetite and the rendered anchor."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    has_auth: bool
    has_realtime: bool
    primary_interface: Interface
    complexity: Appetite
    invariants: tuple[ExpectedInvariant, ...] = Field(min_length=1)


class EvalIdea(BaseModel):
    """One test idea: its text plus what a faithful pipeline must produce for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9-]{1,40}$")
    title: str
    cls: str = Field(alias="class")
    text: str = ""
    file: str | None = None
    expected: Expected

    @model_validator(mode="after")
    def _has_text(self) -> EvalIdea:
        if not self.text.strip():
            raise ValueError(f"idea {self.id!r} needs 'text' or a readable 'file'")
        return self


def load_ideas(path: Path = DEFAULT_IDEAS_FILE, ids: Sequence[str] | None = None) -> list[EvalIdea]:
    """The ideas in ``path`` (all, or those named in ``ids``, in that order).

    Raises:
        ConfigError: the file is missing or invalid.
        InputError: an id in ``ids`` is unknown (the message lists the known ones).
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"Cannot read the test ideas file {path}: {exc}.") from None
    ideas: list[EvalIdea] = []
    for n, item in enumerate(raw.get("ideas", []), 1):
        data = dict(item)
        if data.get("file") and not data.get("text"):
            try:
                data["text"] = (path.parent / data["file"]).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"Idea {n} in {path}: cannot read {data['file']}: {exc}."
                ) from None
        try:
            ideas.append(EvalIdea.model_validate(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "idea"
            raise ConfigError(f"Idea {n} in {path} is invalid: {where}: {first['msg']}.") from None
    if not ideas:
        raise ConfigError(f"The test ideas file {path} lists no ideas.")
    if ids is None:
        return ideas
    by_id = {i.id: i for i in ideas}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise InputError(f"Unknown idea(s) {', '.join(unknown)}; known: {', '.join(by_id)}.")
    return [by_id[i] for i in ids]


class Check(BaseModel):
    """One deterministic expectation and whether the pipeline met it."""

    check: str
    expected: Any
    actual: Any = None
    passed: bool | None = Field(description="None when the stage it needs did not run.")


def _payload(state: Mapping[str, Any], slug: str) -> Mapping[str, Any] | None:
    out = (state.get("outputs") or {}).get(slug)
    return None if out is None else (out.get("payload") or {})


def interface_matches(expected: str, actual: str) -> bool:
    """``web_and_mobile`` on either side accepts ``web`` or ``mobile`` on the other."""
    if expected == actual:
        return True
    both = {"web", "mobile"}
    return (expected == "web_and_mobile" and actual in both) or (
        actual == "web_and_mobile" and expected in both
    )


def check_expected(idea: EvalIdea, state: Mapping[str, Any]) -> list[Check]:
    """Compare the pipeline's state with ``idea.expected`` (no model calls)."""
    exp = idea.expected
    checks: list[Check] = []
    traits = _payload(state, system_traits.SPEC.slug)

    def trait(name: str) -> Any:
        return None if traits is None else (traits.get(name) or {}).get("value")

    auth, realtime, interface = trait("auth"), trait("realtime"), trait("interface")
    checks.append(
        Check(
            check="has_auth",
            expected=exp.has_auth,
            actual=auth,
            passed=None if auth is None else (auth != "none") == exp.has_auth,
        )
    )
    checks.append(
        Check(
            check="has_realtime",
            expected=exp.has_realtime,
            actual=realtime,
            passed=None if realtime is None else bool(realtime) == exp.has_realtime,
        )
    )
    checks.append(
        Check(
            check="primary_interface",
            expected=exp.primary_interface,
            actual=interface,
            passed=None
            if interface is None
            else interface_matches(exp.primary_interface, str(interface)),
        )
    )
    scope = _payload(state, mvp_scope.SPEC.slug)
    appetite = None if scope is None else scope.get("appetite")
    checks.append(
        Check(
            check="complexity",
            expected=exp.complexity,
            actual=appetite,
            passed=None if appetite is None else appetite == exp.complexity,
        )
    )
    anchor = str(state.get("anchor_text") or "").lower()
    for inv in exp.invariants:
        hit = next((k for k in inv.any_of if k.lower() in anchor), None)
        checks.append(
            Check(
                check=f"anchor_invariant: {inv.name}",
                expected=list(inv.any_of),
                actual=hit,
                passed=None if not anchor else hit is not None,
            )
        )
    return checks


def checks_summary(checks: Sequence[Check]) -> dict[str, Any]:
    """Passed / failed / not-run counts and the pass rate over the checks that ran."""
    ran = [c for c in checks if c.passed is not None]
    passed = sum(1 for c in ran if c.passed)
    return {
        "passed": passed,
        "failed": len(ran) - passed,
        "not_run": len(checks) - len(ran),
        "pass_rate": round(passed / len(ran), 3) if ran else None,
    }


__all__ = [
    "DEFAULT_IDEAS_FILE",
    "REPO_ROOT",
    "Check",
    "EvalIdea",
    "Expected",
    "check_expected",
    "checks_summary",
    "interface_matches",
    "load_ideas",
]
