"""Gate pages: the summary, the decision panel (every blocking item with its action and state),
the action bar, and the verifier's and validators' details."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from test_ui_support import (
    PIPELINE_ONLY,
    app,
    at_gate,
    gates_json,
    no_go_cassette,
    option,
    poll,
    service,
    session_at,
    shows,
    texts,
    use_replay,
)

from haytham.schemas.anchor import ConceptAnchor
from haytham.state import SessionState


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_replay(tmp_path, monkeypatch)


def test_gate_page_without_a_session_points_to_one(sessions: Path) -> None:
    at = app(page="views/gate_2.py")
    assert not at.exception
    assert shows(at, "No session selected")


def test_gate_2_shows_outputs_checks_and_actions(sessions: Path) -> None:
    sid = session_at(2)
    at = app(sid, "views/gate_2.py")
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert [x for x in labels if x[0].isdigit()] == ["5. MVP scope", "6. Capability model"]
    assert shows(at, "**The one thing:**") and shows(at, "Nothing blocks this gate")
    assert not shows(at, "Structured output")  # each output once
    assert any("Verifier: passed" in m.value for m in at.markdown)
    assert any("honored" in m.value and "group\\_structure" in m.value for m in at.markdown)
    assert not at.button(key="approve_2").disabled
    assert at.button(key="reject_2").disabled  # until "Yes, stop this session here"

    at.button(key="rework_2").click().run()  # no feedback
    assert any("needs feedback" in e.value for e in at.error)
    at.selectbox(key="rework_stage_2").set_value("capability-model")
    at.text_area(key="rework_feedback_2").input("Name the receiver role in every capability.")
    at.button(key="rework_2").click().run()
    assert not at.exception
    assert at.title[0].value == "Run"
    at.switch_page("views/run.py")  # AppTest re-runs the page it was switched to; follow the app
    poll(at, at_gate(2))
    record = gates_json(sessions, sid)["2"]
    assert record["round"] == 2 and record["feedback"].startswith("Name the receiver")


def test_earlier_gate_is_read_only(sessions: Path) -> None:
    sid = session_at(3)
    at = app(sid, "views/gate_1.py")
    assert shows(at, "Gate 1 is approved") and shows(at, "the session is waiting at Gate 3")
    assert not [b for b in at.button if (b.key or "").startswith("approve_")]
    assert not [r for r in at.radio if (r.key or "").startswith("clarify_")]


def test_gate_1_edit_and_remove_non_goal_are_logged(sessions: Path) -> None:
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    at.selectbox(key="edit_invariant").set_value("orchestrator_role")
    at.text_input(key="edit_value").input("the psychologist and a co-host run sessions")
    at.button(key="save_edit").click().run()
    assert not at.exception and shows(at, "Changed orchestrator_role")
    goal = at.selectbox(key="non_goal").options[0]
    at.selectbox(key="non_goal").set_value(goal)
    at.button(key="remove_non_goal").click().run()
    assert not at.exception
    edits = gates_json(sessions, sid)["1"]["edits"]
    assert [e["kind"] for e in edits] == ["edit_value", "remove_non_goal"]
    assert edits[1]["before"] == goal
    anchor = ConceptAnchor.model_validate_json((sessions / sid / "concept_anchor.json").read_text())
    assert anchor.invariant("orchestrator_role").value.endswith("co-host run sessions")
    assert goal not in anchor.intent.non_goals


def test_clarifications_resolve_one_by_one(sessions: Path) -> None:
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    assert shows(at, "**2 blocking items** to resolve")
    at.button(key="confirm_clarifications").click().run()  # nothing picked
    assert any("Pick an option for: interaction_model, session_medium" in e.value for e in at.error)
    assert gates_json(sessions, sid)["1"]["clarifications"] == []

    radio = at.radio(key=f"clarify_{sid}_interaction_model")
    radio.set_value(option(radio, 0))
    at.button(key="confirm_clarifications").click().run()
    assert not at.exception and shows(at, "Clarified 1 invariant(s)")
    assert [c["invariant"] for c in gates_json(sessions, sid)["1"]["clarifications"]] == [
        "interaction_model"
    ]
    assert shows(at, "**1 blocking item** to resolve") and shows(at, "· 1 resolved")
    assert any("clarified by you" in m.value for m in at.markdown)
    assert [r.key for r in at.radio if (r.key or "").startswith("clarify_")] == [
        f"clarify_{sid}_session_medium"
    ]
    assert at.button(key="approve_1").disabled


def test_reject_ends_the_session(sessions: Path) -> None:
    sid = session_at(2)
    at = app(sid, "views/gate_2.py")
    at.checkbox(key="reject_sure_2").check().run()
    at.button(key="reject_2").click().run()
    assert not at.exception and at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, lambda a: shows(a, "was rejected"))
    assert gates_json(sessions, sid)["2"]["status"] == "rejected"


def test_no_go_is_decided_in_the_gate_1_panel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = use_replay(tmp_path, monkeypatch, cassette=no_go_cassette(tmp_path))
    sid = session_at(1)
    at = app(sid, "views/verdict.py")
    assert any("NO-GO" in m.value for m in at.markdown)
    assert len(at.dataframe[0].value) > 0  # the scorecard
    assert not [b for b in at.button if b.key == "proceed_anyway"]  # decided at Gate 1
    assert shows(at, "The validation says NO-GO")

    at.switch_page("views/gate_1.py").run()
    assert at.button(key="approve_1").disabled
    assert shows(at, "**3 blocking items** to resolve")  # two ambiguities and the verdict
    assert shows(at, "**The validation says NO\\-GO**")
    at.button(key="proceed_anyway").click().run()
    assert any("needs a reason" in e.value for e in at.error)
    at.text_input(key="why_verdict-NO-GO").input("The founder will fund the pilot himself.")
    at.button(key="proceed_anyway").click().run()
    assert not at.exception
    overrides = gates_json(sessions, sid)["1"]["overrides"]
    assert [(o["target"], o["reason"]) for o in overrides] == [
        ("verdict:NO-GO", "The founder will fund the pilot himself.")
    ]
    assert any("overridden by you" in m.value for m in at.markdown)
    assert shows(at, "Your reason: “The founder will fund the pilot himself\\.”")
    assert not [b for b in at.button if b.key == "proceed_anyway"]
    assert at.button(key="approve_1").disabled  # the ambiguities are still open

    for radio in [r for r in at.radio if (r.key or "").startswith("clarify_")]:
        radio.set_value(option(radio, 0))
    at.button(key="confirm_clarifications").click().run()
    assert not at.button(key="approve_1").disabled, texts(at)
    assert shows(at, "Every blocking item is resolved or overridden")

    at.switch_page("views/verdict.py").run()
    assert shows(at, "You chose to proceed anyway")


def test_an_item_sends_its_own_stage_back_for_rework(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = use_replay(tmp_path, monkeypatch, cassette=no_go_cassette(tmp_path))
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    rework = at.button(key="rework_verdict-NO-GO")
    assert rework.label == "Rework Validation summary"
    rework.click().run()  # no feedback
    assert any("needs feedback" in e.value for e in at.error)
    at.text_input(key="why_verdict-NO-GO").input("Weigh the founder's own funding.")
    at.button(key="rework_verdict-NO-GO").click().run()
    assert not at.exception and at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, at_gate(1))
    record = gates_json(sessions, sid)["1"]
    assert record["round"] == 2 and record["feedback"] == "Weigh the founder's own funding."
    assert record["rework_stage"] == "validation-summary"


def _panel_page(state: object) -> None:  # a SessionState (AppTest runs this source alone)
    from frontend_streamlit.components.findings import validator_findings, verification
    from haytham.stages import Phase

    verification(Phase.WHAT, state)
    validator_findings(Phase.WHAT, state)


def _panel(state: dict) -> AppTest:
    """The two panels on ``state`` (the old dict shape, read as the typed state)."""
    typed = SessionState.of(state)
    return AppTest.from_function(_panel_page, args=(typed,), default_timeout=30).run()


def test_verification_panel_shows_every_kind_of_result() -> None:
    state = {
        "verifications": {
            "WHAT": {
                "phase": "WHAT",
                "passed": False,
                "status": "failed",
                "strategy": "single",
                "invariants_honored": ["access_model"],
                "invariants_violated": [
                    {
                        "invariant": "group_structure",
                        "violation": "groups of any size",
                        "stage": "mvp-scope",
                        "severity": "blocking",
                    },
                    {
                        "invariant": "session_medium",
                        "violation": "text only",
                        "stage": "capability-model",
                        "severity": "warning",
                    },
                ],
                "identity_preserved": [],
                "warnings": ["<b>check</b> the scheduling"],
                "identity_genericized": [
                    {
                        "original_feature": "wish exchange",
                        "generic_replacement": "group chat",
                        "stage": "mvp-scope",
                    }
                ],
            }
        },
        "validations": {
            "mvp-scope": [
                {
                    "validator": "invariant_coverage",
                    "severity": "blocking",
                    "stage": "mvp-scope",
                    "invariant": "group_structure",
                    "message": "no capability enforces 8",
                    "evidence": "",
                }
            ]
        },
    }
    at = _panel(state)
    assert not at.exception
    assert any("Verifier: failed" in m.value for m in at.markdown)
    assert any("honored" in m.value and "access" in m.value for m in at.markdown)
    blocking = [m.value for m in at.markdown if "blocking violation" in m.value]
    assert blocking and "listed in the decision panel" in blocking[0]
    assert "**group\\_structure** in MVP scope" in blocking[0]
    assert any(w.value.startswith("Warning") and "Capability model" in w.value for w in at.warning)
    assert any("Genericized in MVP scope" in w.value for w in at.warning)
    assert any(r"\<b\>check" in w.value for w in at.warning)
    assert any("1 blocking finding(s)" in m.value for m in at.markdown)
    assert not at.dataframe  # findings are listed in full, never cut off in a table cell

    inconclusive = {
        "verifications": {
            "WHAT": {
                "phase": "WHAT",
                "passed": False,
                "status": "inconclusive",
                "reason": "timeout",
            }
        }
    }
    at = _panel(inconclusive)
    assert any("could not decide: timeout" in c.value for c in at.caption)
    assert any("No validator has run" in c.value for c in at.caption)


def test_blocking_items_disable_approve_until_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pipeline.jsonl has no verifier turns: the verification is inconclusive, which blocks."""
    sessions = use_replay(tmp_path, monkeypatch, cassette=PIPELINE_ONLY)
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    assert shows(at, "**3 blocking items** to resolve")  # all three are listed
    assert shows(at, "**The verifier could not decide**")
    for radio in [r for r in at.radio if (r.key or "").startswith("clarify_")]:
        radio.set_value(option(radio, 0))
    at.button(key="confirm_clarifications").click().run()
    assert at.button(key="approve_1").disabled
    assert shows(at, "**1 blocking item** to resolve") and shows(at, "1 blocking item open")
    assert not any("verification:" in t or "verification\\:" in t for t in texts(at))

    at.button(key="override_verification-inconclusive").click().run()  # no reason
    assert any("needs a reason" in e.value for e in at.error)
    at.text_input(key="why_verification-inconclusive").input("Reviewed the WHY outputs by hand.")
    at.button(key="override_verification-inconclusive").click().run()
    assert not at.exception and shows(at, "Overridden: The verifier could not decide")
    overrides = gates_json(sessions, sid)["1"]["overrides"]
    assert [o["target"] for o in overrides] == ["verification:inconclusive"]
    assert any("overridden by you" in m.value for m in at.markdown)
    assert shows(at, "Your reason: “Reviewed the WHY outputs by hand\\.”")
    assert not at.button(key="approve_1").disabled
    at.button(key="approve_1").click().run()
    assert at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, at_gate(2))


