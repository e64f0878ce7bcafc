"""A change request in a real browser (issue 17): at Gate 2 the founder asks for SMS reminders
in the MVP scope; the agent's proposal shows as a diff (an item added, one changed, why, the
invariant it touches); Accept applies it, the capability model re-runs and the WHAT verifier
checks it again in the background, the run stops at Gate 2 again, and the revision is in the
gate's history, in its change-request list and in the Markdown and JSON downloads.

Replay provider (the Power of 8 recording plus a scripted change agent, ``test_revise``), free
localhost port, no network; Debian's Chromium. Screenshots ``change-request-diff`` and
``change-request-history`` land in ``HAYTHAM_E2E_SHOTS`` when it names a folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from browser_helpers import BROWSER, IDEA, Shots, browser_page, served
from pipeline_helpers import replay_settings
from test_revise import REQUEST, _change_cassette

from haytham.app import make_service

pytestmark = BROWSER


def _events(root: Path, sid: str) -> list[dict]:
    lines = (root / "sessions" / sid / "events.jsonl").read_text("utf-8").splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def test_a_change_request_is_a_diff_then_applied_rerun_reverified_and_exported(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    cassette = _change_cassette(tmp_path)
    with make_service(replay_settings(tmp_path, cassette=cassette)) as svc:
        sid = svc.create_session(IDEA, session_id="p8")
        assert svc.run(sid, until=2, auto_approve=True).gate == 2
    with served(tmp_path, cassette) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        page.goto(f"{server}/gate_2?session={sid}")
        expect(page.get_by_role("heading", name="Gate 2 · WHAT")).to_be_visible()
        page.get_by_text("Request a change", exact=True).click()
        box = page.get_by_label("What should change?")
        box.fill(REQUEST)
        box.press("Control+Enter")
        page.get_by_role("button", name="Propose the change").click()

        proposal = page.get_by_test_id("stVerticalBlock").filter(
            has_text="Proposed change to MVP scope"
        )
        expect(page.get_by_text("Proposed change to MVP scope")).to_be_visible()
        expect(page.get_by_text("1 added, 0 removed, 1 changed")).to_be_visible()
        expect(proposal.get_by_text("SCOPE-99").first).to_be_visible()
        expect(proposal.get_by_text("SMS reminder before each circle").first).to_be_visible()
        expect(page.get_by_text("Reminders go out by SMS, which patients read.")).to_be_visible()
        expect(page.get_by_text("Invariants touched (code's check):")).to_be_visible()
        assert not [e for e in _events(tmp_path, sid) if e["type"] == "change_applied"]
        page.get_by_text("Proposed change to MVP scope").scroll_into_view_if_needed()
        shot("change-request-diff")

        runs_before = sum(
            1
            for e in _events(tmp_path, sid)
            if e["type"] == "stage_started" and e["stage"] == "capability-model"
        )
        page.get_by_role("button", name="Accept the change").click()
        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text("Change request applied to MVP scope")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()

        events = _events(tmp_path, sid)
        applied = next(n for n, e in enumerate(events) if e["type"] == "change_applied")
        after = [(e["type"], e["stage"]) for e in events[applied:]]
        assert ("stage_started", "capability-model") in after  # the later stage re-ran
        assert ("stage_completed", "verify-what") in after  # and the phase was verified again
        reruns = [e for e in events if e["type"] == "stage_started"]
        assert sum(1 for e in reruns if e["stage"] == "capability-model") == runs_before + 1

        page.get_by_role("button", name="Review Gate 2").click()
        expect(page.get_by_role("heading", name="Gate 2 · WHAT")).to_be_visible()
        expect(page.get_by_text("Change request applied to MVP scope").first).to_be_visible()
        expect(page.get_by_text(REQUEST).first).to_be_visible()
        expect(page.get_by_text("Re-run after the change request to MVP scope")).to_be_visible()
        revisions = page.get_by_test_id("stExpander").filter(
            has_text="MVP scope: 1 change request applied"
        )
        revisions.get_by_text("MVP scope: 1 change request applied").click()
        expect(revisions.get_by_text("Why: Reminders go out by SMS")).to_be_visible()
        expect(revisions.get_by_text(REQUEST)).to_be_visible()
        revisions.scroll_into_view_if_needed()
        shot("change-request-history")

        page.get_by_role("link", name="Stories", exact=True).click()
        expect(page.get_by_role("heading", name="Stories", exact=True)).to_be_visible()
        with page.expect_download() as got:
            page.get_by_role("button", name="Markdown").click()
        markdown = Path(got.value.path()).read_text("utf-8")
        assert "## Change requests" in markdown and REQUEST in markdown
        with page.expect_download() as got:
            page.get_by_role("button", name="JSON").click()
        exported = json.loads(Path(got.value.path()).read_text("utf-8"))
        (revision,) = exported["revisions"]
        assert revision["stage"] == "mvp-scope" and revision["request"] == REQUEST
        assert any(c["kind"] == "added" and "SCOPE-99" in c["where"] for c in revision["changes"])
