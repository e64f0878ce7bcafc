"""Shared pieces of the real-browser tests: Debian's Chromium drives ``streamlit run``.

``served(tmp_path)`` starts the app on a free localhost port with the replay provider (the
Power of 8 cassette by default); ``browser_page()`` opens Chromium (never a downloaded
browser); ``Shots`` saves a screenshot per step when ``HAYTHAM_E2E_SHOTS`` names a folder.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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

BROWSER = [
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


@contextlib.contextmanager
def served(
    tmp_path: Path, cassette: Path = CASSETTE, port: int | None = None, **env: str
) -> Iterator[str]:
    """The app's URL, served with the replay provider from ``tmp_path`` (extra ``env`` vars;
    ``port``: a port chosen beforehand, e.g. named in a sign-in redirect URI)."""
    port = port or _free_port()
    env = {
        **os.environ,
        "HAYTHAM_PROVIDER": "replay",
        "HAYTHAM_CASSETTE": str(cassette),
        "HAYTHAM_SESSIONS_DIR": str(tmp_path / "sessions"),
        "HAYTHAM_RETRY_DELAY": "0",
        "HAYTHAM_INTAKE": "off",  # the recorded cassettes have no intake turn
        **env,
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


@contextlib.contextmanager
def browser_page(tmp_path: Path) -> Iterator[Any]:
    """A Chromium page (1400×1000); a full-page screenshot lands in ``tmp_path`` on failure."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(WAIT_MS)
        expect.set_options(timeout=WAIT_MS)  # the first load imports the pipeline
        try:
            yield page
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()


class Shots:
    """``shot(name)``: a tall screenshot into ``HAYTHAM_E2E_SHOTS`` (if set) — docs/ui.md's."""

    def __init__(self, page: Any) -> None:
        folder = os.environ.get("HAYTHAM_E2E_SHOTS")
        self.page, self.folder = page, Path(folder) if folder else None

    def __call__(self, name: str) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self.page.set_viewport_size({"width": 1400, "height": 2600})  # the app scrolls inside
        self.page.screenshot(path=str(self.folder / f"{name}.png"))
        self.page.set_viewport_size({"width": 1400, "height": 1000})


def wait_until(condition: Callable[[], bool], *, timeout: float = 60, what: str = "") -> None:
    """Wait for ``condition()`` to hold (a server-side effect of a click), polling; fail after
    ``timeout`` seconds (generous: the machine may be busy)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout:.0f} s: {what or condition}")
        time.sleep(0.2)
