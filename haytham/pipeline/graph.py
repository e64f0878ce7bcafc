"""The pipeline graph, in one screen.

    start → intake → idea_analysis → anchor_extraction → market_context → risk_assessment
          → validation_summary → verify_why → gate_1
    gate_1 → mvp_scope → capability_model → verify_what → gate_2
    gate_2 → system_traits → build_buy_analysis → architecture_decisions → verify_how → gate_3
    gate_3 → story_generation → verify_stories → gate_4 → end

A verifier may route back to a stage of its phase (automatic rework); a gate routes on the
reviewer's command: forward on approve, back to a stage of its phase on rework, to ``end`` on
reject (or after Gate 4), and to itself for anything else (clarify, override, edit).
Gates are halt points: the decision comes in as the gate action's ``command`` input. Intake
(:mod:`haytham.idea.intake`) is one too while it waits for the founder's ``answers``; it ends an
unrelated text at ``end``.
"""

from __future__ import annotations

import os
from typing import Any

from burr.common.types import ParentPointer
from burr.core import Application, ApplicationBuilder, default, when
from burr.core.action import Condition
from burr.core.application import PRIOR_STEP
from burr.core.graph import Graph, GraphBuilder
from burr.core.persistence import PersisterHook
from burr.integrations.pydantic import PydanticTypingSystem
from burr.tracking.client import LocalTrackingClient

from haytham.pipeline import actions as a
from haytham.pipeline.persist import TypedPersister
from haytham.pipeline.projection import Projector
from haytham.pipeline.runner import StageRunner
from haytham.stages import ANCHOR_ACTION, ANCHOR_SOURCE, STAGES, Phase, next_action, phase_stages
from haytham.state import SessionState, gate_action
from haytham.storage.protocol import PARTITION

PROJECT = "haytham"


class _Tracker(LocalTrackingClient):
    """Burr 0.43 treats every load as a fork and builds a parent pointer with no app id,
    which its own tracker then rejects; drop that bogus pointer (real forks keep theirs).
    And create the tracking folders race-free (sessions start concurrently)."""

    def post_application_create(
        self, *, parent_pointer: ParentPointer | None = None, **kwargs: Any
    ) -> None:
        if parent_pointer is not None and parent_pointer.app_id is None:
            parent_pointer = None
        super().post_application_create(parent_pointer=parent_pointer, **kwargs)

    def _ensure_dir_structure(self, app_id: str) -> None:
        # Burr checks, then creates: two sessions starting at once raced on the project folder
        os.makedirs(os.path.join(self.storage_dir, app_id), exist_ok=True)


def verify_name(phase: Phase) -> str:
    """The action of ``phase``'s verifier (``verify_why`` … ``verify_stories``)."""
    return f"verify_{phase.value.lower()}"


def gate_name(phase: Phase) -> str:
    """The action of ``phase``'s gate (see :func:`haytham.state.gate_action`)."""
    return gate_action(phase.gate)


Edge = tuple[str, str] | tuple[str, str, Condition]
"""A transition: from, to and, for a conditional one, its condition."""


def _phase_edges(phase: Phase) -> list[Edge]:
    stages = [s.action for s in phase_stages(phase)]
    verify, gate = verify_name(phase), gate_name(phase)
    chain: list[Edge] = [(x, y) for x, y in zip(stages, stages[1:] + [verify], strict=True)]
    if ANCHOR_SOURCE.phase is phase:  # the anchor is extracted once, right after its source
        i = stages.index(ANCHOR_SOURCE.action)
        after = chain[i][1]
        extracted: list[Edge] = [
            (ANCHOR_SOURCE.action, ANCHOR_ACTION, when(anchor=None)),
            (ANCHOR_SOURCE.action, after),
            (ANCHOR_ACTION, after),
        ]
        chain[i : i + 1] = extracted
    back: list[Edge] = [(verify, s, when(route=s)) for s in stages]
    back.append((verify, gate, default))
    targets = list(dict.fromkeys([*stages, next_action(phase), "end"]))
    routes: list[Edge] = [(gate, t, when(route=t)) for t in targets]
    routes.append((gate, gate, default))
    return chain + back + routes


