"""Writes the session folder from the Burr state after every step.

Burr's SQLite state is the source of truth; the files under ``sessions/<id>/`` are a projection
of it, rewritten atomically when their content changes (and stale stage folders removed), so
after a crash re-projecting the last persisted state makes files and state agree again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from burr.core import Action, State
from burr.lifecycle import PostRunStepHook

from haytham.schemas.events import INPUTS_PREFIX
from haytham.stages import ANCHOR_AGENT, ANCHOR_SOURCE, STAGES, Phase
from haytham.stages.render import render_stage
from haytham.state import SessionState, StageMeta
from haytham.storage.folder import SCHEMA_VERSION
from haytham.storage.protocol import Session

SUMMARY_STAGES = tuple(
    row for s in STAGES for row in ((s.slug, ANCHOR_AGENT) if s is ANCHOR_SOURCE else (s.slug,))
)
"""The rows of ``summary.json``: the stages, with the anchor extraction after its source."""


SNAPSHOT = "state.json"


def snapshot(
    state: SessionState, *, position: str, sequence_id: int | None = None
) -> dict[str, Any]:
    """The whole persisted state and where the run stands, as ``state.json`` holds it."""
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": state.session_id,
        "position": position,
        "sequence_id": sequence_id,
        "state": state.dump(),
    }


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _row(status: str) -> dict[str, Any]:
    return {
        "status": status,
        "wall_ms": 0.0,
        "model_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "retries": 0,
        "runs": 0,
    }


def _clear_rows(stages: dict[str, dict[str, Any]], slug: str) -> None:
    """``clear-from slug``: the summary of ``slug`` and everything after it reads as if those
    stages never ran (the rows of their verifiers and input checks go too), mirroring
    :func:`haytham.runs.session_state.cleared_state`."""
    cleared = set(SUMMARY_STAGES[SUMMARY_STAGES.index(slug) :])
    spec = next((s for s in STAGES if s.slug == slug), STAGES[0])
    phases = {p for p in Phase if p.gate >= spec.phase.gate}
    gone = {f"verify-{p.value.lower()}" for p in phases}
    gone |= {f"{INPUTS_PREFIX}{s}" for s in cleared}
    for name in list(stages):
        if name in cleared:
            stages[name] = _row("pending")
        elif name in gone:
            del stages[name]


def summarize(
    events: list[dict[str, Any]], state: SessionState, *, busy: bool = False
) -> dict[str, Any]:
    """Per stage: status, wall time, model calls, tokens; plus totals (from events.jsonl).

    A stage that started but has no output is ``running`` while a process holds the session
    (``busy``) and ``interrupted`` otherwise (a crash or kill; ``resume`` re-runs it)."""
    stages: dict[str, dict[str, Any]] = {s: _row("pending") for s in SUMMARY_STAGES}
    for ev in events:
        row = stages.setdefault(ev.get("stage") or "(session)", _row(""))
        data = ev.get("data") or {}
        kind = ev.get("type")
        if kind == "model_call":
            row["model_calls"] += 1
            row["input_tokens"] += int(data.get("input_tokens") or 0)
            row["output_tokens"] += int(data.get("output_tokens") or 0)
            row["retries"] += int(data.get("retries") or 0)
        elif kind == "stage_started":
            row["runs"] += 1
            row["status"] = "running"
        elif kind == "stage_completed":
            row["wall_ms"] += float(data.get("wall_ms") or 0)
            row["status"] = data.get("status", "completed")
            if "quality_flags" in data:
                row["quality_flags"] = data["quality_flags"]
        elif kind == "stage_failed":
            row["status"] = "failed"
            row["error"] = (data.get("error") or {}).get("message", "")
        elif kind == "cleared_from" and ev.get("stage") in SUMMARY_STAGES:
            _clear_rows(stages, ev["stage"])
    # Completion is what the state holds, not what an event says: a process killed after a
    # stage's ``stage_completed`` event but before its state was saved re-runs that stage.
    # A fork's stages before its fork point are saved but never ran here: ``inherited``.
    parent = next(
        (str((ev.get("data") or {}).get("source")) for ev in events if ev.get("type") == "forked"),
        None,
    )
    for slug, row in stages.items():
        if slug not in SUMMARY_STAGES:
            continue
        saved = state.anchor is not None if slug == ANCHOR_AGENT else slug in state.outputs
        if not saved and row["status"] in ("", "running", "completed", "needs_attention"):
            row["status"] = ("running" if busy else "interrupted") if row["runs"] else "pending"
        elif saved and parent and not row["runs"] and row["status"] == "pending":
            row["status"], row["inherited_from"] = "inherited", parent
    rows = [r for r in stages.values()]
    totals = {
        k: sum(r[k] for r in rows)
        for k in ("wall_ms", "model_calls", "input_tokens", "output_tokens", "retries")
    }
    return {
        "status": state.status.value,
        "stages": stages,
        "totals": totals,
        "divergence": state.divergence,
        "forked_from": parent,
    }


class Projector(PostRunStepHook):
    """Burr hook: after each successful step, mirror the state into the session folder."""

    def __init__(self, files: Session) -> None:
        self.files = files
        self._written: dict[str, str] = {}

    def _put(self, rel: str, text: str) -> None:
        digest = hashlib.sha256(text.encode()).hexdigest()
        if self._written.get(rel) == digest:
            return
        self.files.write_text(rel, text)
        self._written[rel] = digest

    def project(
        self,
        state: SessionState,
        *,
        position: str | None = None,
        sequence_id: int | None = None,
    ) -> None:
        """Write the session files from ``state``; with ``position`` (the step just saved) also
        ``state.json``, the snapshot that rebuilds ``state.db`` if it is lost or copied away."""
        self._put("idea.md", state.idea.rstrip() + "\n")
        if state.anchor is not None:
            self._put("concept_anchor.json", _dump(state.anchor.model_dump(mode="json")))
        else:
            self.files.remove("concept_anchor.json")
            self._written.pop("concept_anchor.json", None)
        for spec in STAGES:
            rel = f"stages/{spec.dir_name}"
            out = state.outputs.get(spec.slug)
            if out is None:
                if self.files.exists(rel):
                    self.files.remove(rel)
                self._written.pop(f"{rel}/output.json", None)
                self._written.pop(f"{rel}/output.md", None)
                continue
            raw = out.model_dump(mode="json")
            meta = state.stage_meta.get(spec.slug) or StageMeta()
            record = {
                "stage": spec.slug,
                "schema_version": SCHEMA_VERSION,
                **raw,
                "status": meta.status,
                "problems": meta.problems,
                "validations": [
                    f.model_dump(mode="json") for f in state.validations.get(spec.slug, [])
                ],
            }
            self._put(f"{rel}/output.json", _dump(record))
            self._put(f"{rel}/output.md", render_stage(spec, raw))
        dumped = state.dump()
        self._put("gates.json", _dump(dumped["gates"]))
        if state.revisions:
            self._put("revisions.json", _dump(dumped["revisions"]))
        verifications = {
            f"verifications/{phase.lower()}.json": _dump(v)
            for phase, v in dumped["verifications"].items()
        }
        reviews = {
            f"reviews/{n:02d}-{review['stage']}.json": _dump(review)
            for n, review in enumerate(dumped["review_log"], 1)
        }
        for folder, files in (("verifications", verifications), ("reviews", reviews)):
            self._prune(folder, files)  # a cleared phase or stage leaves nothing behind
            for rel, text in files.items():
                self._put(rel, text)
        self._put("summary.json", _dump(summarize(self.files.events(), state)))
        if position is not None:
            self._put(
                SNAPSHOT,
                _dump(snapshot(state, position=position, sequence_id=sequence_id)),
            )

    def _prune(self, folder: str, keep: Mapping[str, str]) -> None:
        for rel in self.files.list(folder):
            if rel not in keep:
                self.files.remove(rel)
                self._written.pop(rel, None)

    def post_run_step(
        self,
        *,
        state: State,
        action: Action,
        exception: Exception | None,
        sequence_id: int | None = None,
        **future_kwargs: Any,
    ) -> None:
        """Burr's hook after each step: project the new state, unless the step raised."""
        if exception is None:
            self.project(SessionState.of(state), position=action.name, sequence_id=sequence_id)
