"""`haytham status` says where a session stands: waiting, failed (with the cause), done."""

from __future__ import annotations

import json

from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main


def _status(tmp_path, cassette, sid, capsys, *extra):
    capsys.readouterr()
    code = main(["status", sid, *replay_cli_args(tmp_path, cassette), *extra])
    return code, capsys.readouterr().out


def test_a_failed_stage_shows_as_failed_with_its_cause(tmp_path, capsys):
    cassette = cassette_with(tmp_path, drop_agents={"mvp-scope"}, passing_verifiers=True)
    sid = "failing"
    code = main(
        ["run", "--idea", POWER8_IDEA, "--session-id", sid, "--auto-approve"]
        + ["--provider", "replay", "--cassette", str(cassette)]
        + ["--sessions-dir", str(tmp_path / "sessions")]
    )
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    code, out = _status(tmp_path, cassette, sid, capsys)
    assert code == 0 and f"session {sid}: failed" in out
    assert "last error: mvp-scope" in out
    _, raw = _status(tmp_path, cassette, sid, capsys, "--json")
    assert json.loads(raw)["state"] == "failed"
    # (that library logs print no traceback is tested in test_cli_progress.py)


def test_waiting_and_done_sessions(tmp_path, capsys):
    cassette = POWER8 / "full"
    with make_service(replay_settings(tmp_path, cassette=cassette)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, until=1)
    _, out = _status(tmp_path, cassette, sid, capsys)
    assert f"session {sid}: waiting at Gate 1" in out
    with make_service(replay_settings(tmp_path, cassette=cassette)) as svc:
        svc.run(sid, auto_approve=True)
    _, raw = _status(tmp_path, cassette, sid, capsys, "--json")
    assert json.loads(raw)["state"] == "done"
