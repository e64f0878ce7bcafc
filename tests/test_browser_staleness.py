"""Stale checks and open invariants in a real browser (Debian's Chromium, replay provider).

1. Stale, then re-check, then approve: the reviewer corrects an anchor value at Gate 1; the
   gate says its checks are stale, shows no green verifier result and keeps Approve disabled;
   one click on "Re-check" runs the verifier and validators again, and Approve goes through.
2. An open invariant: choosing "Leave this open" gives an invariant shown as open (no value,
   no "100 % confident · clarified by you"), and the gate can be approved (the clarification
   re-checked the phase, so nothing is stale).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from browser_helpers import BROWSER, IDEA, browser_page, served
from pipeline_helpers import replay_settings

from haytham.schemas.anchor import LEAVE_OPEN

pytestmark = BROWSER
SID = "p8"


def _prepare(tmp_path: Path, clarify: bool) -> None:
    from haytham.app import make_service

    with make_service(replay_settings(tmp_path)) as svc:
        svc.create_session(IDEA, session_id=SID)
        assert svc.run(SID).gate == 1
        if clarify:
            for inv in svc.load_state(SID).anchor.open_ambiguities():
                svc.clarify(SID, inv.property, "1")
            assert svc.status(SID)["stale"] == []


def _status(tmp_path: Path) -> dict[str, Any]:
    from haytham.app import make_service

    with make_service(replay_settings(tmp_path)) as svc:
        return svc.status(SID)


def _gate_1(page: Any, server: str) -> Any:
    from playwright.sync_api import expect

    page.goto(f"{server}/gate_1?session={SID}")
    expect(page.get_by_role("heading", name="Gate 1 ·")).to_be_visible()
    approve = page.get_by_role("button", name="Approve Gate 1")
    expect(approve).to_be_visible()
    return approve


def _wait(condition: Any, what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def test_stale_checks_then_re_check_then_approve(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _prepare(tmp_path, clarify=True)
    with served(tmp_path) as server, browser_page(tmp_path) as page:
        approve = _gate_1(page, server)
        expect(page.get_by_text("This gate's checks are stale")).to_have_count(0)
        expect(approve).to_be_enabled()

        # the reviewer corrects an anchor value: the WHY checks were made against the old one
        page.get_by_text("Correct the anchor (logged at this gate)").click()
        box = page.get_by_label("New value")
        box.fill("only patients he invites")
        box.press("Enter")
        page.get_by_role("button", name="Save value").click()
        expect(page.get_by_text("This gate's checks are stale")).to_be_visible()
        expect(page.get_by_text("the concept anchor changed after the checks of")).to_be_visible()
        expect(page.get_by_text("The checks are stale")).to_be_visible()  # the action bar
        expect(approve).to_be_disabled()
        expect(page.get_by_text("verifier result is stale (re-check it)")).to_be_visible()
        expect(page.get_by_text("verifier passed")).to_have_count(0)  # no green on stale
        assert _status(tmp_path)["stale"] == [
            "market-context",
            "risk-assessment",
            "validation-summary",
        ]

        # one click re-checks (verifier + validators, no stage re-run)
        page.get_by_role("button", name="Re-check").click()
        expect(
            page.get_by_text("Re-checked Gate 1's phase against the current anchor.")
        ).to_be_visible()
        expect(page.get_by_text("This gate's checks are stale")).to_have_count(0)
        expect(page.get_by_text("Nothing is open")).to_be_visible()
        expect(approve).to_be_enabled()
        assert _status(tmp_path)["stale_checks"] == []

        approve.click()
        _wait(lambda: _status(tmp_path)["gates"]["1"]["status"] == "approved", "the approval")
    gate = _status(tmp_path)["gates"]["1"]
    assert gate["rechecks"] and not [o for o in gate["overrides"] if o["target"] == "stale-checks"]


def test_leave_it_open_shows_an_open_invariant(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _prepare(tmp_path, clarify=False)
    with served(tmp_path) as server, browser_page(tmp_path) as page:
        approve = _gate_1(page, server)
        expect(approve).to_be_disabled()
        page.get_by_text("Synchronous live sessions - all eight present at once").click()
        page.locator(".st-key-item_ambiguity-session_medium").get_by_text(LEAVE_OPEN).click()
        page.get_by_role("button", name="Confirm clarifications").click()
        expect(
            page.get_by_text("Clarified 2 invariant(s); the anchor was updated.")
        ).to_be_visible()

        # the anchor review: open, no value, no confidence; the panel: "left open"
        medium = page.get_by_text("not decided: your idea does not say")
        expect(medium).to_be_visible()
        expect(page.get_by_text(LEAVE_OPEN)).to_have_count(0)  # never shown as a value
        anchor = page.locator(".stMarkdown", has_text="not decided: your idea does not say")
        expect(anchor.first).not_to_contain_text("100% confident")
        expect(anchor.first).not_to_contain_text("clarified by you")
        item = page.locator(".st-key-item_ambiguity-session_medium")
        expect(item).to_contain_text("left open")
        expect(item).not_to_contain_text("clarified by you")

        # the clarification re-checked the phase: nothing stale, Gate 1 can be approved
        expect(page.get_by_text("This gate's checks are stale")).to_have_count(0)
        expect(approve).to_be_enabled()
        approve.click()
        _wait(lambda: _status(tmp_path)["gates"]["1"]["status"] == "approved", "the approval")
    status = _status(tmp_path)
    assert [o["invariant"] for o in status["open_invariants"]] == ["session_medium"]
