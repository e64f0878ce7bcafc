"""Chaos propagation (ADR-022 7d): inject a known error at stage N, count later stages showing it.

An injection forks the idea's clean session just after stage N (``Haytham.fork``), rewrites stage
N's output in the fork's persisted state (as if the model had produced the error) and runs the
rest of the pipeline. Kinds:

- ``competitor``: a competitor from an unrelated domain (HerdBid, online cattle auctions);
- ``statistic``: a fabricated statistic presented as searched ("a 2024 survey of 12,400 people");
- ``invariant``: one invariant dropped from the concept anchor (``stage`` is the anchor).

The first two are found by their markers in later stages' outputs; a dropped invariant has
propagated to a later stage that evidenced it in the clean run but no longer does. Each kind runs
with the phase verifiers off and, when the service has them, on; the report gives both rates and
the reduction (the ADR's target is at least 50%).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from burr.core import State
from pydantic import BaseModel, ConfigDict

from haytham.errors import InputError
from haytham.schemas.anchor import REQUIRED_PROPERTIES, ConceptAnchor
from haytham.schemas.envelope import TLDR_MAX_WORDS
from haytham.stages import ANCHOR_AGENT, ANCHOR_SOURCE, BY_SLUG, STAGES, market_context
from haytham.state import SessionState
from haytham.storage.protocol import PARTITION, Session

ANCHOR = ANCHOR_AGENT
Kind = Literal["competitor", "statistic", "invariant"]
KINDS: tuple[Kind, ...] = ("competitor", "statistic", "invariant")
DEFAULT_STAGE: Mapping[str, str] = {
    "competitor": market_context.SPEC.slug,
    "statistic": market_context.SPEC.slug,
    "invariant": ANCHOR,
}
COMPETITOR = {
    "name": "HerdBid (online cattle auctions)",
    "jtbd_match": "direct",
    "pricing_evidence": "HerdBid charges sellers 3% per lot (estimate).",
}
COMPETITOR_SENTENCE = "The main direct competitor is HerdBid, an online cattle-auction marketplace."
STATISTIC = (
    "73% of the target users already pay for a comparable service, according to a 2024 "
    "survey of 12,400 people."
)
MARKERS: Mapping[str, tuple[str, ...]] = {
    "competitor": ("herdbid",),
    "statistic": ("12,400", "12400", "12 400"),
}
_STOP = frozenset(
    (
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "only",
        "each",
        "every",
        "must",
        "have",
        "their",
        "they",
        "his",
        "her",
        "its",
        "are",
        "was",
        "were",
        "been",
        "being",
        "per",
        "not",
        "any",
        "all",
        "one",
        "two",
        "than",
        "then",
    )
)


class ChaosSpec(BaseModel):
    """One injection: which kind of error, put into which stage (or the anchor)."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    stage: str

    @property
    def label(self) -> str:
        """``kind@stage``, as ``--chaos`` spells it."""
        return f"{self.kind}@{self.stage}"

    @classmethod
    def parse_list(cls, text: str | None) -> list[ChaosSpec]:
        """``all`` or a comma list of ``kind`` / ``kind@stage-slug``; empty or ``off`` = none."""
        if not text or text.strip().lower() in ("", "off", "none"):
            return []
        parts = list(KINDS) if text.strip().lower() == "all" else text.split(",")
        specs: list[ChaosSpec] = []
        for part in parts:
            kind, _, stage = part.strip().partition("@")
            if kind not in KINDS:
                raise InputError(
                    f"Unknown chaos kind {kind!r}; use {', '.join(KINDS)} or all "
                    "(optionally kind@stage-slug)."
                )
            stage = stage.strip() or DEFAULT_STAGE[kind]
            if kind == "invariant" and stage != ANCHOR:
                raise InputError(f"A dropped invariant is injected into the anchor ({ANCHOR}).")
            if kind != "invariant" and (stage not in BY_SLUG or stage == STAGES[-1].slug):
                raise InputError(
                    f"Chaos stage {stage!r} must be a stage before "
                    f"{STAGES[-1].slug}: {', '.join(s.slug for s in STAGES[:-1])}."
                )
            specs.append(cls(kind=kind, stage=stage))
        return specs

    def fork_stage(self) -> str:
        """The stage the fork resumes at: the one right after the injected stage."""
        number = ANCHOR_SOURCE.number if self.stage == ANCHOR else BY_SLUG[self.stage].number
        return STAGES[number].slug

    def later_stages(self) -> list[str]:
        """The stages after the injected one: where propagation is measured."""
        number = ANCHOR_SOURCE.number if self.stage == ANCHOR else BY_SLUG[self.stage].number
        return [s.slug for s in STAGES if s.number > number]


class ChaosResult(BaseModel):
    """What one injection run did: its fork session, what was injected, which later stages it
    reached (the rate), the verifiers' verdicts and what it cost."""

    kind: str
    stage: str
    verifiers: Literal["off", "on"]
    session_id: str = ""
    status: str = "not_run"
    error: str | None = None
    injected: str = ""
    measured: list[str] = []
    reached: list[str] = []
    rate: float | None = None
    verifications: dict[str, str] = {}
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


def _append(text: str, sentence: str, limit: int | None = None) -> str:
    joined = (text.rstrip() + " " + sentence).strip()
    return joined if limit is None or len(joined.split()) <= limit else text