def test_panel_items_have_plain_labels_actions_and_states(sessions: Path) -> None:
    """A violation, a failed check and a blocking finding: one list, plain labels; an override
    of this round makes its item "overridden" with the reason, an older round's does not."""
    from frontend_streamlit.components.context import Backend
    from frontend_streamlit.components.decision_panel import items, open_count
    from haytham.schemas.gate import GateRecord, Override
    from haytham.schemas.verification import InvariantViolation, PhaseVerification
    from haytham.validate.model import Finding

    state = SessionState(
        verifications={
            "WHAT": PhaseVerification(
                phase="WHAT",
                passed=False,
                status="failed",
                invariants_violated=[
                    InvariantViolation(
                        invariant="group_structure",
                        violation="groups of any size",
                        stage="mvp-scope",
                        severity="blocking",
                    ),
                    InvariantViolation(  # the same id again: one row, both messages
                        invariant="group_structure",
                        violation="no limit of eight",
                        stage="mvp-scope",
                        severity="blocking",
                    ),
                ],
            )
        },
        stage_meta={
            "capability-model": {"status": "needs_attention", "problems": ["CAP-F-009 serves none"]}
        },
        validations={
            "mvp-scope": [
                Finding(
                    validator="invariant_coverage",
                    severity="blocking",
                    stage="mvp-scope",
                    invariant="INV-2 group_structure",
                    message="no scope item carries INV-2 group_structure; it is cut short nowhere",
                )
            ]
        },
        gates={
            2: GateRecord(
                gate=2,
                phase="WHAT",
                status="open",
                round=2,
                overrides=[
                    Override(target="check:capability-model:1", reason="old", round=1, at="t"),
                    Override(
                        target="violation:group_structure:mvp-scope",
                        reason="Eight is enforced by the schema.",
                        round=2,
                        at="t",
                    ),
                ],
            )
        },
    )
    with service() as svc:
        found = items(Backend(svc, None), state, 2)  # type: ignore[arg-type]
    assert [(i.kind, i.title, i.state) for i in found] == [
        ("violation", "group_structure is not honored in MVP scope", "overridden"),
        ("finding", "Invariant coverage finding in MVP scope", "open"),
        ("check", "Capability model failed a check (needs attention)", "open"),
    ]
    assert found[0].note == "Eight is enforced by the schema."
    assert found[0].detail == "groups of any size\nno limit of eight"
    assert found[1].detail.endswith("it is cut short nowhere")  # whole, never cut off
    assert [i.stage for i in found] == ["mvp-scope", "mvp-scope", "capability-model"]
    assert open_count(found) == 2

    at = AppTest.from_function(_decision_page, args=(state,), default_timeout=30).run()
    assert not at.exception, at.exception
    assert shows(at, "**2 blocking items** to resolve · 1 overridden")
    assert any("overridden by you" in m.value for m in at.markdown)
    assert shows(at, "Your reason: “Eight is enforced by the schema\\.”")
    assert not [k for k in (b.key or "" for b in at.button) if "violation" in k]  # done
    assert at.button(key="rework_check-capability-model-1").label == "Rework Capability model"
    assert at.button(key="rework_finding-invariant_coverage-mvp-scope-1").label == (
        "Rework MVP scope"
    )
    assert at.button(key="override_check-capability-model-1").label == "Override"
    assert at.button(key="approve_2").disabled
    assert not any(":mvp" in t or "\\:mvp" in t for t in texts(at))  # no ids shown


