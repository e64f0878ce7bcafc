"""Gate pages: outputs, verifier and validator panels, and the reviewer's actions."""

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
    session_at,
    shows,
    texts,
    use_replay,
)

from haytham.pipeline.state import SessionState
from haytham.schemas.anchor import ConceptAnchor


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
    assert [e.label for e in at.expander][1:] == ["5. MVP scope", "6. Capability model"]
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
    assert shows(at, "Changes logged at this gate")


def test_confirm_needs_every_choice(sessions: Path) -> None:
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    anchor = ConceptAnchor.model_validate_json((sessions / sid / "concept_anchor.json").read_text())
    first = anchor.invariant("interaction_model").clarification_options[0]  # the raw value
    at.radio(key=f"clarify_{sid}_interaction_model").set_value(first)
    at.button(key="confirm_clarifications").click().run()
    assert any("Pick an option for: session_medium" in e.value for e in at.error)
    assert gates_json(sessions, sid)["1"]["clarifications"] == []


def test_reject_ends_the_session(sessions: Path) -> None:
    sid = session_at(2)
    at = app(sid, "views/gate_2.py")
    at.checkbox(key="reject_sure_2").check().run()
    at.button(key="reject_2").click().run()
    assert not at.exception and at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, lambda a: shows(a, "was rejected"))
    assert gates_json(sessions, sid)["2"]["status"] == "rejected"


def test_no_go_blocks_approval_until_proceed_anyway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = use_replay(tmp_path, monkeypatch, cassette=no_go_cassette(tmp_path))
    sid = session_at(1)
    at = app(sid, "views/verdict.py")
    assert any("NO-GO" in m.value for m in at.markdown)
    assert len(at.dataframe[0].value) > 0  # the scorecard
    at.button(key="proceed_anyway").click().run()
    assert any("needs a reason" in e.value for e in at.error)

    at.switch_page("views/gate_1.py").run()
    assert at.button(key="approve_1").disabled
    assert shows(at, "1 blocking item(s) are open")

    at.switch_page("views/verdict.py").run()
    at.text_area(key="nogo_reason").input("The founder will fund the pilot himself.")
    at.button(key="proceed_anyway").click().run()
    assert not at.exception and shows(at, "You chose to proceed anyway")
    overrides = gates_json(sessions, sid)["1"]["overrides"]
    assert [(o["target"], o["reason"]) for o in overrides] == [
        ("verdict:NO-GO", "The founder will fund the pilot himself.")
    ]

    at.switch_page("views/gate_1.py").run()
    for radio in [r for r in at.radio if (r.key or "").startswith("clarify_")]:
        radio.set_value(option(radio, 0))
    at.button(key="confirm_clarifications").click().run()
    assert not at.button(key="approve_1").disabled, texts(at)


def _panel_page(state: object) -> None:  # a SessionState (AppTest runs this source alone)
    from components.findings import validator_findings, verification

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
    assert any(e.value.startswith("Blocking violation") for e in at.error)
    assert any(w.value.startswith("Warning") for w in at.warning)
    assert any("Genericized in mvp" in w.value for w in at.warning)
    assert any(r"\<b\>check" in w.value for w in at.warning)
    assert at.dataframe[0].value.iloc[0]["validator"] == "invariant_coverage"

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
    assert any("could not decide" in w.value for w in at.warning)
    assert any("No validator has run" in c.value for c in at.caption)


def test_blocking_items_disable_approve_until_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pipeline.jsonl has no verifier turns: the verification is inconclusive, which blocks."""
    sessions = use_replay(tmp_path, monkeypatch, cassette=PIPELINE_ONLY)
    sid = session_at(1)
    at = app(sid, "views/gate_1.py")
    assert any("could not decide" in w.value for w in at.warning)
    for radio in [r for r in at.radio if (r.key or "").startswith("clarify_")]:
        radio.set_value(option(radio, 0))
    at.button(key="confirm_clarifications").click().run()
    assert at.button(key="approve_1").disabled
    assert shows(at, "1 blocking item(s) are open")
    assert at.selectbox(key="override_target_1").options == [
        "all open items",
        "verification:inconclusive",
    ]

    at.button(key="override_1").click().run()  # no reason
    assert any("needs a reason" in e.value for e in at.error)
    at.selectbox(key="override_target_1").set_value("verification:inconclusive")
    at.text_area(key="override_reason_1").input("Reviewed the WHY outputs by hand.")
    at.button(key="override_1").click().run()
    assert not at.exception and shows(at, "Override recorded")
    overrides = gates_json(sessions, sid)["1"]["overrides"]
    assert [o["target"] for o in overrides] == ["verification:inconclusive"]
    assert not at.button(key="approve_1").disabled
    at.button(key="approve_1").click().run()
    assert at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, at_gate(2))


def test_findings_that_need_a_decision_come_first_second_opinions_are_folded() -> None:
    finding = {"stage": "mvp-scope", "evidence": "", "validator": "invariant_coverage"}
    state = {
        "validations": {
            "mvp-scope": [
                {
                    **finding,
                    "severity": "warning",
                    "item": "SCOPE-7",
                    "invariant": "INV-2 group_structure",
                    "message": "mvp-scope puts INV-2 group_structure out of scope",
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
    decide = at.dataframe[0].value
    assert decide.to_dict("records") == [
        {
            "stage": "mvp-scope",
            "severity": "warning",
            "item": "SCOPE-7",
            "invariant": "INV-2 group_structure",
            "why": "mvp-scope puts INV-2 group_structure out of scope",
            "evidence": "",
            "validator": "invariant_coverage",
        }
    ]
    (folded,) = at.expander
    assert folded.label == "Second opinions from prose checks (1)"
    assert folded.dataframe[0].value.iloc[0]["validator"] == "embedding_contradiction"

    only_info = {"validations": {"mvp-scope": [state["validations"]["mvp-scope"][1]]}}
    at = _panel(only_info)
    assert any("No findings that need a decision" in c.value for c in at.caption)
    assert len(at.dataframe) == 1  # the folded second opinion only