def _inject_stage(output: dict[str, Any], spec: ChaosSpec) -> str:
    sentence = COMPETITOR_SENTENCE if spec.kind == "competitor" else STATISTIC
    output["tldr"] = _append(str(output.get("tldr", "")), sentence, TLDR_MAX_WORDS)
    heading = "Main competitor" if spec.kind == "competitor" else "Key statistic"
    content = str(output.get("content", "")).rstrip()
    output["content"] = f"{content}\n\n## {heading}\n\n{sentence}\n"
    payload = output.get("payload") or {}
    if spec.kind == "competitor" and isinstance(payload.get("competitors"), list):
        competitors = list(payload["competitors"])[:7]
        payload["competitors"] = [dict(COMPETITOR), *competitors]
    if spec.kind == "statistic":
        claim = {"statement": STATISTIC, "source": "web_search", "evidence": "2024 industry survey"}
        output["claims"] = [*list(output.get("claims") or []), claim]
    return sentence


def _drop_invariant(state: dict[str, Any], prefer: list[str]) -> str:
    anchor = ConceptAnchor.model_validate(state["anchor"])
    invariants = anchor.invariants
    optional = [i for i in invariants if i.property not in REQUIRED_PROPERTIES] or invariants
    lowered = [p.lower() for p in prefer]
    chosen = next(
        (i for i in optional if any(p in f"{i.property} {i.value}".lower() for p in lowered)),
        optional[0],
    )
    kept = [i for i in invariants if i.property != chosen.property]
    if not kept:
        raise InputError("The anchor has a single invariant; dropping it leaves no anchor.")
    new = anchor.model_copy(update={"invariants": kept})
    state["anchor"] = new.model_dump(mode="json")
    state["anchor_text"] = new.render()
    return f"{chosen.property} = {chosen.value}"


def inject(state: dict[str, Any], spec: ChaosSpec, prefer: list[str] | None = None) -> str:
    """Put the error into ``state`` (in place); returns what was injected, for the report."""
    if spec.kind == "invariant":
        if not state.get("anchor"):
            raise InputError("The clean run produced no anchor to drop an invariant from.")
        return _drop_invariant(state, prefer or [])
    outputs = dict(state.get("outputs") or {})
    if spec.stage not in outputs:
        raise InputError(f"The clean run has no {spec.stage} output to inject into.")
    target = json.loads(json.dumps(outputs[spec.stage]))
    injected = _inject_stage(target, spec)
    outputs[spec.stage] = target
    state["outputs"] = outputs
    return injected


def rewrite_state(files: Session, mutate: Callable[[dict[str, Any]], str]) -> str:
    """Apply ``mutate`` to the JSON of the session's latest persisted state and persist the
    result as the next step."""
    saver = files.persister()
    loaded = saver.load(PARTITION, files.session_id)
    if not loaded:
        raise InputError(f"Session {files.session_id} has no persisted state to inject into.")
    state = SessionState.of(loaded["state"]).dump()
    note = mutate(state)
    saver.save(
        PARTITION,
        files.session_id,
        int(loaded["sequence_id"]) + 1,
        loaded["position"],
        State(SessionState.of(state).fields()),
        "completed",
    )
    return note


def key_terms(text: str) -> list[str]:
    """The distinct words of ``text`` of four letters or more, stop words left out, in order."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return list(dict.fromkeys(w for w in words if len(w) >= 4 and w not in _STOP))


def evidences(output: Mapping[str, Any], terms: list[str]) -> bool:
    """A stage evidences an invariant when it mentions at least half of its key terms."""
    if not terms:
        return False
    text = json.dumps(output, ensure_ascii=False).lower()
    found = sum(1 for t in terms if t in text)
    return found >= max(1, (len(terms) + 1) // 2)


def measure(
    spec: ChaosSpec, injected: str, clean: Mapping[str, Any], chaotic: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """(measured stages, stages the error reached) among the stages after the injection."""
    outputs = chaotic.get("outputs") or {}
    measured = [s for s in spec.later_stages() if s in outputs]
    if spec.kind == "invariant":
        terms = key_terms(injected.split("=", 1)[-1])
        before = clean.get("outputs") or {}
        measured = [s for s in measured if s in before and evidences(before[s], terms)]
        return measured, [s for s in measured if not evidences(outputs[s], terms)]
    markers = MARKERS[spec.kind]
    reached = [
        s
        for s in measured
        if any(m in json.dumps(outputs[s], ensure_ascii=False).lower() for m in markers)
    ]
    return measured, reached


def summarize(results: list[ChaosResult]) -> list[dict[str, Any]]:
    """Per injection: propagation rate with verifiers off and on, and the reduction."""
    rows: list[dict[str, Any]] = []
    for label in dict.fromkeys(f"{r.kind}@{r.stage}" for r in results):
        off = next(
            (r for r in results if f"{r.kind}@{r.stage}" == label and r.verifiers == "off"), None
        )
        on = next(
            (r for r in results if f"{r.kind}@{r.stage}" == label and r.verifiers == "on"), None
        )
        reduction = None
        if off and on and off.rate is not None and on.rate is not None and off.rate > 0:
            reduction = round(1 - on.rate / off.rate, 3)
        rows.append(
            {
                "injection": label,
                "rate_off": off.rate if off else None,
                "rate_on": on.rate if on else None,
                "reduction": reduction,
                "target_met": None if reduction is None else reduction >= 0.5,
            }
        )
    return rows


__all__ = [
    "ChaosResult",
    "ChaosSpec",
    "KINDS",
    "inject",
    "key_terms",
    "measure",
    "rewrite_state",
    "summarize",
]