def _decision_page(state: object) -> None:  # AppTest runs this source alone
    from frontend_streamlit.components.context import backend
    from frontend_streamlit.components.decision_panel import action_bar, open_count, render_panel
    from haytham.stages import Phase

    b = backend()
    found = render_panel(b, "p8", 2, state, True)
    action_bar(b, "p8", 2, Phase.WHAT, open_count(found))


def test_findings_warnings_are_listed_in_full_second_opinions_are_folded() -> None:
    finding = {"stage": "mvp-scope", "evidence": "", "validator": "invariant_coverage"}
    long = "mvp-scope puts INV-2 group_structure out of scope " + "and says so at length " * 20
    state = {
        "validations": {
            "mvp-scope": [
                {
                    **finding,
                    "severity": "warning",
                    "item": "SCOPE-7",
                    "invariant": "INV-2 group_structure",
                    "message": long,
                },
                {
                    **finding,
                    "severity": "info",
                    "validator": "embedding_contradiction",
                    "invariant": None,
                    "message": "may contradict about 'rota'",
                },
            ]
        }
    }
    at = _panel(state)
    assert not at.exception
    (warning,) = [w.value for w in at.warning if w.value.startswith("**Warning**")]
    assert "MVP scope · SCOPE\\-7 · INV\\-2 group\\_structure" in warning
    assert "and says so at length " * 19 in warning.replace("\\", "")
    assert "*(Invariant coverage)*" in warning
    (folded,) = at.expander
    assert folded.label == "Second opinions from prose checks (1)"
    assert "(Embedding contradiction)" in folded.markdown[0].value

    only_info = {"validations": {"mvp-scope": [state["validations"]["mvp-scope"][1]]}}
    at = _panel(only_info)
    assert any("No findings that need a decision" in c.value for c in at.caption)


