"""Shared pieces for the UI tests (no tests here): AppTest against the real app, driven by the
replay provider through the environment, exactly as ``streamlit run`` would read it."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from haytham.app import make_service
from haytham.config import load_settings
from haytham.runs.service import Haytham

ROOT = Path(__file__).resolve().parent.parent
FRONTEND = ROOT / "frontend_streamlit"
APP = str(FRONTEND / "app.py")
POWER8 = ROOT / "tests" / "fixtures" / "cassettes" / "power_of_8"
PIPELINE_ONLY = POWER8 / "pipeline.jsonl"  # the stages' turns; no verifier turns
# The stages' and the verifiers' turns (a folder). With pipeline.jsonl alone, the phase verifiers
# that make_service wires are inconclusive, which blocks every gate until overridden.
CASSETTE = POWER8 / "full" if (POWER8 / "full").is_dir() else PIPELINE_ONLY
POWER8_IDEA = (ROOT / "tests" / "fixtures" / "ideas" / "power_of_8.md").read_text("utf-8")
TIMEOUT = 60  # the first run may import torch (sentence-transformers validators)


def ui_env(
    mp: pytest.MonkeyPatch, sessions: Path, cassette: Path = CASSETTE, provider: str = "replay"
) -> None:
    """Point the app at a sessions folder and the replay cassette, as the CLI flags would."""
    mp.setenv("HAYTHAM_PROVIDER", provider)
    mp.setenv("HAYTHAM_CASSETTE", str(cassette))
    mp.setenv("HAYTHAM_SESSIONS_DIR", str(sessions))
    mp.setenv("HAYTHAM_RETRY_DELAY", "0")
    mp.chdir(sessions.parent)  # no stray .env


def use_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Path | str) -> Path:
    """Set the environment for a test; returns its sessions folder."""
    root = tmp_path / "sessions"
    ui_env(monkeypatch, root, **kw)
    return root


def service() -> Haytham:
    """A service built like the app's, on the settings it reads (a second one, like another
    process): the same verifiers and validators."""
    return make_service(load_settings())


def session_at(gate: int | None, *, idea: str = POWER8_IDEA, sid: str = "p8") -> str:
    """A session waiting at ``gate`` (earlier gates auto-approved); ``None``: the finished run."""
    with service() as svc:
        svc.create_session(idea, session_id=sid)
        svc.run(sid, until=gate, auto_approve=gate != 1)
    return sid


def app(session_id: str | None = None, page: str | None = None) -> AppTest:
    """The app, optionally on ``page`` (e.g. ``views/gate_2.py``) with ``?session=``."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if session_id:
        at.query_params["session"] = session_id
    at.run()
    if page:
        at.switch_page(page)
        if session_id:
            at.query_params["session"] = session_id
        at.run()
    return at


def poll(at: AppTest, done: Callable[[AppTest], bool], timeout: float = TIMEOUT) -> AppTest:
    """Rerun the page (as the browser's refresh would) until ``done`` or the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        at.run()
        assert not at.exception, at.exception
        if done(at):
            return at
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; page shows {[t[:120] for t in texts(at)]}")
        time.sleep(0.2)


def texts(at: AppTest) -> list[str]:
    """Every message and markdown text on the page (for assertions and failure output)."""
    out: list[str] = []
    for kind in ("title", "markdown", "caption", "success", "info", "warning", "error"):
        out += [str(e.value) for e in getattr(at, kind)]
    return out


def shows(at: AppTest, needle: str) -> bool:
    return any(needle in t for t in texts(at))


def at_gate(gate: int) -> Callable[[AppTest], bool]:
    return lambda at: shows(at, f"Waiting at **Gate {gate}**")


def gates_json(sessions: Path, sid: str) -> dict:
    return json.loads((sessions / sid / "gates.json").read_text("utf-8"))


def cassette_entries() -> list[dict]:
    """Every recorded turn of :data:`CASSETTE` (a file, or a folder of ``*.jsonl``)."""
    files = sorted(CASSETTE.glob("*.jsonl")) if CASSETTE.is_dir() else [CASSETTE]
    return [
        json.loads(line)
        for f in files
        for line in f.read_text("utf-8").splitlines()
        if line.strip()
    ]


def write_cassette(path: Path, entries: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), "utf-8")
    return path


def cassette_without(tmp_path: Path, agent: str) -> Path:
    """:data:`CASSETTE` without ``agent``'s turns: a run misses at that stage."""
    entries = [e for e in cassette_entries() if e["agent"] != agent]
    return write_cassette(tmp_path / "partial.jsonl", entries)


def no_go_cassette(tmp: Path) -> Path:
    """The Power of 8 cassette with one failed knockout criterion: the verdict is NO-GO."""
    lines = []
    for entry in cassette_entries():
        if entry["agent"] == "validation-summary":
            for item in entry["response"]:
                if "tool" in item:
                    item["input"]["payload"]["knockout_criteria"][0]["passed"] = False
        lines.append(entry)
    return write_cassette(tmp / "no_go.jsonl", lines)


def option(radio, n: int) -> str:  # noqa: ANN001
    """The value of a radio's ``n``-th option: options show model text escaped (``md``), and
    ``set_value`` takes the value itself."""
    return re.sub(r"\\(.)", r"\1", radio.options[n])
