"""The verifier audits claims and code counts (issue 26 point 4): per (invariant, item) of the
carrier table the verifier answers honours / weakens / contradicts / unrelated with a quote;
code turns a quoted contradiction into a blocking finding and an invariant whose every carrier
is unrelated into a dropped-invariant finding, shown on the gate with the quote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import POWER8, POWER8_IDEA, capture_prompts, replay_settings
from test_ui_support import app, cassette_entries, session_at, shows, texts, use_replay
from verify_helpers import write_lines

from haytham.runs.service import Haytham
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase
from haytham.state import SessionState
from haytham.verify.audit import apply_audit, carrier_table, render_table, rows_from_handoff
from haytham.verify.factory import make_verifier
from haytham.verify.verdict import finalize, verification_context

CLAIMED_HOW = POWER8 / "verify" / "claimed_how.jsonl"
CLAIMED_STORIES = POWER8 / "verify" / "claimed_stories.jsonl"
SIGN_UP = "The psychologist invites existing patients by email"  # SCOPE-1's own words


@pytest.fixture(scope="module")
def what(tmp_path_factory: pytest.TempPathFactory) -> SessionState:
    """The faithful replay session at Gate 2 (the WHAT phase's outputs and anchor)."""
    tmp = tmp_path_factory.mktemp("audit")
    svc = Haytham(replay_settings(tmp), verifier_factory=make_verifier, post_validator=None)
    with svc:
        sid = svc.create_session(POWER8_IDEA)
        assert svc.run(sid, auto_approve=True, until=2).gate == 2
        return svc.load_state(sid)


def _verdict(*rows: dict[str, Any], passed: bool = True) -> PhaseVerification:
    """A verifier's raw answer that believes the phase is faithful, with ``rows`` of audit."""
    return PhaseVerification.model_validate(
        {"phase": "WHAT", "passed": passed, "carrier_audit": list(rows)}
    )


def _audit(state: SessionState, raw: PhaseVerification) -> PhaseVerification:
    table = carrier_table(Phase.WHAT, state)
    return finalize(apply_audit(raw, table, state.anchor), Phase.WHAT, "single")


def test_the_table_lists_each_invariants_claimed_carriers_with_their_text(what) -> None:
    table = carrier_table(Phase.WHAT, what)
    by_inv = {inv.id: [c.item for c in cs] for inv, cs in table.rows}
    assert by_inv["INV-1"] == ["SCOPE-1", "CAP-F-001"]
    assert by_inv["INV-5"] == ["SCOPE-5", "CAP-F-005", "CAP-NF-002"]
    assert "SCOPE-7" not in sum(by_inv.values(), [])  # an OUT item that only honours an exclusion
    text = render_table(table)
    assert "### INV-1 access_model = closed: only his existing patients" in text
    assert f"- SCOPE-1 (mvp-scope; claims INV-1): Invite-only patient access. {SIGN_UP}" in text
    ctx = verification_context(Phase.WHAT, what).text()
    assert "## Carrier audit" in ctx and "- CAP-F-001 (capability-model; claims INV-1)" in ctx
    assert carrier_table(Phase.WHY, what).rows == ()  # no stage of WHY claims invariants
    assert "## Carrier audit" not in verification_context(Phase.WHY, what).text()


def test_part_ids_are_shown_as_claimed_and_answered_by_part(what) -> None:
    scope = what.outputs["mvp-scope"]
    items = [
        i.model_copy(update={"carries": ["INV-2a"]}) if i.id == "SCOPE-4" else i
        for i in scope.payload.in_scope
    ]
    payload = scope.payload.model_copy(update={"in_scope": items})
    state = what.model_copy(
        update={
            "outputs": {**what.outputs, "mvp-scope": scope.model_copy(update={"payload": payload})}
        }
    )
    table = carrier_table(Phase.WHAT, state)
    assert "- SCOPE-4 (mvp-scope; claims INV-2a)" in render_table(table)
    row = {
        "invariant": "inv-2a",
        "item": "scope-4",
        "verdict": "contradicts",
        "quote": "The receiver writes the need",
    }
    final = _audit(state, _verdict(row))
    assert [(r.invariant, r.item) for r in final.carrier_audit] == [("INV-2a", "SCOPE-4")]
    assert final.status == "failed" and "SCOPE-4 claims INV-2a" in final.blocking()[0].violation


def test_a_quoted_contradiction_blocks_whatever_the_verifier_concluded(what) -> None:
    row = {"invariant": "INV-1", "item": "SCOPE-1", "verdict": "contradicts", "quote": SIGN_UP}
    final = _audit(what, _verdict(row))
    assert (final.passed, final.status) == (False, "failed")
    (v,) = final.blocking()
    assert (v.invariant, v.stage) == ("access_model", "mvp-scope")
    assert "SCOPE-1 claims INV-1" in v.violation and f"\u201c{SIGN_UP}\u201d" in v.violation
    assert final.carrier_audit[0].quote_found is True


def test_a_quote_not_in_the_items_text_is_a_weak_signal_not_a_block(what) -> None:
    row = {
        "invariant": "INV-1",
        "item": "SCOPE-1",
        "verdict": "contradicts",
        "quote": "anyone can sign up",
    }
    final = _audit(what, _verdict(row))
    assert final.status == "passed" and not final.blocking()
    (v,) = final.invariants_violated
    assert v.severity == "warning" and "not in the item's text" in v.violation


def test_weakens_is_a_warning_and_spellings_and_ids_are_matched_by_code(what) -> None:
    row = {
        "Invariant": "inv-01",
        "ITEM": "cap-f-1",
        "verdict": "Weakened",
        "quote": "only invited people can sign in",
    }
    final = _audit(what, _verdict(row))
    assert final.status == "passed"
    (v,) = final.invariants_violated
    assert v.severity == "warning" and "CAP-F-001 claims INV-1" in v.violation
    assert "weakens it" in v.violation


def test_rows_outside_the_table_and_unknown_verdicts_are_ignored(what) -> None:
    rows = [
        {"invariant": "INV-1", "item": "SCOPE-7", "verdict": "contradicts", "quote": "Public"},
        {"invariant": "INV-9", "item": "SCOPE-1", "verdict": "contradicts", "quote": SIGN_UP},
        {"invariant": "INV-2", "item": "SCOPE-1", "verdict": "contradicts", "quote": SIGN_UP},
        {"invariant": "INV-1", "item": "SCOPE-1", "verdict": "maybe", "quote": SIGN_UP},
        {"invariant": "INV-1"},  # malformed: dropped when parsed
    ]
    final = _audit(what, _verdict(*rows))
    assert (
        final.status == "passed" and final.invariants_violated == [] and final.carrier_audit == []
    )


def test_a_verifier_that_gives_no_audit_passes_through(what) -> None:
    final = _audit(what, _verdict())
    assert (final.passed, final.status, final.carrier_audit) == (True, "passed", [])


def test_an_invariant_whose_every_carrier_is_unrelated_is_dropped(what) -> None:
    rows = [
        {
            "invariant": "INV-5",
            "item": "SCOPE-5",
            "verdict": "unrelated",
            "quote": "Live video circle with guided phases",
        },
        {
            "invariant": "INV-5",
            "item": "CAP-F-005",
            "verdict": "unrelated",
            "quote": "meet in one private video room",
        },
        {
            "invariant": "INV-5",
            "item": "CAP-NF-002",
            "verdict": "unrelated",
            "quote": "Stable audio and video",
        },
    ]
    final = _audit(what, _verdict(*rows))
    (v,) = final.blocking()
    assert v.invariant == "session_medium" and v.stage == "mvp-scope"
    assert (
        "dropped invariant: INV-5" in v.violation
        and "\u201cStable audio and video\u201d" in v.violation
    )
    # one carrier that honours it keeps the invariant alive
    rows[2]["verdict"] = "honours"
    assert _audit(what, _verdict(*rows)).status == "passed"


def _claimed_cassette(tmp: Path, extra: Path, drop: str) -> Path:
    entries = [e for e in cassette_entries() if e["agent"] != drop]
    entries += [e for e in _lines(extra)]
    return write_lines(tmp / "claimed.jsonl", entries)


def _lines(path: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


@pytest.mark.parametrize(
    ("extra", "drop", "gate", "agent", "item", "quote", "where"),
    [
        (
            CLAIMED_HOW,
            "architecture-decisions",
            3,
            "verifier-how",
            "DEC-AUTH-001",
            "any visitor can enrol from the landing page",
            "Architecture decisions",
        ),
        (
            CLAIMED_STORIES,
            "story-generation",
            4,
            "verifier-stories-invariant-checker",
            "STORY-002",
            "any visitor enrols with an email and password",
            "Story generation",
        ),
    ],
    ids=["single", "swarm"],
)
def test_a_claimed_carrier_that_contradicts_blocks_the_gate_with_its_quote(
    tmp_path, monkeypatch, extra, drop, gate, agent, item, quote, where
) -> None:
    """The stage still lists INV-1 in the item's carries and reports access_model preserved; the
    verifier (or the coordinator) passes the phase; its audit row says "contradicts" with a
    quote from the item; code blocks the gate and the page shows the quote."""
    from frontend_streamlit.components.safe_text import md

    prompts = capture_prompts(monkeypatch)
    use_replay(tmp_path, monkeypatch, cassette=_claimed_cassette(tmp_path, extra, drop))
    monkeypatch.setenv("HAYTHAM_MAX_REWORK_ROUNDS", "0")  # the gate, not an automatic rework
    sid = session_at(gate)
    asked = next(p["text"] for p in prompts if p["agent"] == agent)
    assert f"- {item} (" in asked and quote in asked  # the table, with the item's own text

    at = app(sid, f"views/gate_{gate}.py")
    assert not at.exception
    assert shows(at, f"**{md('access_model is not honored in ' + where)}**"), texts(at)
    assert shows(at, md(f"{item} claims INV-1")) and shows(at, md(f"\u201c{quote}\u201d"))
    assert shows(at, "contradict it (listed in the decision panel")
    assert at.button(key=f"approve_{gate}").disabled


def test_the_invariant_checkers_rows_come_first_the_coordinators_fill_gaps(what) -> None:
    """Swarm: the InvariantChecker answers the audit in its handoff context; a coordinator row
    for the same pair does not overrule it, one for a pair it left out is counted."""
    handoff = {
        "invariant_findings": [],
        "carrier_audit": [
            {"invariant": "INV-1", "item": "SCOPE-1", "verdict": "contradicts", "quote": SIGN_UP},
            "not a row",
        ],
    }
    coordinator = _verdict(
        {"invariant": "INV-1", "item": "SCOPE-1", "verdict": "honours", "quote": SIGN_UP},
        {
            "invariant": "INV-5",
            "item": "CAP-NF-002",
            "verdict": "weakens",
            "quote": "Stable audio and video",
        },
    )
    table = carrier_table(Phase.WHAT, what)
    audited = apply_audit(coordinator, table, what.anchor, extra=rows_from_handoff(handoff))
    final = finalize(audited, Phase.WHAT, "swarm")
    assert [(r.item, r.verdict) for r in final.carrier_audit] == [
        ("SCOPE-1", "contradicts"),
        ("CAP-NF-002", "weakens"),
    ]
    assert final.status == "failed" and len(final.blocking()) == 1
    assert rows_from_handoff(None) == [] and rows_from_handoff({"carrier_audit": "x"}) == []
