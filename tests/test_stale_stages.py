"""A reviewer's anchor change makes the stages that used the old anchor stale, until re-run."""

from __future__ import annotations

from pipeline_helpers import POWER8_IDEA, replay_settings

from haytham.app import make_service
from haytham.pipeline.gates import stale_stages

WHY_AFTER_ANCHOR = ["market-context", "risk-assessment", "validation-summary"]


def test_a_changed_value_makes_the_stages_that_used_the_old_anchor_stale(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)  # stops at Gate 1 with two ambiguous invariants
        state = svc.load_state(sid)
        assert stale_stages(state) == []
        # stage 1 ran before the anchor existed: it never records a digest
        assert state.stage_meta["idea-analysis"].anchor is None
        anchor = state.anchor
        medium = anchor.invariant("session_medium")
        second = medium.clarification_options[1]
        assert second != medium.value

        svc.clarify(sid, "session_medium", "2")
        assert stale_stages(svc.load_state(sid)) == WHY_AFTER_ANCHOR

        # clearing from the first stale stage re-runs them against the current anchor
        svc.clear_from(sid, "market-context")
        svc.run(sid)
        state = svc.load_state(sid)
        assert stale_stages(state) == []
        assert state.anchor.invariant("session_medium").value == second


def test_confidence_and_flags_alone_do_not_make_stages_stale(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)
        state = svc.load_state(sid)
        anchor = state.anchor
        same = anchor.model_copy(
            update={
                "invariants": [
                    i.model_copy(update={"confidence": 1.0, "user_clarified": True})
                    for i in anchor.invariants
                ]
            }
        )
        assert same.digest() == anchor.digest()
        edited = anchor.edit_value("group_structure", "6 per session")
        assert edited.digest() != anchor.digest()
        assert stale_stages(state.model_copy(update={"anchor": edited})) == WHY_AFTER_ANCHOR


def test_status_names_stale_stages_and_how_to_redo_them(tmp_path, capsys) -> None:
    from pipeline_helpers import replay_cli_args

    from haytham.cli import main

    args = replay_cli_args(tmp_path)
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    assert main(["run", "--idea-file", str(idea), "--session-id", "s", "--quiet", *args]) == 0
    assert main(["clarify", "s", "--invariant", "session_medium", "--choice", "2", *args]) == 0
    capsys.readouterr()
    assert main(["status", "s", *args]) == 0
    out = capsys.readouterr().out
    assert "stale (ran with an anchor value since changed): market-context" in out
    assert "haytham clear-from s market-context" in out
