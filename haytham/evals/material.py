"""What a judge reads: the founder's idea, the anchor and the output under review, as text.

Built only from the pipeline state, deterministically (no timestamps, no session ids), so a
judge's request is the same on every run of the same outputs — which is what makes the cache
and recorded cassettes match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haytham.agents.context import IDEA_HEADING, quote_idea
from haytham.evals.rubrics import Rubric
from haytham.stages import (
    BY_SLUG,
    STAGES,
    architecture_decisions,
    build_buy_analysis,
    mvp_scope,
    story_generation,
    system_traits,
)
from haytham.stages.render import render_stage


def missing_reason(rubric: Rubric, state: Mapping[str, Any]) -> str | None:
    """Why there is nothing to judge for ``rubric`` (then the score is 1 by rule), else None."""
    outputs = state.get("outputs") or {}
    if rubric.target == "anchor":
        return None if state.get("anchor") else "the pipeline produced no concept anchor"
    if rubric.target == "pipeline":
        if story_generation.SPEC.slug not in outputs:
            done = [s.slug for s in STAGES if s.slug in outputs]
            last = done[-1] if done else "none"
            return f"the pipeline did not reach its final stage (last completed stage: {last})"
        return None
    stage = rubric.stage or ""
    return None if stage in outputs else f"stage {stage} produced no output"


def _verification_lines(state: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for phase, v in (state.get("verifications") or {}).items():
        status = v.get("status", "passed" if v.get("passed") else "failed")
        lines.append(f"- {phase}: {status}" + (f" ({v['reason']})" if v.get("reason") else ""))
        for item in v.get("invariants_violated") or []:
            lines.append(
                f"  - violation [{item.get('severity')}] {item.get('invariant')} in "
                f"{item.get('stage')}: {item.get('violation')}"
            )
        for item in v.get("identity_genericized") or []:
            lines.append(
                f"  - genericized in {item.get('stage')}: {item.get('original_feature')}"
                f" -> {item.get('generic_replacement')}"
            )
        lines += [f"  - warning: {w}" for w in v.get("warnings") or []]
    for gate, record in sorted((state.get("gates") or {}).items()):
        for o in record.get("overrides") or []:
            lines.append(f"- Gate {gate} override of {o.get('target')}: {o.get('reason')}")
    return lines


def _compliance(output: Mapping[str, Any]) -> list[str]:
    comp = output.get("anchor_compliance") or {}
    lines = [
        f"  - override {o.get('invariant')}: {o.get('reason')}"
        for o in comp.get("invariants_overridden") or []
    ]
    lines += [
        f"  - genericized (self-reported): {g}"
        for g in comp.get("identity_features_genericized") or []
    ]
    return lines


def _final_product(outputs: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    scope = (outputs.get(mvp_scope.SPEC.slug) or {}).get("payload") or {}
    if scope:
        lines.append(f"The one thing: {scope.get('the_one_thing', '')}")
        ins = scope.get("in_scope", [])
        lines.append("IN scope: " + "; ".join(i.get("title", "") for i in ins))
        lines.append(
            "OUT of scope: " + "; ".join(i.get("title", "") for i in scope.get("out_of_scope", []))
        )
    traits = (outputs.get(system_traits.SPEC.slug) or {}).get("payload") or {}
    if traits:
        pairs = [
            f"{k}={(v or {}).get('value')}"
            for k, v in traits.items()
            if isinstance(v, Mapping) and "value" in v
        ]
        lines.append("System traits: " + ", ".join(pairs))
    bb = (outputs.get(build_buy_analysis.SPEC.slug) or {}).get("payload") or {}
    if bb:
        items = [
            " ".join(
                x for x in (i.get("recommendation"), i.get("service"), "for", i.get("need")) if x
            )
            for i in bb.get("items", [])
        ]
        lines.append("Build/buy: " + "; ".join(items))
    arch = (outputs.get(architecture_decisions.SPEC.slug) or {}).get("payload") or {}
    if arch:
        decisions = [
            f"{d.get('id')} {d.get('title')}: {d.get('decision')}"
            for d in arch.get("decisions", [])
        ]
        lines.append("Decisions: " + "; ".join(decisions))
    stories = (outputs.get(story_generation.SPEC.slug) or {}).get("payload") or {}
    if stories:
        lines.append("Stories:")
        for s in stories.get("stories", []):
            crit = "; ".join(s.get("acceptance_criteria") or [])
            accept = f" (accept: {crit})" if crit else ""
            lines.append(f"- {s.get('id')} {s.get('title')}{accept}")
    return lines


def judge_material(rubric: Rubric, state: Mapping[str, Any]) -> str:
    """The material of the judge's prompt for ``rubric`` (call :func:`missing_reason` first)."""
    outputs = state.get("outputs") or {}
    parts = [IDEA_HEADING, quote_idea(str(state.get("idea", "")).strip()), ""]
    if rubric.target == "anchor":
        parts += ["## Concept anchor under review", str(state.get("anchor_text", "")), ""]
        return "\n".join(parts).rstrip() + "\n"
    if state.get("anchor_text"):
        parts += [
            "## Concept anchor (what every stage had to honour)",
            str(state["anchor_text"]),
            "",
        ]
    if rubric.target == "pipeline":
        parts.append("## Stage summaries (TL;DR and self-reported anchor compliance)")
        for spec in STAGES:
            out = outputs.get(spec.slug)
            if out is None:
                parts.append(f"### {spec.number}. {spec.slug}: (no output)")
                continue
            parts.append(f"### {spec.number}. {spec.slug}\n{out.get('tldr', '')}")
            parts += _compliance(out)
        parts += ["", "## Final product (from stages 5-10)", *_final_product(outputs), ""]
        verifications = _verification_lines(state)
        parts += [
            "## Verifier results and gate overrides",
            *(verifications or ["- no verifier ran"]),
            "",
        ]
        return "\n".join(parts).rstrip() + "\n"
    spec = BY_SLUG[rubric.stage or ""]
    parts += [
        f"## Output under review: stage {spec.number}, {spec.slug}",
        render_stage(spec, outputs[spec.slug]),
    ]
    return "\n".join(parts).rstrip() + "\n"


__all__ = ["judge_material", "missing_reason"]
