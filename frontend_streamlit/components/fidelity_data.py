"""Fidelity data: the divergence curve and the invariants × stages matrix, from session state."""

from __future__ import annotations

from typing import Any

import pandas as pd

from haytham.pipeline.staleness import stale_checks
from haytham.stages import STAGES, phase_stages
from haytham.state import SessionState

MARKS = {
    "honored": "✓ honored",
    "stale": "⚠ said honored before a change (re-check)",
    "overridden": "↻ overridden",
    "violated": "✗ violated",
    "not mentioned": "· not mentioned",
}


def divergence_frame(divergence: dict[str, Any]) -> pd.DataFrame:
    """Similarity to the idea and to the anchor per stage, in pipeline order."""
    rows = []
    for spec in STAGES:
        value = divergence.get(spec.slug)
        if value is None:
            continue
        row = value if isinstance(value, dict) else {"anchor": value}
        rows.append(
            {
                "stage": f"{spec.number:02d} {spec.slug}",
                **{k: float(v) for k, v in row.items() if isinstance(v, int | float)},
            }
        )
    return pd.DataFrame(rows).set_index("stage") if rows else pd.DataFrame()


def compliance_matrix(state: SessionState) -> pd.DataFrame:
    """Invariants (rows) × stages that ran (columns): honored / overridden / violated / not
    mentioned, from each envelope's ``anchor_compliance``; verifier violations and validator
    findings naming an invariant mark it violated. A stage whose checks are stale (its
    validators, or its phase's verification) never shows a green "honored"."""
    stale = {c.stage or "" for c in stale_checks(state)} | {
        s.slug for c in stale_checks(state) if c.stage is None for s in phase_stages(c.phase)
    }
    anchor = state.anchor
    invariants = anchor.invariants if anchor is not None else []
    names = [f"{i.id} {i.property}" for i in invariants]
    violated: set[tuple[str | None, str]] = set()  # None: a reference the anchor lacks

    def key(ref: object) -> str | None:
        inv = anchor.resolve_ref(ref) if anchor is not None else None
        return f"{inv.id} {inv.property}" if inv is not None else None

    for verification in state.verifications.values():
        for v in verification.invariants_violated:
            violated.add((key(v.invariant), v.stage))
    for slug, findings in state.validations.items():
        for f in findings:
            if f.invariant and f.needs_decision:
                violated.add((key(f.invariant), f.stage or slug))
    columns = {}
    for spec in STAGES:
        out = state.outputs.get(spec.slug)
        if out is None:
            continue
        report = out.anchor_compliance
        kept = {key(r) for r in report.invariants_preserved}
        changed = {key(o.invariant) for o in report.invariants_overridden}
        cells = []
        for name in names:
            if (name, spec.slug) in violated:
                cells.append(MARKS["violated"])
            elif name in changed:
                cells.append(MARKS["overridden"])
            elif name in kept:
                cells.append(MARKS["stale" if spec.slug in stale else "honored"])
            else:
                cells.append(MARKS["not mentioned"])
        columns[f"{spec.number:02d} {spec.slug}"] = cells
    return pd.DataFrame(columns, index=pd.Index(names, name="invariant"))
