"""A fork in a real browser: from Sessions, fork a session waiting at Gate 2 from the capability
model; the fork opens on its own with its inherited steps shown done and runs on to Gate 2.

Replay provider, free localhost port, no network; Debian's Chromium. Screenshots (``fork``,
``run-progress``) land in ``HAYTHAM_E2E_SHOTS`` when it names a folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_helpers import BROWSER, CASSETTE, IDEA, Shots, browser_page, served

pytestmark = BROWSER


def _parent_at_gate_2(sessions: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A session waiting at Gate 2, made by a service like the app's (the same folder)."""
    from haytham.app import make_service
    from haytham.config import load_settings

    monkeypatch.setenv("HAYTHAM_PROVIDER", "replay")
    monkeypatch.setenv("HAYTHAM_CASSETTE", str(CASSETTE))
    monkeypatch.setenv("HAYTHAM_SESSIONS_DIR", str(sessions))
    monkeypatch.setenv("HAYTHAM_RETRY_DELAY", "0")
    with make_service(load_settings()) as svc:
        svc.create_session(IDEA, session_id="parent")
        svc.run("parent", until=2, auto_approve=True)
    return "parent"


def test_a_fork_opens_with_its_inherited_steps_done_and_runs_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    parent = _parent_at_gate_2(tmp_path / "sessions", monkeypatch)
    with served(tmp_path) as server, browser_page(tmp_path) as page:
        shot = Shots(page)
        page.goto(f"{server}/sessions?session={parent}")
        expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
        expect(page.get_by_role("button", name="Deploy")).to_have_count(0)  # viewer toolbar
        page.get_by_text("Fork from a stage").click()
        option = page.get_by_role("option", name="6. Capability model")
        for _ in range(5):  # on a busy machine the first click may land before the list opens
            page.get_by_label("Redo from").click()
            try:
                option.wait_for(state="visible", timeout=10_000)
                break
            except Exception:  # noqa: BLE001 — playwright's TimeoutError: open it again
                page.keyboard.press("Escape")
        option.click()
        page.get_by_role("button", name="Fork", exact=True).click()

        # the fork opens on its own, on the Run page, and runs without a Resume
        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text(f"Forked from {parent}: 6 steps inherited")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()
        expect(
            page.get_by_text("7 / 11 steps done (10 stages + the concept anchor)")
        ).to_be_visible()
        url = page.url
        assert "session=" in url and f"session={parent}" not in url
        shot("fork")
        shot("run-progress")

        # the Sessions picker is on the fork now, and the table says where it came from
        page.get_by_role("link", name="Sessions").click()
        expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
        fork_id = url.split("session=", 1)[1].split("&", 1)[0]
        expect(page.get_by_role("link", name="Open in a new tab")).to_have_attribute(
            "href", f"./run?session={fork_id}"
        )
