"""Who may see and decide what, enforced by the service: every public method of
:class:`haytham.runs.service.Haytham` for every role (a table: a new method without an entry fails),
refusals change nothing, the four-eyes rule, roles changed without a restart, and the record of
every decision (folder store; the shared store's is in test_team.py)."""

from __future__ import annotations

import inspect
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import POWER8_IDEA, replay_settings

from haytham.app import make_service
from haytham.changes.request import Proposal
from haytham.errors import AccessDenied, ConfigError
from haytham.people.access import (
    ANONYMOUS,
    SYSTEM,
    AccessPolicy,
    Action,
    cli_actor,
    local_actor,
    person,
)
from haytham.runs.service import Haytham

POLICY = """
admins = ["ann@example.org"]
founders = ["ada@example.org", "bob@example.org"]
reviewers = ["rex@example.org"]
four_eyes = true

[cohorts.spring]
founders = ["ada@example.org"]
reviewers = ["group:spring-reviewers"]
"""

ADA = person("Ada@Example.org", "Ada Founder")  # owns the session
ACTORS = {
    "owner": ADA,
    "other founder": person("bob@example.org", "Bob Founder"),
    "assigned reviewer": person("rita@example.org", "Rita Reviewer", ["spring-reviewers"]),
    "unassigned reviewer": person("rex@example.org", "Rex"),
    "admin": person("ann@example.org", "Ann Admin"),
    "nobody signed in": ANONYMOUS,
    "local user": local_actor(),
    "system": SYSTEM,
}
EVERYTHING = set(Action)
ALLOWED: dict[str, set[Action]] = {  # what each role may do to Ada's session
    "owner": {
        Action.CREATE,
        Action.READ,
        Action.RUN,
        Action.DECIDE,
        Action.EDIT_ANCHOR,
        Action.CHANGE,
        Action.DELETE,
    },  # not APPROVE: four eyes
    "other founder": {Action.CREATE},
    "assigned reviewer": {
        Action.READ,
        Action.RUN,
        Action.DECIDE,
        Action.APPROVE,
        Action.EDIT_ANCHOR,
        Action.CHANGE,
    },
    "unassigned reviewer": set(),
    "admin": EVERYTHING,
    "nobody signed in": set(),
    "local user": EVERYTHING,
    "system": EVERYTHING,
}

Call = Callable[[Haytham, str, Callable[[], str]], Any]
# method -> (what it does to the session, a call that is harmless when allowed); the third
# argument makes a scratch session of Ada's for the calls that would destroy the shared one
METHODS: dict[str, tuple[Action, Call]] = {
    "create_session": (Action.CREATE, lambda s, sid, new: s.create_session(POWER8_IDEA)),
    "import_session": (Action.CREATE, lambda s, sid, new: s.import_session(Path("/nonexistent"))),
    "list_sessions": (Action.READ, lambda s, sid, new: _listed(s, sid)),
    "session_rows": (Action.READ, lambda s, sid, new: _in_rows(s, sid)),
    "load_state": (Action.READ, lambda s, sid, new: s.load_state(sid)),
    "status": (Action.READ, lambda s, sid, new: s.status(sid)),
    "show": (Action.READ, lambda s, sid, new: s.show(sid, "anchor")),
    "export": (Action.READ, lambda s, sid, new: s.export(sid, "markdown")),
    "record_download": (Action.READ, lambda s, sid, new: s.record_download(sid, "pdf")),
    "check_session": (Action.READ, lambda s, sid, new: s.check_session(sid)),
    "updated_at": (Action.READ, lambda s, sid, new: s.updated_at(sid)),
    "live_call": (Action.READ, lambda s, sid, new: s.live_call(sid)),
    "blocking": (Action.READ, lambda s, sid, new: s.blocking(sid, 1)),
    "gate_history": (Action.READ, lambda s, sid, new: s.gate_history(sid, 1)),
    "decisions": (Action.READ, lambda s, sid, new: s.decisions(sid)),
    "run": (Action.RUN, lambda s, sid, new: s.run(sid)),
    "resume": (Action.RUN, lambda s, sid, new: s.resume(sid)),
    "classify": (Action.RUN, lambda s, sid, new: s.classify(sid)),
    "answer_intake": (Action.RUN, lambda s, sid, new: s.answer_intake(sid, [])),
    "decide": (Action.DECIDE, lambda s, sid, new: s.decide(sid, 3, {"kind": "rework"})),
    "recheck": (Action.DECIDE, lambda s, sid, new: s.recheck(sid, 1)),
    "rework": (Action.DECIDE, lambda s, sid, new: s.rework(sid, "mvp-scope", "x")),
    "approve": (Action.APPROVE, lambda s, sid, new: s.approve(sid, 3)),
    "reject": (Action.APPROVE, lambda s, sid, new: s.reject(sid, 3)),
    "override": (Action.APPROVE, lambda s, sid, new: s.override(sid, 3, "why")),
    "clarify": (Action.EDIT_ANCHOR, lambda s, sid, new: s.clarify(sid, "no-such", "1")),
    "propose_change": (Action.CHANGE, lambda s, sid, new: s.propose_change(sid, "mvp-scope", "")),
    "apply_change": (Action.CHANGE, lambda s, sid, new: s.apply_change(sid, _proposal())),
    "clear_from": (Action.CHANGE, lambda s, sid, new: s.clear_from(new(), "idea-analysis")),
    "fork": (Action.CHANGE, lambda s, sid, new: s.fork(sid, "idea-analysis")),
    "delete_session": (Action.DELETE, lambda s, sid, new: s.delete_session(new())),
    "migrate": (Action.ADMIN, lambda s, sid, new: s.migrate()),
}
# Methods that open no session's content: who calls (acting_as, allow, can, roles), the
# pipeline's drawing, and closing the service.
UNCHECKED = {"acting_as", "allow", "can", "roles", "graph_dot", "close"}


