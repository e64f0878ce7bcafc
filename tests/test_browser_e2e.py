"""One real-browser run: Debian's Chromium drives the app served by ``streamlit run``.

Type an idea, resolve the clarification at Gate 1, approve it, and see the WHAT phase's
progress. Replay provider, free localhost port, no network. A screenshot lands in the test's
tmp dir on failure (and one per step when ``HAYTHAM_E2E_SHOTS`` names a folder).
"""

from __future__ import annotations

from pathlib import Path

from browser_helpers import BROWSER, IDEA, Shots, browser_page, served

pytestmark = BROWSER


def test_idea_clarify_approve_next_phase(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with served(tmp_path) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        page.goto(f"{server}/sessions")  # a page URL on a fresh server still gets the nav
        expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
        expect(page.get_by_text("No sessions yet")).to_be_visible()
        page.get_by_role("link", name="New idea").click()
        expect(page.get_by_role("heading", name="New idea")).to_be_visible()
        box = page.get_by_label("Your idea")
        box.fill(IDEA)
        box.press("Control+Enter")  # commit the text (Streamlit commits on blur or Ctrl+Enter)
        expect(page.get_by_text(f"{len(IDEA):,} / 20,000 characters")).to_be_visible()
        shot("1-new-idea")
        page.get_by_role("button", name="Start").click()

        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
        expect(page.get_by_text("5 / 11 steps done")).to_be_visible()
        shot("2-run-gate-1")
        page.get_by_role("button", name="Review Gate 1").click()

        expect(page.get_by_text("Clarification needed")).to_be_visible()
        expect(page.get_by_text("60% confident")).to_be_visible()
        expect(page.get_by_role("button", name="Approve Gate 1")).to_be_disabled()
        shot("3-gate-1-clarify")
        page.get_by_text("Synchronous live sessions - all eight present at once").click()
        page.get_by_text("Video/audio call (like Zoom)").click()
        page.get_by_role("button", name="Confirm clarifications").click()
        expect(page.get_by_text("Clarified 2 invariant(s)").first).to_be_visible()
        expect(page.get_by_text("Clarification needed")).to_have_count(0)
        shot("4-gate-1-clarified")
        approve = page.get_by_role("button", name="Approve Gate 1")
        expect(approve).to_be_enabled()
        approve.click()

        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()
        expect(page.get_by_text("7 / 11 steps done")).to_be_visible()  # MVP scope, capabilities
        shot("5-run-gate-2")
        page.get_by_role("button", name="Review Gate 2").click()
        expect(page.get_by_role("heading", name="Gate 2 · WHAT")).to_be_visible()
        page.get_by_text("5. MVP scope", exact=True).click()  # outputs load when opened
        expect(page.get_by_role("heading", name="The one thing")).to_be_visible()
        shot("6-gate-2")
