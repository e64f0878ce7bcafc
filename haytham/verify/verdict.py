"""What a phase verifier sees, and how its answer becomes the final ``PhaseVerification``.

A verifier's user message carries the idea, the anchor verbatim, the TL;DRs of earlier phases,
the phase's full stage outputs, the carrier table of :mod:`haytham.verify.audit` (per invariant,
the items that claim it, with their text) and (per phase) the references its rubric needs. Its system prompt
is the agent's role prompt plus the phase rubric (``prompts/verifiers/``).

The model fills the findings; code sets everything that decides: ``passed`` follows from the
blocking violations, stage names are mapped to the phase's slugs, and an answer that says
"not passed" without naming a blocking violation is ``inconclusive`` rather than silently passed.
"""

from __future__ import annotations

import json
from typing import Any

from haytham.agents.context import Context
from haytham.safety.redact import redact
from haytham.schemas.verification import PhaseVerification
from haytham.stages import BY_SLUG, STAGES, STORY_STAGE, Phase, phase_stages
from haytham.stages.base import PROMPTS_DIR
from haytham.stages.mvp_scope import DEFAULT_APPETITE
from haytham.stages.story_generation import APPETITE_BOUNDS
from haytham.state import SessionState
from haytham.verify.audit import carrier_table, render_table

VERIFIER_PROMPTS = PROMPTS_DIR / "verifiers"


def references(phase: Phase) -> tuple[str, ...]:
    """Earlier, approved stages whose payloads the phase's verifier reads (from the specs)."""
    return tuple(dict.fromkeys(r for s in phase_stages(phase) for r in s.verified_with))


def load_prompt(name: str) -> str:
    return (VERIFIER_PROMPTS / name).read_text(encoding="utf-8")


def rubric(phase: Phase) -> str:
    return load_prompt(f"rubric_{phase.value.lower()}.md")


def system_prompt(role_file: str, phase: Phase) -> str:
    """An agent's role prompt followed by the phase's focused rubric."""
    return load_prompt(role_file).rstrip() + "\n\n" + rubric(phase).rstrip() + "\n"


# -- mechanical checks come first ----------------------------------------------------------
def mechanical_failures(phase: Phase, state: SessionState) -> list[dict[str, str]]:
    """Failed stage checks and blocking validator findings of this phase's stages.

    Each item: ``{"kind": "check"|"finding", "stage", "key", "message"}`` where ``key`` is
    stable across reruns (used for stall detection).
    """
    failures: list[dict[str, str]] = []
    for spec in phase_stages(phase):
        meta = state.stage_meta.get(spec.slug)
        for problem in meta.problems if meta else []:
            failures.append(
                {
                    "kind": "check",
                    "stage": spec.slug,
                    "key": f"check:{spec.slug}",
                    "message": str(problem),
                }
            )
        for finding in state.validations.get(spec.slug, []):
            if finding.severity == "blocking":
                name = finding.validator
                failures.append(
                    {
                        "kind": "finding",
                        "stage": spec.slug,
                        "key": f"finding:{name}:{spec.slug}",
                        "message": f"{name}: {finding.message}",
                    }
                )
    return failures


# -- the verifier's user message -----------------------------------------------------------
def _dump(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)


def verification_context(phase: Phase, state: SessionState) -> Context:
    """A verifier's user message for ``phase`` (see the module docstring for its parts)."""
    outputs = {slug: out.model_dump(mode="json") for slug, out in state.outputs.items()}
    stages = phase_stages(phase)
    slugs = ", ".join(s.slug for s in stages)
    ctx = Context()
    ctx.add(
        "task",
        f"# Task: verify the {phase.value} phase (Gate {phase.gate}) against the concept anchor",
        f"Phase: {phase.value}. Its stages: {slugs}. Every `stage` you name must be one of "
        f"these slugs. The final verdict is a PhaseVerification with phase = "
        f'"{phase.value}".',
    )
    ctx.add_idea(state.idea)
    ctx.add(
        "anchor",
        "## Concept anchor (verbatim, immutable)",
        state.anchor_text or "(no anchor was extracted)",
    )
    first = stages[0].number
    earlier = [s for s in STAGES if s.number < first and s.slug in outputs]
    if earlier:
        ctx.add(
            "tldrs",
            "## Summaries of earlier stages (TL;DR)",
            "\n\n".join(f"### {s.slug}\n{outputs[s.slug].get('tldr', '')}" for s in earlier),
        )
    for spec in stages:
        out = outputs.get(spec.slug)
        if out is None:
            ctx.add(f"stage:{spec.slug}", f"## Output of {spec.slug}", "(missing: not run)")
            continue
        shown = {k: out.get(k) for k in ("tldr", "anchor_compliance", "claims", "payload")}
        body = f"```json\n{_dump(shown)}\n```\n\n#### Its prose (content)\n{out.get('content', '')}"
        ctx.add(
            f"stage:{spec.slug}",
            f"## Output of {spec.slug} (stage {spec.number}: {spec.title})",
            body,
        )
    table = carrier_table(phase, state)
    if table:
        ctx.add(
            "carriers",
            "## Carrier audit: the items that claim to carry each invariant (built by code)",
            "Each item below lists the invariant in its `carries`. Read its own text and answer "
            "one audit row per (invariant, item): `honours`, `weakens`, `contradicts` or "
            "`unrelated`, with a quote copied exactly from the item's text that shows it.\n\n"
            + render_table(table),
        )
    for slug in references(phase):
        if slug in outputs:
            ctx.add(
                f"ref:{slug}",
                f"## Reference: {slug} payload (an earlier, approved stage)",
                f"```json\n{_dump(outputs[slug].get('payload', {}))}\n```",
            )
    if phase is STORY_STAGE.phase:
        payload = (outputs.get(STORY_STAGE.slug) or {}).get("payload") or {}
        appetite = payload.get("appetite") or state.appetite or DEFAULT_APPETITE
        count = len(payload.get("stories") or [])
        bound = APPETITE_BOUNDS.get(appetite, APPETITE_BOUNDS[DEFAULT_APPETITE])
        ctx.add(
            "appetite",
            "## Appetite",
            f"Appetite: {appetite}; bound: at most {bound} stories; this phase has {count}.",
        )

    def lines(severity: str) -> list[str]:
        return [
            f"- [{f.validator}] {spec.slug}: {f.message}"
            for spec in stages
            for f in state.validations.get(spec.slug, [])
            if f.severity == severity
        ]

    if warnings := lines("warning"):
        ctx.add(
            "findings",
            "## Warnings from deterministic checks (for your judgement)",
            "\n".join(warnings),
        )
    if second := lines("info"):
        ctx.add(
            "second-opinions",
            "## Weak signals from prose checks (often false alarms; weigh them, do not "
            "repeat them)",
            "\n".join(second),
        )
    return ctx


