"""The carrier audit (issue 26 point 4): the verifier reads what items claim, code counts.

An item that lists ``carries: [INV-n]`` *claims* to deliver that invariant; the deterministic
layer trusts the claim. The phase verifier is shown, per invariant, the table of items that claim
it with their own text (:func:`carrier_table`, built by code from the phase's stage outputs; a
part id such as ``INV-3a`` is shown as claimed), and answers one row per (invariant, item):
``honours`` / ``weakens`` / ``contradicts`` / ``unrelated`` with a quote from the item's text.

Code decides what the rows mean (:func:`apply_audit`):

* ``contradicts`` with a quote found in the item's text is a **blocking** violation on the item's
  stage; with a quote that is not there it is only a warning (a weak signal);
* ``weakens`` is a warning;
* an invariant whose every carrier was audited ``unrelated`` (each quote found) is a **dropped**
  invariant: blocking, on the stage of its first carrier;
* rows for pairs not in the table, or with a verdict outside the four, are ignored; a verifier
  that gives no audit adds nothing (never a rejection).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from haytham.schemas.anchor import ConceptAnchor, Invariant
from haytham.schemas.envelope import Traceable
from haytham.schemas.verification import AUDIT_VERDICTS, CarrierAudit, PhaseVerification
from haytham.schemas.verification import InvariantViolation as Violation
from haytham.stages import BY_SLUG, Phase, phase_stages
from haytham.state import SessionState

_PART = re.compile(r"^\s*(INV-\d+)([a-z])\s*$", re.IGNORECASE)
# Fields that are references, ids or code-set notes, not what the item says.
_NOT_TEXT = frozenset(
    {
        "id",
        "carries",
        "honours_exclusion",
        "validation_warnings",
        "serves_scope",
        "implements",
        "depends_on",
        "capabilities",
        "serves",
        "requires",
        "assumes",
        "component",
        "layer",
        "category",
        "deployment",
        "needs_network",
    }
)


@dataclass(frozen=True)
class Carrier:
    """One item that claims to carry an invariant: its key, stage, own text and claimed ids."""

    item: str
    stage: str
    text: str
    claims: tuple[str, ...]
    out: bool = False


@dataclass(frozen=True)
class CarrierTable:
    """Per invariant (in anchor order), the items of one phase that claim to carry it."""

    rows: tuple[tuple[Invariant, tuple[Carrier, ...]], ...]

    def carriers(self, invariant_id: str) -> tuple[Carrier, ...]:
        """The items that claim to carry the invariant ``invariant_id`` (none if it has no row)."""
        return next((cs for inv, cs in self.rows if inv.id == invariant_id), ())

    def __bool__(self) -> bool:
        return bool(self.rows)


def item_text(item: BaseModel) -> str:
    """What an item says: its text fields (and lists of text) in field order, ids and refs left
    out, joined by ``. ``."""
    parts: list[str] = []
    for name in type(item).model_fields:
        if name in _NOT_TEXT:
            continue
        value = getattr(item, name, None)
        values = value if isinstance(value, list) else [value]
        parts += [v.strip().rstrip(".") for v in values if isinstance(v, str) and v.strip()]
    return ". ".join(p for p in parts if p)


def _traceables(value: Any, field: str = "") -> Iterator[tuple[str, Traceable]]:
    if isinstance(value, list):
        for v in value:
            yield from _traceables(v, field)
    elif isinstance(value, Traceable):
        yield field, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _traceables(getattr(value, name), name)


def _base_id(ref: str) -> str:
    m = _PART.match(ref)
    return m.group(1).upper() if m else ref


def carrier_table(phase: Phase, state: SessionState) -> CarrierTable:
    """The items of ``phase``'s stage outputs that claim an anchor invariant, per invariant."""
    anchor = state.anchor
    if anchor is None:
        return CarrierTable(())
    found: dict[str, list[Carrier]] = {}
    for spec in phase_stages(phase):
        out = state.outputs.get(spec.slug)
        if out is None:
            continue
        outs = {key for key, is_out in BY_SLUG[spec.slug].items if is_out}
        unnamed = 0
        for field, item in _traceables(out.payload):
            claims = tuple(dict.fromkeys(str(c).strip() for c in item.carries if str(c).strip()))
            key = str(getattr(item, "id", "") or "").strip()
            if not key:
                unnamed += 1
                key = f"{spec.slug}#{unnamed}"
            if not claims:
                continue
            carrier = Carrier(key, spec.slug, item_text(item), claims, field in outs)
            for ref in claims:
                inv = anchor.resolve_ref(_base_id(ref))
                if inv is not None and carrier not in found.setdefault(inv.id, []):
                    found[inv.id].append(carrier)
    rows = tuple((inv, tuple(found[inv.id])) for inv in anchor.invariants if inv.id in found)
    return CarrierTable(rows)


def render_table(table: CarrierTable) -> str:
    """The table as the verifier reads it: each invariant, then its carriers with their text."""
    lines: list[str] = []
    for inv, carriers in table.rows:
        lines.append(f"### {inv.id} {inv.property} = {inv.value}")
        for c in carriers:
            claimed = ", ".join(r for r in c.claims if _base_id(r).upper() == inv.id)
            where = f"{c.stage}, OUT of scope" if c.out else c.stage
            lines.append(f"- {c.item} ({where}; claims {claimed}): {c.text}")
        lines.append("")
    return "\n".join(lines).rstrip()


# -- from the verifier's rows to findings -----------------------------------------------------
def _key(text: str) -> str:
    """An item key as compared: case, spaces and leading zeros ignored (``cap-f-1``)."""
    squashed = re.sub(r"\s+", "", str(text)).upper()
    return re.sub(r"\d+", lambda m: str(int(m.group())), squashed)


