"""One real-browser run: Debian's Chromium drives the app served by ``streamlit run``.

Type an idea, resolve the clarification at Gate 1, approve it, and see the WHAT phase's
progress. Replay provider, free localhost port, no network. A screenshot lands in the test's
tmp dir on failure (and one per step when ``HAYTHAM_E2E_SHOTS`` names a folder).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
POWER8 = ROOT / "tests" / "fixtures" / "cassettes" / "power_of_8"
# the stages' and the phase verifiers' turns (pipeline.jsonl alone leaves verification
# inconclusive, which blocks Gate 1 until overridden)
CASSETTE = POWER8 / "full" if (POWER8 / "full").is_dir() else POWER8 / "pipeline.jsonl"
IDEA = (ROOT / "tests" / "fixtures" / "ideas" / "power_of_8.md").read_text("utf-8").strip()
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 30_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed at "
        "/usr/bin/chromium (make browser installs it); no browser is downloaded",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "HAYTHAM_PROVIDER": "replay",
        "HAYTHAM_CASSETTE": str(CASSETTE),
        "HAYTHAM_SESSIONS_DIR": str(tmp_path / "sessions"),
        "HAYTHAM_RETRY_DELAY": "0",
    }
    streamlit = Path(sys.executable).parent / "streamlit"
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [
            str(streamlit),
            "run",
            str(ROOT / "frontend_streamlit" / "app.py"),
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start: {(tmp_path / 'streamlit.log').read_text()}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_idea_clarify_approve_next_phase(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    shots = Path(os.environ["HAYTHAM_E2E_SHOTS"]) if os.environ.get("HAYTHAM_E2E_SHOTS") else None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(WAIT_MS)
        expect.set_options(timeout=WAIT_MS)  # the first load imports the pipeline

        def shot(name: str) -> None:
            if shots:
                shots.mkdir(parents=True, exist_ok=True)
                page.set_viewport_size({"width": 1400, "height": 2600})  # the app scrolls inside
                page.screenshot(path=str(shots / f"{name}.png"))
                page.set_viewport_size({"width": 1400, "height": 1000})

        try:
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
            expect(page.get_by_text("5 / 11 stages")).to_be_visible()
            shot("2-run-gate-1")
            page.get_by_role("button", name="Review Gate 1").click()

            expect(page.get_by_text("Clarification needed")).to_be_visible()
            expect(page.get_by_text("60% confident")).to_be_visible()
            expect(page.get_by_role("button", name="Approve Gate 1")).to_be_disabled()
            shot("3-gate-1-clarify")
            page.get_by_text("Synchronous live sessions - all eight present at once").click()
            page.get_by_text("Video/audio call (like Zoom)").click()
            page.get_by_role("button", name="Confirm clarifications").click()
            expect(page.get_by_text("Clarified 2 invariant(s)")).to_be_visible()
            expect(page.get_by_text("Clarification needed")).to_have_count(0)
            shot("4-gate-1-clarified")
            approve = page.get_by_role("button", name="Approve Gate 1")
            expect(approve).to_be_enabled()
            approve.click()

            expect(page.get_by_role("heading", name="Run")).to_be_visible()
            expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()
            expect(page.get_by_text("7 / 11 stages")).to_be_visible()  # MVP scope, capabilities
            shot("5-run-gate-2")
            page.get_by_role("button", name="Review Gate 2").click()
            expect(page.get_by_role("heading", name="Gate 2 · WHAT")).to_be_visible()
            page.get_by_text("5. MVP scope", exact=True).click()  # outputs load when opened
            expect(page.get_by_role("heading", name="The one thing")).to_be_visible()
            shot("6-gate-2")
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
