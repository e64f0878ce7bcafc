"""A session's standing, for ``haytham status`` and the UI: read-only, tolerant of broken files."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from haytham.errors import HaythamError, InputError, SessionCorrupt
from haytham.pipeline.gates import open_blocking, phase_for_gate
from haytham.pipeline.projection import summarize
from haytham.pipeline.staleness import describe, stale_checks
from haytham.stages import STAGES, VERDICT_STAGE
from haytham.state import RunStatus, SessionState, payload_of
from haytham.storage.folder import SCHEMA_VERSION
from haytham.storage.protocol import Session
from haytham.verify.config import verifier_row


def broken_files(files: Session) -> list[str]:
    """Session files that cannot be read back: ``path: reason`` for each."""
    problems = []
    candidates = ["concept_anchor.json", "gates.json", "summary.json", "session.json"]
    candidates += ["state.json"]  # the snapshot that rebuilds a lost state.db
    candidates += [f"stages/{s.dir_name}/output.json" for s in STAGES]
    for folder in ("verifications", "reviews"):
        candidates += files.list(folder)
    for rel in candidates:
        where = files.where(rel)
        if not files.exists(rel):
            continue
        try:
            text = files.read_text(rel)  # never read through a link
        except InputError:
            problems.append(f"{where}: a symbolic link; not read")
            continue
        except SessionCorrupt as exc:
            problems.append(f"{where}: not readable ({exc})")
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not valid JSON ({exc})")
            continue
        versioned = rel.startswith("stages/") or rel == "session.json"
        if versioned and (
            not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION
        ):
            found = data.get("schema_version") if isinstance(data, dict) else None
            problems.append(f"{where}: schema_version {found!r}, expected {SCHEMA_VERSION}")
    return problems


def last_error(events: list[dict[str, Any]]) -> str | None:
    """The latest stage failure not followed by a completion of that stage."""
    error = None
    for ev in events:
        if ev.get("type") == "stage_failed":
            error = (ev.get("stage"), (ev.get("data") or {}).get("error", {}).get("message"))
        elif ev.get("type") == "stage_completed" and error and ev.get("stage") == error[0]:
            error = None
    return f"{error[0]}: {error[1]}" if error else None


def standing(status: RunStatus, busy: bool, error: str | None) -> str:
    """One word for where a session stands: running, waiting, failed, done or stopped."""
    if busy:
        return "running"
    if status.gate is not None or status is RunStatus.INTAKE:
        return "waiting"
    if status.finished:
        return status.value
    return "failed" if error else "stopped"


def intake_status(state: SessionState) -> dict[str, Any] | None:
    """What intake decided: its status, the questions (with the answers once given), or the
    explanation and example ideas for an unrelated text; ``None`` before it ran."""
    record = state.intake
    if record is None:
        return None
    answer = record.answer
    out: dict[str, Any] = {"status": record.status}
    if answer is not None:
        out |= {
            "classification": answer.classification,
            "reasoning": answer.reasoning,
            "questions": [
                {
                    "dimension": q.dimension,
                    "question": q.question,
                    "answer": record.answers[i] if i < len(record.answers) else None,
                }
                for i, q in enumerate(answer.questions)
            ],
            "explanation": answer.explanation,
            "examples": answer.examples,
        }
    return out


def session_status(files: Session, state: SessionState) -> dict[str, Any]:
    """The session's status as a JSON-ready dict: where it stands, its gate, stages, overrides,
    verifications and ambiguities (an unreadable event log is reported, not raised)."""
    try:
        events, unreadable = files.events(), []
    except SessionCorrupt as exc:  # the audit log is damaged; the state still answers
        events, unreadable = [], [str(exc)]
    gate = state.status.gate
    dumped = state.dump()
    verdict = payload_of(state.outputs, VERDICT_STAGE.slug)
    out: dict[str, Any] = {
        "session_id": files.session_id,
        "idea": state.idea[:200],
        "status": state.status.value,
        "gate": gate,
        "summary": summarize(events, state, busy=files.is_busy()),
        "gates": dumped["gates"],
        "verdict": verdict.verdict if verdict is not None else None,
        "last_error": last_error(events),
        "state": standing(state.status, files.is_busy(), last_error(events)),
        "broken_files": unreadable + broken_files(files),
        "open_ambiguities": [],
        "ungrounded": [],  # invariants whose source quote is not in the idea
        "stale": [],  # stages whose checks ran before the anchor or an input changed
        "stale_checks": [],
        "stale_rows": [],  # every stale check: its phase, stage (None: the verification), why
        "stale_summary": "",  # the same in one clause, for people
        "open_invariants": [],  # invariants the founder left open (no value)
        "blocking": [],
        "intake": intake_status(state),
        "overrides": [
            {"gate": n, **o.model_dump(mode="json")}
            for n, g in sorted(state.gates.items())
            for o in g.overrides
        ],
    }
    anchor = state.anchor
    if anchor is not None:
        out["open_ambiguities"] = [
            {
                "invariant": i.property,
                "confidence": i.confidence,
                "ambiguity": i.ambiguity,
                "options": i.choices(),
                "grounded": i.grounded,
            }
            for i in anchor.open_ambiguities()
        ]
        out["ungrounded"] = [i.property for i in anchor.invariants if i.grounded is False]
        out["open_invariants"] = [
            {
                "id": i.id,
                "invariant": i.property,
                "source": i.source,
                "decided_by": i.decided_by,
                "decided_at": i.decided_at,
            }
            for i in anchor.open_invariants()
        ]
    stale = stale_checks(state)
    out["stale"] = list(dict.fromkeys(c.stage for c in stale if c.stage))
    out["stale_checks"] = [
        {"gate": c.phase.gate, "phase": c.phase.value, "stage": c.stage, "changed": list(c.changed)}
        for c in stale
    ]
    out["stale_summary"] = describe(stale) if stale else ""
    # the verifier rows whose "passed" is from before a change (never shown as a green mark)
    out["stale_rows"] = [verifier_row(c.phase) for c in stale if c.stage is None]
    if gate is not None:
        with contextlib.suppress(HaythamError):
            out["blocking"] = [
                {"id": b.id, "stage": b.stage, "message": b.message}
                for b in open_blocking(state, phase_for_gate(gate))
            ]
    return out
