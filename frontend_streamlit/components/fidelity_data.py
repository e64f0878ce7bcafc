"""Fidelity data: the divergence curve and the invariants × stages matrix, from session state."""

from __future__ import annotations

from typing import Any

import pandas as pd

from haytham.schemas.anchor import ConceptAnchor
from haytham.stages import STAGES

MARKS = {
    "honored": "✓ honored",
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


def compliance_matrix(state: dict[str, Any]) -> pd.DataFrame:
    """Invariants (rows) × stages that ran (columns): honored / overridden / violated / not
    mentioned, from each envelope's ``anchor_compliance``; verifier violations and validator
    findings naming an invariant mark it violated."""
    anchor = ConceptAnchor.model_validate(state["anchor"]) if state.get("anchor") else None
    invariants = anchor.invariants if anchor is not None else []
    names = [f"{i.id} {i.property}" for i in invariants]
    outputs = state.get("outputs") or {}
    violated: set[tuple[str, str]] = set()

    def key(ref: object) -> str | None:
        inv = anchor.resolve_ref(ref) if anchor is not None else None
        return f"{inv.id} {inv.property}" if inv is not None else None

    for verification in (state.get("verifications") or {}).values():
        for v in verification.get("invariants_violated", []):
            violated.add((key(v.get("invariant")), v.get("stage")))
    for slug, findings in (state.get("validations") or {}).items():
        for f in findings:
            if f.get("invariant") and f.get("severity") != "info":
                violated.add((key(f["invariant"]), f.get("stage") or slug))
    columns = {}
    for spec in STAGES:
        out = outputs.get(spec.slug)
        if out is None:
            continue
        report = out.get("anchor_compliance") or {}
        kept = {key(r) for r in report.get("invariants_preserved", [])}
        changed = {key(o.get("invariant")) for o in report.get("invariants_overridden", [])}
        cells = []
        for name in names:
            if (name, spec.slug) in violated:
                cells.append(MARKS["violated"])
            elif name in changed:
                cells.append(MARKS["overridden"])
            elif name in kept:
                cells.append(MARKS["honored"])
            else:
                cells.append(MARKS["not mentioned"])
        columns[f"{spec.number:02d} {spec.slug}"] = cells
    return pd.DataFrame(columns, index=pd.Index(names, name="invariant"))
