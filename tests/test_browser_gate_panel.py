"""The decision panel in a real browser: three kinds of blockers at Gate 1, resolved one by one.

The session is prepared before the browser opens (same sessions folder, same cassette): the
Power of 8 stages with a failed knockout (a NO-GO verdict) and no verifier turns (every phase's
verification is inconclusive), so Gate 1 holds two ambiguities, the NO-GO and the inconclusive
verification. Approve stays disabled until the last one is resolved; approving works and the
later gates each show their panel (one screenshot per gate with ``HAYTHAM_E2E_SHOTS``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from browser_helpers import BROWSER, IDEA, Shots, browser_page, served
from pipeline_helpers import POWER8, cassette_with, replay_settings

pytestmark = BROWSER
SID = "p8"


def _no_go_without_verifiers(tmp_path: Path) -> Path:
    """pipeline.jsonl with the validation summary's first knockout failed (NO-GO)."""
    lines = []
    for line in (POWER8 / "pipeline.jsonl").read_text("utf-8").splitlines():
        entry = json.loads(line) if line.strip() else None
        if entry and entry["agent"] == "validation-summary":
            for item in entry["response"]:
                if "input" in item:
                    item["input"]["payload"]["knockout_criteria"][0]["passed"] = False
            lines.append(json.dumps(entry))
    (tmp_path / "no_go").mkdir()
    summary = tmp_path / "no_go" / "validation_summary.jsonl"
    summary.write_text("\n".join(lines) + "\n", "utf-8")
    return cassette_with(tmp_path, summary, drop_agents={"validation-summary"})


def _prepare(tmp_path: Path, cassette: Path) -> None:
    from haytham.app import make_service

    with make_service(replay_settings(tmp_path, cassette)) as svc:
        svc.create_session(IDEA, session_id=SID)
        outcome = svc.run(SID)
        assert outcome.gate == 1, outcome


def _item(page: Any, key: str) -> Any:
    return page.locator(f".st-key-item_{key}")


def _override(page: Any, key: str, reason: str, button: str = "Override") -> None:
    item = _item(page, key)
    box = item.get_by_role("textbox")
    box.fill(reason)
    box.press("Enter")  # commit the text (Streamlit commits on Enter or blur)
    item.get_by_role("button", name=button).click()


def _open_gate(page: Any, server: str, gate: int) -> None:
    """Open the gate's page once the background run has stopped there."""
    from playwright.sync_api import expect

    deadline = time.monotonic() + 90
    while True:
        page.goto(f"{server}/gate_{gate}?session={SID}")
        expect(page.get_by_role("heading", name=f"Gate {gate} ·")).to_be_visible()
        approve = page.get_by_role("button", name=f"Approve Gate {gate}")
        approve.or_(page.get_by_text("A run of this session is in progress")).or_(
            page.get_by_text(f"has not reached Gate {gate}")
        ).first.wait_for()
        if approve.count():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"Gate {gate} never became decidable")
        time.sleep(1)


def test_three_kinds_of_blockers_resolved_one_by_one(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    cassette = _no_go_without_verifiers(tmp_path)
    _prepare(tmp_path, cassette)
    with served(tmp_path, cassette) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        _open_gate(page, server, 1)
        approve = page.get_by_role("button", name="Approve Gate 1")
        expect(page.get_by_text("4 blocking items", exact=True)).to_be_visible()
        for key in (
            "ambiguity-interaction_model",
            "ambiguity-session_medium",
            "verdict-NO-GO",
            "verification-inconclusive",
        ):
            expect(_item(page, key)).to_be_visible()
        expect(_item(page, "verdict-NO-GO")).to_contain_text("The validation says NO-GO")
        expect(_item(page, "verification-inconclusive")).to_contain_text(
            "The verifier could not decide"
        )
        expect(page.get_by_text("verification:inconclusive")).to_have_count(0)  # no raw ids
        expect(page.get_by_text("\\:")).to_have_count(0)  # no escaped Markdown
        expect(approve).to_be_disabled()
        expect(approve).to_be_in_viewport()  # the action bar is pinned to the bottom
        shot("gate-1-panel")

        # 1. an ambiguity, clarified with one of its options
        page.get_by_text("Synchronous live sessions - all eight present at once").click()
        page.get_by_role("button", name="Confirm clarifications").click()
        expect(
            page.get_by_text("Clarified 1 invariant(s); the anchor was updated.")
        ).to_be_visible()
        expect(page.get_by_text("3 blocking items", exact=True)).to_be_visible()
        expect(_item(page, "ambiguity-interaction_model")).to_contain_text("clarified by you")
        expect(approve).to_be_disabled()

        # 2. the inconclusive verification, overridden with a reason
        _override(page, "verification-inconclusive", "Reviewed the WHY outputs by hand.")
        expect(
            page.get_by_text("Overridden: The verifier could not decide. Your reason is logged")
        ).to_be_visible()
        done = _item(page, "verification-inconclusive")
        expect(done).to_contain_text("overridden by you")
        expect(done).to_contain_text("Reviewed the WHY outputs by hand.")
        expect(done.get_by_role("button")).to_have_count(0)
        expect(page.get_by_text("2 blocking items", exact=True)).to_be_visible()
        expect(approve).to_be_disabled()

        # 3. the NO-GO: proceed anyway, with a reason
        _override(page, "verdict-NO-GO", "The founder funds the pilot himself.", "Proceed anyway")
        expect(_item(page, "verdict-NO-GO")).to_contain_text("overridden by you")
        expect(page.get_by_text("1 blocking item", exact=True)).to_be_visible()
        expect(approve).to_be_disabled()

        # 4. the last ambiguity: now Approve lights up
        page.get_by_text("Video/audio call (like Zoom)").click()
        page.get_by_role("button", name="Confirm clarifications").click()
        expect(page.get_by_text("Every blocking item is resolved or overridden")).to_be_visible()
        expect(page.get_by_text("Nothing is open")).to_be_visible()
        expect(approve).to_be_enabled()
        shot("gate-1-panel-resolved")
        approve.click()
        expect(page.get_by_role("heading", name="Run")).to_be_visible()

        # the later gates: each one's verification is inconclusive (no verifier turns)
        for gate in (2, 3, 4):
            _open_gate(page, server, gate)
            approve = page.get_by_role("button", name=f"Approve Gate {gate}")
            expect(page.get_by_text("1 blocking item", exact=True)).to_be_visible()
            expect(approve).to_be_disabled()
            shot(f"gate-{gate}-panel")
            _override(page, "verification-inconclusive", f"Checked Gate {gate} by hand.")
            expect(approve).to_be_enabled()
            approve.click()
            expect(page.get_by_role("heading", name="Run")).to_be_visible()

    gates = json.loads((tmp_path / "sessions" / SID / "gates.json").read_text("utf-8"))
    assert [gates[str(g)]["status"] for g in (1, 2, 3, 4)] == ["approved"] * 4
    assert sorted(o["target"] for o in gates["1"]["overrides"]) == [
        "verdict:NO-GO",
        "verification:inconclusive",
    ]
    assert {c["invariant"] for c in gates["1"]["clarifications"]} == {
        "interaction_model",
        "session_medium",
    }