def _in_rows(svc: Haytham, sid: str) -> None:
    """``session_rows`` (the shared store's one-query list) hides it too: refused = no row."""
    rows = svc.session_rows()
    if rows is None:  # the sessions folder: the page lists through list_sessions
        return _listed(svc, sid)
    if sid not in {r["session"] for r in rows}:
        raise AccessDenied("The session has no row.")


def _listed(svc: Haytham, sid: str) -> None:
    """``list_sessions`` hides what the caller may not open: refused = not listed."""
    if sid not in svc.list_sessions():
        raise AccessDenied("The session is not listed.")


def _proposal() -> Proposal:
    return Proposal(
        stage="mvp-scope",
        request="x",
        why="",
        invariants_touched=[],
        breaks=[],
        revised={},
        changes=[],
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("access")
    (tmp / "access.toml").write_text(POLICY)
    base = make_service(replay_settings(tmp, access_file=tmp / "access.toml"))
    as_ada = base.acting_as(ADA)
    sid = as_ada.create_session(POWER8_IDEA)
    as_ada.run(sid)
    assert as_ada.status(sid)["gate"] == 1
    yield base, sid, tmp
    base.close()


def test_every_public_method_is_in_the_access_table() -> None:
    public = {
        name
        for name, _ in inspect.getmembers(Haytham)
        if not name.startswith("_") and callable(getattr(Haytham, name))
    }
    missing = public - set(METHODS) - UNCHECKED
    assert not missing, f"say who may call these (tests/test_access.py METHODS): {missing}"
    assert not (set(METHODS) | UNCHECKED) - public


@pytest.mark.parametrize("role", list(ACTORS))
@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_checks_the_callers_role(world, method, role) -> None:
    base, sid, tmp = world
    action, call = METHODS[method]
    svc = base.acting_as(ACTORS[role])

    def scratch() -> str:
        return base.acting_as(ADA).create_session(POWER8_IDEA)

    if action in ALLOWED[role]:
        try:
            call(svc, sid, scratch)
        except AccessDenied as exc:
            pytest.fail(f"{role} was refused {method}: {exc}")
        except Exception:  # the harmless call's own refusal (wrong gate, empty request…)
            pass
        return
    spare = scratch()  # made before the snapshot: the refused call must change nothing
    before = _snapshot(tmp / "sessions")
    with pytest.raises(AccessDenied) as err:
        call(svc, sid, lambda: spare)
    message = str(err.value)
    assert message.count(". ") == 0 and message.endswith("."), message  # one sentence
    assert _snapshot(tmp / "sessions") == before  # a refusal changes nothing, records nothing


def test_each_founder_lists_only_their_own_sessions(world) -> None:
    base, sid, _ = world
    bob = base.acting_as(ACTORS["other founder"])
    mine = bob.create_session(POWER8_IDEA)
    assert mine in bob.list_sessions() and sid not in bob.list_sessions()
    assert sid in base.acting_as(ADA).list_sessions()
    assert mine not in base.acting_as(ADA).create_session(POWER8_IDEA)
    rita = base.acting_as(ACTORS["assigned reviewer"])
    assert sid in rita.list_sessions() and mine not in rita.list_sessions()
    with pytest.raises(AccessDenied, match="not one of theirs"):
        bob.status(sid)


def test_four_eyes_refuses_the_founders_approval_and_the_reviewer_approves(tmp_path) -> None:
    (tmp_path / "access.toml").write_text(POLICY)
    base = make_service(replay_settings(tmp_path, access_file=tmp_path / "access.toml"))
    ada, rita = base.acting_as(ADA), base.acting_as(ACTORS["assigned reviewer"])
    sid = ada.create_session(POWER8_IDEA)
    ada.run(sid)
    before = _snapshot(tmp_path / "sessions" / sid)
    with pytest.raises(AccessDenied, match="four-eyes"):
        ada.approve(sid, 1, "mine", continue_run=False)
    assert _snapshot(tmp_path / "sessions" / sid) == before
    for item in rita.status(sid)["open_ambiguities"]:
        rita.clarify(sid, item["invariant"], "1")
    rita.approve(sid, 1, "looks right", continue_run=False)
    record = rita.decisions(sid)
    approval = [d for d in record if d.action == "approve"]
    assert len(approval) == 1
    assert approval[0].actor == "rita@example.org" and approval[0].gate == 1
    assert approval[0].round == 1 and approval[0].detail["note"] == "looks right"
    assert approval[0].sentence.startswith("Gate 1, round 1: approved by Rita Reviewer")
    assert [d.action for d in record][0] == "create" and record[0].actor == "ada@example.org"
    # exports and the PDF name the reviewer
    markdown = str(ada.export(sid, "markdown"))
    assert "## Decisions on record" in markdown
    assert "Gate 1, round 1: approved by Rita Reviewer <rita@example.org> on " in markdown
    pdf = tmp_path / "validation.pdf"
    pdf.write_bytes(bytes(ada.export(sid, "validation-pdf")))  # type: ignore[arg-type]
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    assert "approved by Rita Reviewer" in " ".join(text.split())
    # the founder reads their session's record; everyone's record is for admins only
    assert ada.decisions(sid)[: len(record)] == record
    with pytest.raises(AccessDenied, match="admins only"):
        ada.decisions()
    base.close()


def test_roles_change_without_a_restart(world) -> None:
    base, sid, tmp = world
    rex = base.acting_as(ACTORS["unassigned reviewer"])
    assert not rex.can(Action.READ, sid)
    path = tmp / "access.toml"
    try:
        path.write_text(
            POLICY + '\n[cohorts.more]\nfounders = ["ada@example.org"]\n'
            'reviewers = ["rex@example.org"]\n'
        )
        assert rex.can(Action.READ, sid)
        assert sid in rex.list_sessions()
    finally:
        path.write_text(POLICY)
    assert not rex.can(Action.READ, sid)


def test_a_broken_access_file_is_one_sentence(tmp_path) -> None:
    (tmp_path / "access.toml").write_text("four_eyes = maybe\n")
    base = make_service(replay_settings(tmp_path, access_file=tmp_path / "access.toml"))
    with pytest.raises(ConfigError, match="not valid TOML"):
        base.acting_as(ADA).create_session(POWER8_IDEA)
    (tmp_path / "access.toml").write_text("four_eyez = true\n")
    with pytest.raises(ConfigError, match="four_eyez"):
        base.acting_as(ADA).create_session(POWER8_IDEA)


def test_the_record_outlives_a_deleted_session_and_is_append_only(world) -> None:
    base, _, tmp = world
    admin = base.acting_as(ACTORS["admin"])
    ada = base.acting_as(ADA)
    gone = ada.create_session(POWER8_IDEA)
    ada.export(gone, "markdown")
    ada.delete_session(gone)
    actions = [d.action for d in admin.decisions(gone)]
    assert actions == ["create", "export", "delete"]
    assert {d.actor for d in admin.decisions(user="ADA@example.org")} == {"ada@example.org"}
    line = admin.decisions(gone)[-1]
    assert line.instance and line.at


def test_single_machine_needs_no_setup(tmp_path) -> None:
    svc = make_service(replay_settings(tmp_path))
    assert svc.actor == local_actor() and svc.roles() == ["admin", "founder", "reviewer"]
    sid = svc.create_session(POWER8_IDEA)
    assert svc.list_sessions() == [sid]
    assert svc.decisions(sid)[0].actor == local_actor().id


def test_the_cli_in_team_mode_needs_an_issued_token() -> None:
    import hashlib

    policy = AccessPolicy(tokens={hashlib.sha256(b"s3cret").hexdigest(): "ada@example.org"})
    assert cli_actor(policy, token="s3cret", user=None, team=True).id == "ada@example.org"
    with pytest.raises(AccessDenied, match="not a token the operator issued"):
        cli_actor(policy, token="guess", user=None, team=True)
    with pytest.raises(AccessDenied, match="HAYTHAM_TOKEN"):
        cli_actor(policy, token=None, user="ada@example.org", team=True)
    trusted = policy.model_copy(update={"trusted_network": True})
    assert cli_actor(trusted, token=None, user="bea", team=True).id == "bea"
    assert cli_actor(policy, token=None, user=None, team=False) == local_actor()


def test_the_record_travels_with_a_session_an_admin_moves_never_a_founders(tmp_path) -> None:
    source = make_service(replay_settings(tmp_path / "a"))
    sid = source.create_session(POWER8_IDEA, session_id="moved")
    bundle = tmp_path / "moved.json"
    bundle.write_text(str(source.export(sid, "session")))
    data = json.loads(bundle.read_text())
    assert [json.loads(line)["action"] for line in data["decisions"]] == ["create"]

    (tmp_path / "access.toml").write_text(POLICY)
    target = make_service(replay_settings(tmp_path / "b", access_file=tmp_path / "access.toml"))
    admin = target.acting_as(ACTORS["admin"])
    admin.import_session(bundle)
    assert [(d.action, d.actor) for d in admin.decisions(sid)] == [
        ("create", local_actor().id),
        ("import", "ann@example.org"),
    ]
    # a founder's bundle carries nothing into the record (it could say anything)
    forged = json.loads(data["decisions"][0]) | {
        "action": "approve",
        "actor": "rita@example.org",
        "session_id": "copied",
    }
    data["decisions"].append(json.dumps(forged))
    data["files"]["session.json"] = data["files"]["session.json"].replace("moved", "copied")
    bundle.write_text(json.dumps(data).replace('"moved"', '"copied"'))
    ada = target.acting_as(ADA)
    copied = ada.import_session(bundle)
    assert [(d.action, d.actor) for d in ada.decisions(copied)] == [("import", "ada@example.org")]


def test_the_operator_says_who_may_edit_the_anchor(world) -> None:
    base, sid, tmp = world
    ada, rita = base.acting_as(ADA), base.acting_as(ACTORS["assigned reviewer"])
    path = tmp / "access.toml"
    try:
        path.write_text('anchor_editors = ["reviewer", "admin"]\n' + POLICY)
        with pytest.raises(AccessDenied, match="may not edit the concept anchor here"):
            ada.clarify(sid, "no-such", "1")
        assert rita.can(Action.EDIT_ANCHOR, sid)
        path.write_text('anchor_editors = ["founder"]\n' + POLICY)
        assert ada.can(Action.EDIT_ANCHOR, sid) and not rita.can(Action.EDIT_ANCHOR, sid)
    finally:
        path.write_text(POLICY)