def _edited_at_gate_1() -> str:
    """Gate 1 with its ambiguities clarified and then an anchor value edited (stale checks)."""
    sid = session_at(1)
    with service() as svc:
        for inv in svc.load_state(sid).anchor.open_ambiguities():
            svc.clarify(sid, inv.property, "1")
        svc.decide(
            sid,
            1,
            {"kind": "edit", "invariant": "orchestrator_role", "value": "a co-host runs them"},
            continue_run=False,
        )
    return sid


def test_stale_checks_show_no_green_and_approve_waits_for_a_re_check(sessions: Path) -> None:
    sid = _edited_at_gate_1()
    at = app(sid, "views/gate_1.py")
    assert not at.exception
    assert shows(at, "This gate's checks are stale")
    assert at.button(key="approve_1").disabled
    assert shows(at, "verifier result is stale (re-check it)")
    assert not shows(at, "verifier passed") and not shows(at, ":green[✔] honored")
    assert shows(at, "The checks are stale")  # the action bar says why Approve is off
    at.button(key="recheck_stale").click().run()
    assert not at.exception
    assert not shows(at, "This gate's checks are stale")
    assert shows(at, "verifier passed")
    assert not at.button(key="approve_1").disabled


def test_approve_anyway_needs_a_reason_and_is_logged(sessions: Path) -> None:
    sid = _edited_at_gate_1()
    at = app(sid, "views/gate_1.py")
    at.button(key="approve_stale_1").click().run()
    assert shows(at, "Say why: the override is logged.")
    assert gates_json(sessions, sid)["1"]["status"] == "open"
    at.text_input(key="approve_stale_reason_1").set_value("the edit only rewords it").run()
    at.button(key="approve_stale_1").click().run()
    assert not at.exception
    record = gates_json(sessions, sid)["1"]
    assert record["status"] == "approved"
    (override,) = [o for o in record["overrides"] if o["target"] == "stale-checks"]
    assert override["reason"] == "the edit only rewords it"
