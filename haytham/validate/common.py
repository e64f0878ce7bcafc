"""Plumbing shared by the validators: run context, finding helper, anchor-invariant kinds, texts."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from haytham.schemas.anchor import ConceptAnchor, Invariant
from haytham.schemas.envelope import StageOutput
from haytham.stages import STAGES
from haytham.validate.model import Finding, Snapshot, ValidatorSettings
from haytham.validate.negation import affirmed_matches
from haytham.validate.text import normalize, snake

if TYPE_CHECKING:
    from haytham.validate.embeddings import Embedder

STAGE_NUMBER: Mapping[str, int] = MappingProxyType({s.slug: s.number for s in STAGES})
WHAT_HOW_STORIES: tuple[str, ...] = tuple(s.slug for s in STAGES if s.number >= 5)
DESCRIPTIVE: tuple[str, ...] = ("mvp-scope", "capability-model", "story-generation")
"""Stages that describe the whole product at their level; each must evidence every invariant."""

COMPUTED_KEYS = (
    "order",
    "cycles",
    "coverage",
    "constraints",
    "risk_level",
    "verdict",
    "verdict_reason",
    "appetite",
)


@dataclass(frozen=True)
class Context:
    """One validation run: settings, the stage filter and the (optional) embedder."""

    snap: Snapshot
    settings: ValidatorSettings
    stages: frozenset[str] | None = None
    embedder: Embedder | None = None

    def wants(self, slug: str | None) -> bool:
        """Whether findings about ``slug`` are wanted in this run."""
        if self.stages is None:
            return True
        return slug is not None and slug in self.stages

    def output(self, slug: str) -> StageOutput | None:
        return self.snap.outputs.get(slug)

    def payload(self, slug: str) -> Any:
        out = self.snap.outputs.get(slug)
        return None if out is None else out.payload


def finding(
    validator: str,
    stage: str | None,
    message: str,
    *,
    invariant: str | None = None,
    evidence: str = "",
) -> Finding:
    """A warning-level finding; the runner raises it to blocking when the settings say so."""
    return Finding(
        validator=validator,
        severity="warning",
        stage=stage,
        invariant=invariant,
        message=message,
        evidence=evidence,
    )


# -- anchor invariants -------------------------------------------------------------------------
_ACCESS_NAMES = re.compile(
    r"access|community|audience|user_?base|patient_?base|membership|registration|who_can|"
    r"eligib|clientele|customer_?base|member"
)
_INTERACTION_NAMES = re.compile(r"interaction|synchron|realtime|real_time|participation_mode")
_MEDIUM_NAMES = re.compile(r"medium|channel|modality")

CLOSED_ACCESS = re.compile(
    r"\b(?:closed|inviteonly|invite|invitation|invited|existing|private|internal|members? only|"
    r"only (?:his|her|their|our|existing|current|registered|approved)|allow ?list|whitelist|"
    r"approved|vetted|employees only|staff only|pre-?registered)\b"
)
OPEN_ACCESS = re.compile(
    r"\b(?:open to (?:anyone|everyone|the public)|public|anyone|open registration)\b"
)
SYNC_VALUE = re.compile(
    r"\b(?:synchronous|realtime|live|simultaneous(?:ly)?|at the same time|together at once)\b"
)
ASYNC_VALUE = re.compile(r"\b(?:asynchronous|async|at their own pace|offline|batch)\b")
_REQUEST_RESPONSE = re.compile(
    r"\b(?:request|response|http|rest|rpc|api calls?|command|batch|job|cli|webhook)s?\b"
)
AV_VALUE = re.compile(r"\b(?:video|audio|voice|call|calls|webrtc|zoom)\b")


def resolved(inv: Invariant) -> bool:
    """Unresolved ambiguous invariants (confidence < 0.7, unclarified) drive no constraints."""
    return not inv.is_ambiguous or inv.user_clarified or inv.auto_resolved


def invariant_kind(inv: Invariant) -> str | None:
    """``access`` / ``interaction`` / ``medium`` for the ADR's required invariants, else None."""
    name = inv.property
    if _MEDIUM_NAMES.search(name):
        return "medium"
    if _INTERACTION_NAMES.search(name):
        return "interaction"
    if _ACCESS_NAMES.search(name):
        return "access"
    return None


def access_closed(inv: Invariant) -> bool | None:
    """True for a closed/invite-only access invariant, False for an open one, None if unclear."""
    value = normalize(inv.value)
    if re.search(r"\b(?:not|no) (?:open|public)\b", value) or CLOSED_ACCESS.search(value):
        return True
    if OPEN_ACCESS.search(value):
        return False
    return None


def interaction_sync(inv: Invariant) -> bool | None:
    """True for a synchronous/realtime interaction invariant, False for async, None if unclear."""
    value = normalize(inv.value)
    if re.search(r"\bno realtime\b|\brealtime (?:is )?not\b", value):
        return False
    if _REQUEST_RESPONSE.search(value) and not re.search(r"\b(?:realtime|live)\b", value):
        return None  # "synchronous request/response" is about an API call, not live users
    sync = bool(affirmed_matches(value, SYNC_VALUE))
    asyn = bool(affirmed_matches(value, ASYNC_VALUE))
    if sync != asyn:
        return sync
    return None


def value_terms(inv: Invariant) -> tuple[list[str], list[str]]:
    """(key terms the value affirms, key terms it rules out): "pickup only, no delivery" →
    (["pickup"], ["delivery"])."""
    from haytham.validate.lexicon import key_terms
    from haytham.validate.negation import affirmed_terms

    affirmed = affirmed_terms(inv.value)
    keys = key_terms(inv.value)
    return [t for t in keys if t in affirmed], [t for t in keys if t not in affirmed]


def anchor_invariants(anchor: ConceptAnchor | None) -> list[Invariant]:
    return list(anchor.invariants) if anchor is not None else []


def compliance_names(items: list[str]) -> set[str]:
    """Normalised invariant names from an ``anchor_compliance`` list (tolerates "name: note")."""
    out = set()
    for item in items:
        head = re.split(r"[:=(\u2014\u2013]| - ", item, maxsplit=1)[0]
        out.add(snake(head))
    return out


def overridden_names(out: StageOutput) -> set[str]:
    """Normalised names of the invariants a stage overrides."""
    return compliance_names([o.invariant for o in out.anchor_compliance.invariants_overridden])


def mentions_invariant(names: set[str], prop: str) -> bool:
    return any(
        n == prop or n.startswith(prop + "_") or prop.startswith(n + "_") and n for n in names
    )


def payload_items(payload: Any, key: str) -> Iterator[Any]:
    yield from getattr(payload, key, []) or []


NEGATIVE_SPLIT = re.compile(
    r",?\s+(?:not|rather than|instead of|as opposed to|vs\.?|versus)\s+", re.IGNORECASE
)


def feature_parts(feature: str) -> tuple[str, str]:
    """An identity feature "X, not Y" as (X, Y); Y is '' when the feature names no alternative."""
    parts = NEGATIVE_SPLIT.split(feature, maxsplit=1)
    positive = parts[0].strip() or feature
    return positive, (parts[1].strip() if len(parts) > 1 else "")