_QUOTE_MARKS = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def _norm(text: str) -> str:
    text = str(text).translate(_QUOTE_MARKS).replace("\u2026", "...")
    return " ".join(re.sub(r"[\u2013\u2014]", "-", text).lower().split())


def quote_found(quote: str, text: str) -> bool:
    """Whether ``quote`` occurs in ``text`` (case, spacing, typographic quotes and a leading or
    trailing ellipsis or quote mark ignored)."""
    q = _norm(quote).strip(" .\"'")
    return bool(q) and q in _norm(text)


def _resolve(anchor: ConceptAnchor, ref: str) -> Invariant | None:
    return anchor.resolve_ref(_base_id(ref))


def audit_rows(
    answered: Sequence[CarrierAudit], table: CarrierTable, anchor: ConceptAnchor | None
) -> list[CarrierAudit]:
    """The verifier's rows that name a (invariant, item) pair of ``table``, first answer per pair,
    with ``invariant``/``item``/``stage`` spelled as in the table and ``quote_found`` set."""
    if anchor is None or not table:
        return []
    by_pair: dict[tuple[str, str], CarrierAudit] = {}
    for row in answered:
        inv = _resolve(anchor, row.invariant)
        if inv is None or row.verdict not in AUDIT_VERDICTS:
            continue
        carrier = next((c for c in table.carriers(inv.id) if _key(c.item) == _key(row.item)), None)
        if carrier is None or (inv.id, carrier.item) in by_pair:
            continue
        said = row.invariant.strip().upper()
        claimed = next((c for c in carrier.claims if c.upper() == said and _PART.match(c)), inv.id)
        by_pair[(inv.id, carrier.item)] = row.model_copy(
            update={
                "invariant": claimed,
                "item": carrier.item,
                "stage": carrier.stage,
                "quote_found": quote_found(row.quote, carrier.text),
            }
        )
    return list(by_pair.values())


def _shown(row: CarrierAudit) -> str:
    if not row.quote.strip():
        return "(no quote given)"
    weak = "" if row.quote_found else " (these words are not in the item's text: a weak signal)"
    return f"\u201c{row.quote.strip()}\u201d{weak}"


def audit_violations(
    rows: Sequence[CarrierAudit], table: CarrierTable, anchor: ConceptAnchor
) -> list[Violation]:
    """Code's findings from the audit rows (see the module docstring for the rules)."""
    out: list[Violation] = []
    for row in rows:
        inv = _resolve(anchor, row.invariant)
        if inv is None or row.verdict not in ("contradicts", "weakens"):
            continue
        blocking = row.verdict == "contradicts" and row.quote_found
        verb = "contradicts" if row.verdict == "contradicts" else "weakens"
        out.append(
            Violation(
                invariant=inv.property,
                violation=(
                    f"carrier audit: {row.item} claims {row.invariant} ({inv.value}) but its "
                    f"text {verb} it: {_shown(row)}"
                ),
                severity="blocking" if blocking else "warning",
                stage=row.stage,
            )
        )
    answered = {(_resolve(anchor, r.invariant).id, r.item): r for r in rows}  # type: ignore[union-attr]
    for inv, carriers in table.rows:
        mine = [answered.get((inv.id, c.item)) for c in carriers]
        if not mine or any(r is None or r.verdict != "unrelated" for r in mine):
            continue
        evidence = "; ".join(f"{r.item}: {_shown(r)}" for r in mine if r is not None)
        quoted = all(r is not None and r.quote_found for r in mine)
        out.append(
            Violation(
                invariant=inv.property,
                violation=(
                    f"carrier audit: dropped invariant: {inv.id} ({inv.value}) is claimed by "
                    f"{len(mine)} item(s), and none of their texts is about it: {evidence}"
                ),
                severity="blocking" if quoted else "warning",
                stage=carriers[0].stage,
            )
        )
    return out


def apply_audit(
    raw: PhaseVerification,
    table: CarrierTable,
    anchor: ConceptAnchor | None,
    extra: Sequence[CarrierAudit] = (),
) -> PhaseVerification:
    """``raw`` with its audit rows kept to the table's pairs and code's findings added to
    ``invariants_violated``; ``extra`` rows (the swarm's InvariantChecker) come first."""
    rows = audit_rows([*extra, *raw.carrier_audit], table, anchor)
    if anchor is None or not rows:
        return raw.model_copy(update={"carrier_audit": rows})
    violations = list(raw.invariants_violated)
    for found in audit_violations(rows, table, anchor):
        same = next(
            (
                i
                for i, v in enumerate(violations)
                if (v.invariant, v.stage, v.severity) == (found.invariant, found.stage, "blocking")
            ),
            None,
        )
        if same is not None and found.severity == "blocking":
            v = violations[same]
            violations[same] = v.model_copy(
                update={"violation": f"{v.violation.rstrip()} — {found.violation}"}
            )
        else:
            violations.append(found)
    return raw.model_copy(update={"carrier_audit": rows, "invariants_violated": violations})


def rows_from_handoff(context: Mapping[str, Any] | None) -> list[CarrierAudit]:
    """The ``carrier_audit`` rows a swarm specialist put in its handoff context (malformed rows
    are skipped: a weak model's audit never rejects the verdict)."""
    raw = (context or {}).get("carrier_audit")
    rows: list[CarrierAudit] = []
    for entry in raw if isinstance(raw, list) else []:
        try:
            rows.append(CarrierAudit.model_validate(entry))
        except ValidationError:
            continue
    return rows


__all__ = [
    "Carrier",
    "CarrierTable",
    "apply_audit",
    "audit_rows",
    "audit_violations",
    "carrier_table",
    "item_text",
    "quote_found",
    "render_table",
    "rows_from_handoff",
]
