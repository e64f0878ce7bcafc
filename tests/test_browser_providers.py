"""A provider chosen in a real browser runs the next session, and its key is written nowhere.

The server starts on the replay provider. In Chromium, the Model provider page picks an
OpenAI-compatible server (a fake one on a free localhost port that rejects every key with a
401 quoting it, as real providers do) with a made-up key, tests the connection, applies it, and
starts a session from New idea. The fake server sees the key on both calls; afterwards neither
the sessions folder (every file, state.db and Burr's tracking included), nor the events, nor the
Streamlit server log holds it. Screenshot ``providers`` lands in ``HAYTHAM_E2E_SHOTS``.
"""

from __future__ import annotations

import json
from pathlib import Path

from browser_helpers import BROWSER, IDEA, Shots, browser_page, served
from fake_openai import fake_openai

pytestmark = BROWSER
KEY = "sk-haytham-browser-only-5e3c1a9f7b2d4e6f"


def _holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_key_typed_in_the_browser_runs_the_next_session_and_is_stored_nowhere(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    with (
        fake_openai() as provider,
        served(tmp_path, HAYTHAM_INTAKE="off") as server,
        browser_page(tmp_path) as page,
    ):
        shot = Shots(page)
        page.goto(f"{server}/providers")
        expect(page.get_by_text("New sessions from here run on:")).to_be_visible()
        expect(page.get_by_text("never written to disk")).to_be_visible()
        page.get_by_role("combobox", name="Provider").click()
        page.get_by_role("option", name="openai: OpenAI, or any OpenAI-compatible").click()
        url = page.get_by_label("Base URL (leave empty for api.openai.com)")
        url.fill(provider.url)
        url.press("Enter")
        key = page.get_by_label("API key", exact=True)
        key.fill(KEY)
        key.press("Enter")

        page.get_by_role("button", name="Test connection").click()
        expect(page.get_by_text("credentials rejected (HTTP 401)")).to_be_visible()
        expect(page.get_by_text("[OPENAI_API_KEY redacted]").first).to_be_visible()
        assert KEY not in page.locator("body").inner_text()  # shown nowhere (the field hides it)
        shot("providers")

        page.get_by_role("button", name="Use for new sessions").click()
        expect(page.get_by_text("New sessions you start from this browser session")).to_be_visible()
        expect(page.get_by_text("(chosen on this page)")).to_be_visible()

        page.get_by_role("link", name="New idea").click()  # same browser session: no reload
        expect(page.get_by_role("heading", name="New idea")).to_be_visible()
        expect(page.get_by_text("Provider:").locator("..")).to_contain_text("openai")
        box = page.get_by_label("Your idea")
        box.fill(IDEA)
        box.press("Control+Enter")
        page.get_by_role("button", name="Start").click()
        stopped = page.get_by_text("The run stopped")
        expect(stopped).to_be_visible()
        expect(stopped).to_contain_text("credentials rejected (HTTP 401)")
        expect(stopped).to_contain_text("[OPENAI_API_KEY redacted]")
        assert KEY not in page.content()  # this page has no key field

    # the session ran on the key typed in the browser: the provider saw it, on every call
    assert len(provider.authorizations) >= 2
    assert set(provider.authorizations) == {f"Bearer {KEY}"}
    sessions = tmp_path / "sessions"
    [log] = sessions.glob("*/events.jsonl")
    events = [json.loads(line) for line in log.read_text("utf-8").splitlines() if line]
    calls = [e["data"] for e in events if e["type"] == "model_call"]
    assert calls and {c["provider"] for c in calls} == {"openai"}
    assert "[OPENAI_API_KEY redacted]" in log.read_text("utf-8")  # the 401 quoted it
    assert list(sessions.rglob("state.db")), "no state.db to search"
    for needle in (KEY.encode(), KEY[10:].encode()):
        assert _holding(sessions, needle) == []
        assert needle not in (tmp_path / "streamlit.log").read_bytes()
        assert _holding(tmp_path, needle) == []
