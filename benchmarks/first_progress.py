"""Benchmark a founder's first minute on the local default model, in a real browser (issue 28).

Usage: ``.venv/bin/python benchmarks/first_progress.py [--stream-timeout 900] [--shots DIR]
[--fresh-model]``
(needs ``pip install 'haytham[local]'`` and Debian's Chromium at ``/usr/bin/chromium``).

A ``streamlit run`` server on the local provider (intake on, as shipped) in a temporary
folder; Chromium types the Power of 8 idea and presses Start. Measured:

- ``first_change_s``: Start → the Run page shows the run alive (its "Running" box, which names
  the local model's startup step while it loads); the target is 5 s;
- ``model_bytes_s``: Start → the page counts the bytes of the model file being assembled or
  read ("preparing the model file: 120 of 253 MB"); mostly with ``--fresh-model`` (reading an
  assembled file takes a fraction of a second, often between two refreshes of the page);
- ``first_live_s``: Start → the page shows what the model does inside a stage (the local
  model's reading of its prompt, "is reading its prompt: 1,200 of 4,800 tokens", or its text);
- ``first_text_s``: Start → the text a step is writing is on the page (it streams; the first
  step is intake, which reads the idea);
- ``analysis_text_s``: Start → the text idea analysis (stage 1) is writing is on the page;
- ``stop_s``: Ctrl-C (SIGINT) to the Streamlit server → the local model's server process is
  gone; the target is 2 s.

The machine's load average is printed with the figures (they depend on it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "frontend_streamlit" / "app.py"
IDEA = (ROOT / "tests" / "fixtures" / "ideas" / "power_of_8.md").read_text("utf-8").strip()
CHROMIUM = Path("/usr/bin/chromium")
CHILD = "haytham.models.llama_child"
SHOTS = {
    "model_bytes_s": "local-model-bytes.png",
    "first_live_s": "local-prompt-progress.png",
    "first_text_s": "local-streaming.png",
    "analysis_text_s": "local-idea-analysis-streaming.png",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_servers(parent: int) -> list[int]:
    """The local model server processes started by ``parent`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if (
            CHILD in words
            and "--parent-pid" in words
            and words[words.index("--parent-pid") + 1] == str(parent)
        ):
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


SEEN = {  # figure: what the page shows then (each is timed from Start the first time it shows)
    "model_bytes_s": re.compile(r"the model file: [\d.,]+ of [\d,]+ MB"),
    "first_live_s": re.compile("is reading its prompt|is writing:"),
    "first_text_s": re.compile("is writing:"),
    "analysis_text_s": re.compile("Idea analysis is writing:"),
}


def _watch(page: Any, began: float, timeout: float, shots: Path | None) -> dict[str, Any]:
    """Look at the page every 0.1 s until idea analysis's text shows (or ``timeout`` seconds
    from Start): the first time each of :data:`SEEN` shows, from Start; ``None`` if never."""
    seen: dict[str, Any] = dict.fromkeys(SEEN)
    while seen["analysis_text_s"] is None and time.monotonic() - began < timeout:
        for key, shown in SEEN.items():
            if seen[key] is None and page.get_by_text(shown).first.is_visible():
                seen[key] = round(time.monotonic() - began, 2)
                if shots and key in SHOTS:
                    page.screenshot(path=str(shots / SHOTS[key]))
        time.sleep(0.1)
    if seen["analysis_text_s"] is None:  # the stop is measured anyway
        seen["not_within_s"] = timeout
    return seen


def measure(
    folder: Path,
    stream_timeout: float = 900.0,
    shots: Path | None = None,
    *,
    fresh_model: bool = False,
) -> dict:
    """Start the app on the local provider in ``folder``, press Start in Chromium and measure;
    returns the figures (seconds) and the load average they ran under. ``fresh_model``: as on a
    founder's first run, the model file is assembled from the installed package first (an empty
    cache folder in ``folder``) and no earlier start gives an estimate."""
    from playwright.sync_api import expect, sync_playwright

    port = _free_port()
    env = {
        **os.environ,
        "HAYTHAM_PROVIDER": "local",
        "HAYTHAM_SESSIONS_DIR": str(folder / "sessions"),
        "HAYTHAM_INTAKE": "on",
    }
    if fresh_model:
        env["XDG_CACHE_HOME"] = str(folder / "cache")
    command = [
        str(Path(sys.executable).parent / "streamlit"),
        "run",
        str(APP),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    log = (folder / "streamlit.log").open("w")
    server = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    figures: dict[str, Any] = {"load_average": os.getloadavg(), "cpus": os.cpu_count()}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("streamlit did not start") from None
                time.sleep(0.3)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{url}/sessions")
            page.get_by_role("link", name="New idea").click()
            box = page.get_by_label("Your idea")
            box.fill(IDEA)
            box.press("Control+Enter")
            began = time.monotonic()
            page.get_by_role("button", name="Start").click()
            expect(page.get_by_text("Running ·").first).to_be_visible(timeout=60_000)
            figures["first_change_s"] = round(time.monotonic() - began, 2)
            if shots:
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shots / "local-first-seconds.png"))
            figures.update(_watch(page, began, stream_timeout, shots))
            browser.close()
        children = model_servers(server.pid)
        figures["model_servers"] = len(children)
        stopped = time.monotonic()
        server.send_signal(signal.SIGINT)  # Ctrl-C
        while any(_alive(pid) for pid in children) and time.monotonic() - stopped < 30:
            time.sleep(0.05)
        figures["stop_s"] = round(time.monotonic() - stopped, 2)
    finally:
        if server.poll() is None:
            server.kill()
        log.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stream-timeout", type=float, default=900.0)
    parser.add_argument("--shots", type=Path, default=None)
    parser.add_argument(
        "--fresh-model",
        action="store_true",
        help="assemble the model file first, as on a first run (a fresh cache folder)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = measure(
            Path(folder), args.stream_timeout, args.shots, fresh_model=args.fresh_model
        )
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
