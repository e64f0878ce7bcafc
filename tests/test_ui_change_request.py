"""Change requests on the gate pages (AppTest, replay): the form after Gate 1, the proposal as a
diff, Accept (applied, the later stages re-run in the background to the gate), Discard, and a
refusal when the change would break an invariant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_revise import REQUEST, _change_cassette, _drop_invite_only
from test_ui_support import app, at_gate, poll, service, session_at, shows, texts, use_replay


def _plain(text: str) -> str:
    """Markdown shown on the page with its escapes taken out."""
    return text.replace("\\", "")


def _propose(sid: str):  # noqa: ANN202 — an AppTest
    at = app(sid, "views/gate_2.py")
    assert not at.exception
    assert any(h.value == "Change requests" for h in at.subheader)
    at.selectbox(key="change_stage_2").set_value("mvp-scope")
    at.text_area(key="change_text_2").input(REQUEST)
    at.button(key="change_propose_2").click().run()
    assert not at.exception, at.exception
    return at


def test_a_change_request_is_shown_as_a_diff_then_applied_and_the_run_reaches_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = use_replay(tmp_path, monkeypatch, cassette=_change_cassette(tmp_path))
    sid = session_at(2)
    at = _propose(sid)
    assert shows(at, "**Proposed change to MVP scope**"), texts(at)
    assert shows(at, "1 added, 0 removed, 1 changed")
    assert shows(at, ":green[added] In scope · `SCOPE-99`")
    assert shows(at, "SMS reminder before each circle")
    # code finds no carrier changed; the agent said INV-1: shown as a disagreement
    assert shows(at, "**Invariants touched (code's check):** none")
    assert shows(at, "The agent's answer: touches `INV-1`")
    assert any("agent lists INV-1 as touched" in _plain(w.value) for w in at.warning), texts(at)
    assert not at.button(key="change_accept").disabled
    with service() as svc:
        assert svc.load_state(sid).revisions == []  # a proposal changes nothing

    at.button(key="change_accept").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, at_gate(2))
    with service() as svc:
        state = svc.load_state(sid)
    (revision,) = state.revisions
    assert revision.request == REQUEST and state.gates[2].status == "open"
    assert any("SMS reminder" in i.title for i in state.outputs["mvp-scope"].payload.in_scope)
    assert json.loads((sessions / sid / "revisions.json").read_text())[0]["stage"] == "mvp-scope"

    at.switch_page("views/gate_2.py")
    at.run()
    assert shows(at, "Change request applied to MVP scope")  # the gate's history
    assert any(e.label == "MVP scope: 1 change request applied" for e in at.expander)


def test_a_proposal_can_be_discarded_and_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_replay(tmp_path, monkeypatch, cassette=_change_cassette(tmp_path))
    sid = session_at(2)
    at = _propose(sid)
    at.button(key="change_discard").click().run()
    assert shows(at, "discarded; nothing was changed")
    assert not shows(at, "**Proposed change to MVP scope**")
    with service() as svc:
        assert svc.load_state(sid).revisions == []


def test_a_change_that_would_break_an_invariant_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_replay(tmp_path, monkeypatch, cassette=_change_cassette(tmp_path, breaks=["INV-1"]))
    sid = session_at(2)
    at = _propose(sid)
    assert any("would break `INV-1`" in e.value for e in at.error), texts(at)
    assert at.button(key="change_accept").disabled


def test_a_change_that_removes_the_last_carrier_is_refused_though_the_agent_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = _change_cassette(tmp_path, edit=_drop_invite_only, touched=[])
    use_replay(tmp_path, monkeypatch, cassette=cassette)
    sid = session_at(2)
    at = _propose(sid)
    assert shows(at, "**Invariants touched (code's check):** `INV-1`"), texts(at)
    assert any("loses its last item that delivers it" in _plain(t) for t in texts(at))
    assert any("INV-1 is broken by this change" in _plain(w.value) for w in at.warning)
    assert any("would break `INV-1`" in e.value for e in at.error), texts(at)
    assert at.button(key="change_accept").disabled


def test_no_change_requests_before_gate_1_is_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_replay(tmp_path, monkeypatch)
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    assert not at.exception
    assert not shows(at, "Change requests")
    assert not [s for s in at.selectbox if (s.key or "").startswith("change_stage")]