def edges() -> list[Edge]:
    """Every transition of the graph (see the module docstring)."""
    intake: list[Edge] = [
        (a.INTAKE_ACTION, t, when(route=t)) for t in (STAGES[0].action, a.INTAKE_ACTION, "end")
    ]
    return [("start", a.INTAKE_ACTION), *intake] + [e for p in Phase for e in _phase_edges(p)]


def pipeline_graph(runner: StageRunner | None = None, verifier: a.Verifier | None = None) -> Graph:
    """The graph, its actions bound to a session's runner and verifier (with none, the same
    graph for drawing)."""
    bound = {"runner": runner}
    actions = {
        "start": a.start,
        a.INTAKE_ACTION: a.intake.bind(**bound),
        ANCHOR_ACTION: a.extract_anchor.bind(**bound),
        **{s.action: a.run_stage.bind(spec=s, **bound) for s in STAGES},
        **{verify_name(p): a.verify_phase.bind(phase=p, verifier=verifier) for p in Phase},
        **{gate_name(p): a.gate.bind(phase=p) for p in Phase},
        "end": a.end,
    }
    return GraphBuilder().with_actions(**actions).with_transitions(*edges()).build()


def graph_dot() -> str:
    """The graph as Graphviz DOT, drawn by Burr (docs/pipeline-graph.dot, the session page)."""
    drawn = pipeline_graph().visualize(include_conditions=True)
    return drawn.source if drawn is not None else ""


def build_application(
    runner: StageRunner,
    verifier: a.Verifier | None,
    *,
    app_id: str,
    tracking_dir: str | None = None,
    initial_state: SessionState | None = None,
) -> Application:
    """The session's Burr application: the graph bound to ``runner`` and ``verifier``, resumed
    from the persisted state (``initial_state`` for a new session), saving each step before
    projecting it to the session's files, tracked for the Burr UI under ``tracking_dir``."""
    saver = TypedPersister(runner.files)  # loads through the product's types, never Burr's serde
    projector = Projector(runner.files)
    builder = (
        ApplicationBuilder()
        .with_graph(pipeline_graph(runner, verifier))
        .with_typing(PydanticTypingSystem(SessionState))
        .initialize_from(
            saver,
            resume_at_next_action=True,
            default_state=(initial_state or SessionState()).fields(),
            default_entrypoint="start",
        )
        .with_identifiers(app_id=app_id, partition_key=PARTITION)
        # the state is saved first, then projected: a crash or a full disk in between leaves
        # files behind the state, never ahead of it, and the projection below catches them up
        .with_hooks(PersisterHook(saver), projector)
    )
    if tracking_dir:
        tracker = _Tracker(project=PROJECT, storage_dir=tracking_dir)
        # Burr's own LocalTrackingClient fails this check too: mypy does not accept it as the
        # SyncTrackingClient it subclasses (Burr 0.43's stubs), though Burr documents this use
        builder = builder.with_tracker(tracker)  # type: ignore[arg-type]
    app = builder.build()
    # files agree with the persisted state on open; a state loaded as completed also writes
    # ``state.json`` (a session older than the snapshot gets one before anything else happens)
    state = SessionState.of(app.state)
    position = app.state.get(PRIOR_STEP) if app.sequence_id is not None else None
    projector.project(state, position=position, sequence_id=app.sequence_id)
    return app


def main(argv: list[str] | None = None) -> int:
    """``python -m haytham.pipeline.graph STEM``: write STEM.dot and, where Graphviz's ``dot`` is
    installed, STEM.svg (``make graph`` draws docs/pipeline-graph)."""
    import subprocess
    import sys
    from pathlib import Path

    stem = Path((argv if argv is not None else sys.argv[1:])[0])
    dot = stem.with_suffix(".dot")
    dot.write_text(graph_dot(), encoding="utf-8")
    try:
        subprocess.run(["dot", "-Tsvg", str(dot), "-o", str(stem.with_suffix(".svg"))], check=True)
    except FileNotFoundError:
        print("Graphviz's dot is not installed: wrote only the DOT file", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
