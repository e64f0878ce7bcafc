"""Provenance on every anchor value: the founder's words, a reviewer's clarification (who, when),
--auto-approve (unconfirmed, never 1.0) or open (no value) — in the state, the rendered anchor
the stages receive, the UI, the exports and the PDF; and option pins survive a choice."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from pipeline_helpers import POWER8_IDEA, replay_settings

from haytham.app import make_service
from haytham.pipeline.staleness import stale_checks
from haytham.reports.export import export
from haytham.schemas.anchor import LEAVE_OPEN, ConceptAnchor, Invariant

poppler = pytest.mark.skipif(
    not shutil.which("pdftotext"), reason="Debian's poppler-utils (pdftotext) is not installed"
)


def _left_open(svc) -> str:
    """A session at Gate 1 whose session medium the reviewer left open (the other one: 1)."""
    sid = svc.create_session(POWER8_IDEA)
    svc.run(sid)
    svc.clarify(sid, "session_medium", LEAVE_OPEN)
    svc.clarify(sid, "interaction_model", "1")
    return sid


def test_leave_it_open_gives_an_open_invariant_with_no_value(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = _left_open(svc)
        state = svc.load_state(sid)
        status = svc.status(sid)
    inv = state.anchor.invariant("session_medium")
    assert (inv.provenance, inv.value, inv.trait, inv.is_ambiguous) == ("open", "", None, False)
    assert inv.confidence < 1.0 and inv.decided_by and inv.decided_at
    assert LEAVE_OPEN not in state.anchor_text
    assert "session_medium = OPEN: the founder has not decided this" in state.anchor_text
    assert [o["invariant"] for o in status["open_invariants"]] == ["session_medium"]
    (choice,) = [c for c in state.gates[1].clarifications if c.invariant == "session_medium"]
    assert choice.open and choice.by == inv.decided_by
    # the phase was re-checked against the anchor with the open question; nothing is stale
    assert stale_checks(state) == []
    # drift checks have nothing to compare an open invariant with, so none names it
    assert not [
        f
        for findings in state.validations.values()
        for f in findings
        if (f.invariant or "").startswith(f"{inv.id} ")
    ]


def test_exports_list_the_open_invariant_and_the_provenance(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        state = svc.load_state(_left_open(svc))
    markdown = export(state, "markdown")
    assert "## Open questions" in markdown
    assert "INV-5 session medium: not decided yet" in markdown
    assert "INV-5 session_medium = open (not decided) — open: the founder has not decided" in (
        markdown
    )
    assert "INV-4 interaction_model = Synchronous live sessions" in markdown
    assert "clarified by" in markdown and "founder's words: “an app for my existing" in markdown
    data = json.loads(export(state, "json"))
    assert data["open_questions"] == [
        "INV-5 session medium: not decided yet (the idea says “gather in online sessions”)"
    ]
    medium = next(i for i in data["anchor"]["invariants"] if i["property"] == "session_medium")
    assert (medium["provenance"], medium["value"]) == ("open", "")


@poppler
def test_the_pdf_lists_the_open_invariant_under_open_questions(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        state = svc.load_state(_left_open(svc))
    pdf = tmp_path / "v.pdf"
    pdf.write_bytes(export(state, "validation-pdf"))
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "Open questions" in text and "INV-5 session medium: not decided yet" in text
    row = next(line for line in text.splitlines() if "session_medium" in line)
    assert "open (not decided)" in row and "100%" not in row and LEAVE_OPEN not in text


def test_auto_resolution_keeps_the_chosen_options_pin_and_confidence(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, auto_approve=True, until=2)
        anchor = svc.load_state(sid).anchor
    interaction = anchor.invariant("interaction_model")
    medium = anchor.invariant("session_medium")
    # the option text differs from the extracted value: the option's own pin is kept
    assert interaction.value == "Synchronous live sessions - all eight present at once"
    assert interaction.trait == "realtime=true" and medium.trait == "communication=video"
    assert (interaction.provenance, interaction.confidence) == ("auto", 0.6)
    assert (medium.provenance, medium.confidence) == ("auto", 0.5)
    assert medium.decided_by == "auto-approve"
    assert "[auto-resolved to the first option; not confirmed by the founder]" in anchor.render()


def test_a_reviewers_choice_takes_that_options_pin_and_says_who(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)
        svc.decide(
            sid,
            1,
            {"kind": "clarify", "invariant": "session_medium", "choice": "2", "by": "ana"},
            continue_run=False,
        )
        medium = svc.load_state(sid).anchor.invariant("session_medium")
    assert (medium.value, medium.trait) == ("Text-based chat room", "communication=chat")
    assert (medium.provenance, medium.decided_by, medium.confidence) == ("reviewer", "ana", 1.0)


def _inv(**kw) -> dict:
    base = {"property": "session_medium", "value": "video", "source": "online", "confidence": 0.5}
    return base | kw


def test_option_pins_are_normalised_and_the_values_own_pin_fills_in() -> None:
    inv = Invariant.model_validate(
        _inv(
            trait="communication=video",
            clarification_options=["Video", "Text chat", LEAVE_OPEN],
            option_traits={"text CHAT": "Communication: Chat", "nope": "auth=sso", "Video": "x=y"},
        )
    )
    # keyed by the option's text, a valid ref; unknown options and refs dropped; the option
    # equal to the value gets the invariant's pin; "leave it open" never has one
    assert inv.option_traits == {"Text chat": "communication=chat", "Video": "communication=video"}


def test_sessions_from_before_provenance_load_through_their_flags() -> None:
    anchor = ConceptAnchor.model_validate(
        {
            "intent": {"goal": "g"},
            "invariants": [
                _inv(property="a", confidence=1.0, user_clarified=True),
                _inv(property="b", auto_resolved=True),
                _inv(property="c", value=LEAVE_OPEN, confidence=1.0, user_clarified=True),
                _inv(property="d", confidence=0.9),
            ],
        }
    )
    got = [(i.property, i.provenance, i.value, i.is_ambiguous) for i in anchor.invariants]
    assert got == [
        ("a", "reviewer", "video", False),
        ("b", "auto", "video", False),
        ("c", "open", "", False),
        ("d", "founder", "video", False),
    ]
    with pytest.raises(ValueError, match="value must not be empty"):
        Invariant.model_validate(_inv(value=" "))


def test_an_edit_to_leave_it_open_and_back_records_provenance() -> None:
    anchor = ConceptAnchor.model_validate(
        {
            "intent": {"goal": "g"},
            "invariants": [_inv(confidence=0.95, trait="communication=video")],
        }
    )
    opened = anchor.edit_value("session_medium", LEAVE_OPEN, who="ana")
    inv = opened.invariant("session_medium")
    assert (inv.provenance, inv.value, inv.trait, inv.decided_by) == ("open", "", None, "ana")
    back = opened.edit_value("session_medium", "audio only", who="ana")
    assert back.invariant("session_medium").provenance == "reviewer"
