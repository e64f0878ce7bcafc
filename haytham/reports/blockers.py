"""What a blocking item or an override target is called where a person reads it (issue 28).

Gate records keep the ids code computes (``verdict:NO-GO``, ``check:capability-model:1``,
``violation:INV-2:mvp-scope``, ``finding:invariant_coverage:mvp-scope:1``,
``verification:inconclusive``); the exports, the PDFs and the CLI name them as the pages do.
"""

from __future__ import annotations

from haytham.stages import BY_SLUG


def stage_name(slug: str | None) -> str:
    """``mvp-scope`` -> ``Stage 5 · MVP scope`` (an unknown slug as it is)."""
    if not slug:
        return ""
    spec = BY_SLUG.get(slug)
    return f"Stage {spec.number} · {spec.title}" if spec is not None else slug


def target_name(target: str) -> str:
    """A blocking item's id in words: "the NO-GO verdict", "check 1 of Stage 6 · Capability
    model", "INV-2 not honoured in Stage 5 · MVP scope", "the inconclusive verification"."""
    parts = target.split(":")
    kind = parts[0]
    if kind == "verdict" and len(parts) == 2:
        return f"the {parts[1]} verdict"
    if target == "verification:inconclusive":
        return "the inconclusive verification"
    if kind == "violation" and len(parts) == 3:
        return f"{parts[1]} not honoured in {stage_name(parts[2])}"
    if kind == "check" and len(parts) == 3:
        return f"check {parts[2]} of {stage_name(parts[1])}"
    if kind == "finding" and len(parts) == 4:
        validator = parts[1].replace("_", " ")
        return f"{validator} finding {parts[3]} in {stage_name(parts[2])}"
    return target