# -- from the model's answer to the final verdict --------------------------------------------
def stage_slug(name: str, phase: Phase) -> str | None:
    """The phase stage a verifier meant by ``name`` (slug, title, ``stage 5``…), or ``None``."""
    text = " ".join(str(name).strip().lower().replace("_", " ").replace("-", " ").split())
    for spec in phase_stages(phase):
        if text in (
            spec.slug.replace("-", " "),
            spec.title.lower(),
            f"stage {spec.number}",
            str(spec.number),
            spec.action.replace("_", " "),
        ):
            return spec.slug
    for spec in phase_stages(phase):
        if spec.slug.replace("-", " ") in text:
            return spec.slug
    return None


def finalize(raw: PhaseVerification, phase: Phase, strategy: str) -> PhaseVerification:
    """Set the code-owned fields: stages mapped to slugs, ``passed`` and ``status`` derived."""
    first = phase_stages(phase)[0].slug
    notes: list[str] = []

    def fix(stage: str, what: str) -> str:
        slug = stage_slug(stage, phase)
        if slug is None:
            where = f"{stage!r}" + (" (another phase)" if str(stage) in BY_SLUG else "")
            notes.append(
                f"{what} named stage {where}; attributed to {first}, the first stage "
                f"of the {phase.value} phase."
            )
            return first
        return slug

    violations = [
        v.model_copy(update={"stage": fix(v.stage, f"Violation of {v.invariant}")})
        for v in raw.invariants_violated
    ]
    flags = [
        g.model_copy(update={"stage": fix(g.stage, f"Genericization of {g.original_feature!r}")})
        for g in raw.identity_genericized
    ]
    verification = raw.model_copy(
        update={
            "phase": phase.value,
            "invariants_violated": violations,
            "identity_genericized": flags,
            "warnings": [*raw.warnings, *notes],
            "strategy": strategy,
            "reason": "",
            "round": 0,
        }
    )
    blocking = verification.blocking()
    if blocking:
        return verification.model_copy(
            update={
                "passed": False,
                "status": "failed",
                "reason": f"{len(blocking)} blocking violation(s)",
            }
        )
    if not raw.passed:
        return verification.model_copy(
            update={
                "passed": False,
                "status": "inconclusive",
                "reason": "the verifier answered passed=false without naming a blocking violation",
            }
        )
    return verification.model_copy(update={"passed": True, "status": "passed"})


def inconclusive(phase: Phase, strategy: str, reason: str) -> PhaseVerification:
    """A verdict that blocks the gate until a reviewer overrides it: never a silent pass.

    ``reason`` often quotes a failed model call, so it is redacted (it lands in the Burr state,
    its tracking log and ``status``)."""
    return PhaseVerification(
        phase=phase.value,
        passed=False,
        status="inconclusive",
        strategy=strategy,
        reason=redact(reason),
    )


def off(phase: Phase, reason: str) -> PhaseVerification:
    """The verification of a phase whose verifier is off: passed, with ``reason`` saying why."""
    return PhaseVerification(
        phase=phase.value, passed=True, status="off", strategy="off", reason=reason
    )


__all__ = [
    "finalize",
    "inconclusive",
    "mechanical_failures",
    "off",
    "system_prompt",
    "verification_context",
    "stage_slug",
]
