"""The typed session state: exact action declarations, JSON persistence, old rows still load."""

from __future__ import annotations

import ast
import inspect
import json
import sqlite3

from pipeline_helpers import POWER8_IDEA, replay_settings

from haytham.app import make_service
from haytham.pipeline import actions
from haytham.pipeline.graph import pipeline_graph
from haytham.stages import Phase
from haytham.state import RunStatus, SessionState, gate_of


def _declared(fn) -> tuple[set[str], set[str]]:
    burr_action = fn.action_function
    return set(burr_action.reads), set(burr_action.writes)


def _touched(fn) -> tuple[set[str], set[str]]:
    """Fields the action's own code reads (``state.x``) and writes (``model_copy`` updates)."""
    tree = ast.parse(inspect.getsource(fn))
    reads = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "state"
        and n.attr in SessionState.model_fields
    }
    writes: set[str] = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "model_copy":
            for kw in call.keywords:
                if kw.arg == "update" and isinstance(kw.value, ast.Dict):
                    writes |= {k.value for k in kw.value.keys if isinstance(k, ast.Constant)}
    return reads, writes


def test_each_action_touches_only_the_fields_it_declares() -> None:
    fns = [actions.start, actions.intake, actions.run_stage, actions.extract_anchor]
    fns += [actions.verify_phase, actions.gate, actions.end]
    for fn in fns:
        declared_reads, declared_writes = _declared(fn)
        reads, writes = _touched(fn)
        assert reads <= declared_reads | declared_writes, (fn.__name__, reads - declared_reads)
        assert writes == declared_writes, (fn.__name__, writes ^ declared_writes)
        assert declared_reads | declared_writes <= set(SessionState.model_fields)


def test_burr_hands_each_action_only_its_declared_fields() -> None:
    """What makes the declarations exact at run time: an undeclared read fails."""
    full = SessionState(idea="an idea", status=RunStatus.GATE_1)
    for action in pipeline_graph().actions:
        given = action.schema.state_input_type()
        assert set(given.model_fields) == set(action.reads) | set(action.writes), action.name
    (end,) = [a for a in pipeline_graph().actions if a.name == "end"]
    model = end.schema.state_input_type()(status=full.status)
    assert not hasattr(model, "idea") and model.status is RunStatus.GATE_1


def test_state_db_holds_plain_json_and_loads_back_equal(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, auto_approve=True, until=2)
        state = svc.load_state(sid)
    db = tmp_path / "sessions" / sid / "state.db"
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute(
            "SELECT state FROM burr_state ORDER BY sequence_id DESC LIMIT 1"
        ).fetchone()
    assert "__pydantic_class" not in raw  # no class paths: renaming a class breaks nothing
    assert json.loads(raw)["gates"]["json"]["1"]["status"] == "approved"
    assert state.status is RunStatus.GATE_2 and state.status.gate == 2
    assert state.gates[1].status == "approved"
    assert state.outputs["mvp-scope"].payload.in_scope  # typed: each stage's own model
    snapshot = json.loads((tmp_path / "sessions" / sid / "state.json").read_text("utf-8"))
    assert SessionState.of(snapshot["state"]) == state


def test_a_session_saved_before_the_typed_state_loads_and_runs_on(tmp_path) -> None:
    """Rows written by earlier versions hold raw values (no serde wrapper), gate keys as
    strings and a ``constraints`` key nothing reads any more."""
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, auto_approve=True, until=2)
        old = svc.load_state(sid).dump() | {"constraints": {"access_model": "invite_only"}}
        db = tmp_path / "sessions" / sid / "state.db"
        with sqlite3.connect(db) as conn:
            conn.execute(
                "UPDATE burr_state SET state = ? WHERE sequence_id = "
                "(SELECT MAX(sequence_id) FROM burr_state)",
                (json.dumps(old),),
            )
        (tmp_path / "sessions" / sid / "state.json").unlink()  # as before the snapshot existed
        loaded = svc.load_state(sid)
        assert loaded.gates[1].status == "approved" and loaded.status is RunStatus.GATE_2
        outcome = svc.approve(sid, 2)
    assert outcome.gate == 3
    assert gate_of(svc.load_state(sid).gates, Phase.WHAT).status == "approved"
