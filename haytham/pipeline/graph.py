"""The pipeline graph, in one screen.

    start → idea_analysis → anchor_extraction → market_context → risk_assessment
          → validation_summary → verify_why → gate_1
    gate_1 → mvp_scope → capability_model → verify_what → gate_2
    gate_2 → system_traits → build_buy_analysis → architecture_decisions → verify_how → gate_3
    gate_3 → story_generation → verify_stories → gate_4 → end

A verifier may route back to a stage of its phase (automatic rework); a gate routes on the
reviewer's command: forward on approve, back to a stage of its phase on rework, to ``end`` on
reject (or after Gate 4), and to itself for anything else (clarify, override, edit).
Gates are halt points: the decision comes in as the gate action's ``command`` input.
"""

from __future__ import annotations

import os

from burr.core import Application, ApplicationBuilder, default, when
from burr.core.application import PRIOR_STEP
from burr.core.persistence import PersisterHook, SQLitePersister
from burr.tracking.client import LocalTrackingClient

from haytham.pipeline import actions as a
from haytham.pipeline.gates import NEXT_ACTION
from haytham.pipeline.projection import Projector
from haytham.pipeline.runner import StageRunner
from haytham.stages import STAGES, Phase, phase_stages

PROJECT = "haytham"
PARTITION = "local"
GATES = [f"gate_{p.gate}" for p in Phase]


class _Tracker(LocalTrackingClient):
    """Burr 0.43 treats every load as a fork and builds a parent pointer with no app id,
    which its own tracker then rejects; drop that bogus pointer (real forks keep theirs).
    And create the tracking folders race-free (sessions start concurrently)."""

    def post_application_create(self, *, parent_pointer=None, **kwargs):  # noqa: ANN001, ANN003
        if parent_pointer is not None and parent_pointer.app_id is None:
            parent_pointer = None
        super().post_application_create(parent_pointer=parent_pointer, **kwargs)

    def _ensure_dir_structure(self, app_id: str) -> None:
        # Burr checks, then creates: two sessions starting at once raced on the project folder
        os.makedirs(os.path.join(self.storage_dir, app_id), exist_ok=True)


def verify_name(phase: Phase) -> str:
    return f"verify_{phase.value.lower()}"


def _phase_edges(phase: Phase) -> list[tuple]:
    stages = [s.action for s in phase_stages(phase)]
    verify, gate = verify_name(phase), f"gate_{phase.gate}"
    chain = [(x, y) for x, y in zip(stages, stages[1:] + [verify], strict=True)]
    if phase is Phase.WHY:  # the anchor is extracted once, right after idea analysis
        chain[0] = ("idea_analysis", "anchor_extraction", when(anchor=None))
        chain[1:1] = [("idea_analysis", "market_context"), ("anchor_extraction", "market_context")]
    back = [(verify, s, when(route=s)) for s in stages] + [(verify, gate, default)]
    targets = list(dict.fromkeys([*stages, NEXT_ACTION[phase], "end"]))
    return chain + back + [(gate, t, when(route=t)) for t in targets] + [(gate, gate, default)]


def build_application(
    runner: StageRunner,
    verifier: a.Verifier | None,
    *,
    app_id: str,
    tracking_dir: str | None = None,
    fork_from: str | None = None,
    fork_db: str | None = None,
    initial_state: dict | None = None,
) -> Application:
    persister = SQLitePersister(
        db_path=str(runner.files.state_db),
        table_name="burr_state",
        connect_kwargs={"check_same_thread": False},
    )
    persister.initialize()
    loader = persister
    if fork_from is not None:
        loader = SQLitePersister(
            db_path=fork_db, table_name="burr_state", connect_kwargs={"check_same_thread": False}
        )
    actions = {
        "start": a.start,
        "anchor_extraction": a.extract_anchor.bind(runner=runner),
        **{s.action: a.run_stage.bind(spec=s, runner=runner) for s in STAGES},
        **{verify_name(p): a.verify_phase.bind(phase=p, verifier=verifier) for p in Phase},
        **{f"gate_{p.gate}": a.gate.bind(phase=p) for p in Phase},
        "end": a.end,
    }
    projector = Projector(runner.files)
    edges = [("start", "idea_analysis")] + [e for p in Phase for e in _phase_edges(p)]
    builder = (
        ApplicationBuilder()
        .with_actions(**actions)
        .with_transitions(*edges)
        .initialize_from(
            loader,
            resume_at_next_action=True,
            default_state={**a.INITIAL_STATE, **(initial_state or {})},
            default_entrypoint="start",
            fork_from_app_id=fork_from,
            fork_from_partition_key=PARTITION if fork_from else None,
        )
        .with_identifiers(app_id=app_id, partition_key=PARTITION)
        # the state is saved first, then projected: a crash or a full disk in between leaves
        # files behind the state, never ahead of it, and the projection below catches them up
        .with_hooks(PersisterHook(persister), projector)
    )
    if tracking_dir:
        builder = builder.with_tracker(_Tracker(project=PROJECT, storage_dir=tracking_dir))
    app = builder.build()
    # files agree with the persisted state on open; a state loaded as completed also writes
    # ``state.json`` (a session older than the snapshot gets one before anything else happens)
    state = app.state.get_all()
    position = state.get(PRIOR_STEP) if app.sequence_id is not None else None
    projector.project(state, position=position, sequence_id=app.sequence_id)
    return app
