"""Real-browser tests of a gate's history and of anchor edits that make later checks stale.

(a) A reviewer's rework at Gate 2: the new round, its feedback and what the rework changed show
    in the gate's timeline. (b) An anchor edit at Gate 1: every later page says which stages and
    checks follow the earlier anchor, until the re-run from the first stale stage clears it.

Replay provider, Debian's Chromium, no network (``browser_helpers``). Screenshots with
``HAYTHAM_E2E_SHOTS=folder`` (``gate-2-history``, ``stale-*``).
"""

from __future__ import annotations

import re
from pathlib import Path

from browser_helpers import BROWSER, CASSETTE, IDEA, Shots, browser_page, served
from pipeline_helpers import replay_settings
from test_history import FEEDBACK, rework_cassette

from haytham.app import make_service

pytestmark = BROWSER

STALE = "Stale checks: the concept anchor changed after the checks of"
GATE_STALE = re.compile("This gate's checks are stale")  # the gate page's own warning


def _session(tmp_path: Path, cassette: Path, gate: int) -> str:
    """A session waiting at ``gate`` (earlier gates approved), in the served sessions folder."""
    with make_service(replay_settings(tmp_path, cassette=cassette)) as svc:
        sid = svc.create_session(IDEA, session_id="p8")
        svc.run(sid, until=gate, auto_approve=gate != 1)
    return sid


def _open(page, label: str) -> None:
    """Go to a page from the sidebar (the tab keeps its session)."""
    page.get_by_role("link", name=label, exact=True).click()


def test_rework_round_and_feedback_appear_in_the_timeline_with_a_diff(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    cassette = rework_cassette(tmp_path)
    sid = _session(tmp_path, cassette, 2)
    with served(tmp_path, cassette) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        page.goto(f"{server}/gate_2?session={sid}")
        expect(page.get_by_role("heading", name="Gate 2 · WHAT")).to_be_visible()
        expect(page.get_by_text("Gate 2: 1 round(s).")).to_be_visible()
        # the rework form: a tab (older layout) or a menu in the action bar
        opener = page.get_by_role("tab", name="Request rework").or_(
            page.get_by_role("button", name="Request rework")
        )
        opener.first.click()
        box = page.get_by_label("Feedback: what must change")
        box.fill(FEEDBACK)
        box.press("Control+Enter")
        send = page.get_by_role(
            "button", name=re.compile(r"^(Send back for rework|Request rework)$")
        )
        send.last.click()

        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()
        page.get_by_role("button", name="Review Gate 2").click()
        expect(page.get_by_role("heading", name="Gate 2 · WHAT")).to_be_visible()
        expect(page.get_by_text("Gate 2: 2 round(s), 1 rework(s).")).to_be_visible()
        expect(page.get_by_text("You sent MVP scope back for rework").first).to_be_visible()
        expect(page.get_by_text(FEEDBACK).first).to_be_visible()
        expect(page.get_by_text("Gate 2 opened again")).to_be_visible()
        expect(
            page.get_by_text("MVP scope: 1 added, 1 removed, 1 changed", exact=False)
        ).to_be_visible()
        page.get_by_text("back for rework — what changed").click()
        expect(
            page.get_by_text("Psychologist host controls → Psychologist runs every circle")
        ).to_be_visible()
        expect(page.get_by_text("Chat between sessions").first).to_be_visible()
        page.get_by_role("heading", name="History").scroll_into_view_if_needed()
        shot("gate-2-history")


def test_anchor_edit_marks_later_checks_stale_until_the_re_run(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    sid = _session(tmp_path, CASSETTE, 1)
    with served(tmp_path) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        page.goto(f"{server}/gate_1?session={sid}")
        expect(page.get_by_role("heading", name="Gate 1 · WHY")).to_be_visible()
        expect(page.get_by_text(STALE)).to_have_count(0)
        page.get_by_text("Correct the anchor (logged at this gate)").click()
        value = page.get_by_label("New value")
        value.fill("only patients he invites himself")
        value.press("Enter")
        page.get_by_role("button", name="Save value").click()
        expect(page.get_by_text(GATE_STALE).first).to_be_visible()
        expect(page.get_by_text("Edited the anchor: access_model")).to_be_visible()
        shot("stale-gate-1")

        for label in ("Run", "Verdict", "Fidelity", "Stories"):
            _open(page, label)
            expect(page.get_by_role("heading", name=label, exact=True)).to_be_visible()
            expect(page.get_by_text(STALE)).to_be_visible()
            expect(
                page.get_by_text("Market context, Risk assessment and Validation summary")
            ).to_be_visible()
            expect(page.get_by_text("Edited access_model")).to_be_visible()
        shot("stale-stories")
        for label in ("Gate 2 · WHAT", "Gate 3 · HOW", "Gate 4 · STORIES"):
            _open(page, label)
            expect(page.get_by_role("heading", name=label)).to_be_visible()
            expect(page.get_by_text(STALE)).to_be_visible()  # the session's, not this gate's
            expect(page.get_by_text(GATE_STALE)).to_have_count(0)

        _open(page, "Verdict")
        expect(page.get_by_text(STALE)).to_be_visible()
        expect(page.get_by_role("heading", name="Scorecard")).to_be_visible()
        shot("stale-verdict")
        page.get_by_role("button", name="Re-run from Market context").click()
        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
        expect(page.get_by_text(STALE)).to_have_count(0)
        for label in ("Verdict", "Fidelity", "Gate 2 · WHAT"):
            _open(page, label)
            expect(page.get_by_role("heading", name=label)).to_be_visible()
            expect(page.get_by_text(STALE)).to_have_count(0)
            expect(page.get_by_text(GATE_STALE)).to_have_count(0)
        _open(page, "Gate 1 · WHY")
        expect(
            page.get_by_text(
                re.compile(
                    r"Re-run from Market context: this gate's earlier decisions no longer apply"
                )
            )
        ).to_be_visible()
        shot("stale-cleared-gate-1")
