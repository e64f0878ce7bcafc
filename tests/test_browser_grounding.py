"""An invented anchor entry in a real browser: the anchor quotes something the idea never says;
Gate 1 shows it as "not found in your idea" and asks about it, and Approve stays off until the
reviewer answers.

Replay provider (the Power of 8 recording with the anchor's first source quote replaced),
free localhost port, no network; Debian's Chromium. Screenshot ``gate-1-ungrounded`` lands in
``HAYTHAM_E2E_SHOTS`` when it names a folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from browser_helpers import BROWSER, CASSETTE, IDEA, Shots, browser_page, served

pytestmark = BROWSER
INVENTED = "open sign-up on the app store"


def _invented_cassette(tmp_path: Path) -> Path:
    files = sorted(CASSETTE.glob("*.jsonl")) if CASSETTE.is_dir() else [CASSETTE]
    entries = [json.loads(x) for f in files for x in f.read_text("utf-8").splitlines() if x]
    for entry in entries:
        if entry["agent"] == "anchor-extraction":
            for item in entry["response"]:
                if "input" in item:
                    item["input"]["invariants"][0]["source"] = INVENTED
    out = tmp_path / "invented.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in entries), "utf-8")
    return out


def test_an_ungrounded_invariant_is_asked_about_before_gate_1_opens(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    cassette = _invented_cassette(tmp_path)
    with served(tmp_path, cassette) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        page.goto(f"{server}/sessions")  # a page URL on a fresh server still gets the nav
        page.get_by_role("link", name="New idea").click()
        box = page.get_by_label("Your idea")
        box.fill(IDEA)
        box.press("Control+Enter")
        page.get_by_role("button", name="Start").click()
        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
        page.get_by_role("button", name="Review Gate 1").click()

        expect(page.get_by_text("not found in your idea").first).to_be_visible()
        question = page.get_by_text("What did you mean by access_model")
        expect(question.first).to_be_visible()
        approve = page.get_by_role("button", name="Approve Gate 1")
        expect(approve).to_be_disabled()
        shot("gate-1-ungrounded")
