"""`haytham audit`: the decision record from the CLI (admins; on one machine the local user)."""

from __future__ import annotations

import json

from pipeline_helpers import POWER8_IDEA, replay_cli_args

from haytham.cli import main
from haytham.people.access import local_actor


def test_audit_lists_who_decided_what_and_filters_by_session_and_user(tmp_path, capsys) -> None:
    common = replay_cli_args(tmp_path)
    assert main(["run", "--idea", POWER8_IDEA, "--session-id", "one", *common]) == 0
    assert main(["run", "--idea", POWER8_IDEA, "--session-id", "two", *common]) == 0
    assert main(["reject", "two", "--gate", "1", "--note", "not for us", *common]) == 0
    capsys.readouterr()

    assert main(["audit", "--json", *common]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(d["session_id"], d["action"]) for d in lines] == [
        ("one", "create"),
        ("two", "create"),
        ("two", "reject"),
    ]
    me = local_actor().id
    assert {d["actor"] for d in lines} == {me}
    assert lines[-1]["gate"] == 1 and lines[-1]["round"] == 1
    assert lines[-1]["detail"]["note"] == "not for us"

    assert main(["audit", "--session", "two", *common]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "reject  two gate 1 round 1" in out[1] and "not for us" in out[1]
    assert main(["audit", "--user", "someone-else", *common]) == 0
    assert capsys.readouterr().out == ""
