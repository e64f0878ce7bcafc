"""The local model shows it is alive and stops at once (issue 28), without the model itself:
a stand-in ``xllamacpp`` whose server "loads" for minutes, and a LocalServer whose child and
health check are stand-ins. The real model runs in ``test_local_first_progress`` (slow)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from haytham.models import llama_server
from haytham.models.llama_server import LocalServer, last_startup_seconds

ROOT = Path(__file__).resolve().parent.parent
FAKE_XLLAMACPP = """
import pathlib, time

class _Bag:
    def __init__(self):
        self.model = type("M", (), {})()
        self.cpuparams = type("C", (), {})()
        self.cpuparams_batch = type("C", (), {})()

def CommonParams():
    return _Bag()

class Server:
    def __init__(self, params):
        pathlib.Path(params.model.path).write_text("loading")
        time.sleep(120)  # a model that takes minutes to load
        self.listening_address = "nowhere"
"""


def _wait_for(condition, timeout: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_stop_while_the_model_loads_ends_the_server_within_2_s(tmp_path: Path) -> None:
    (tmp_path / "xllamacpp.py").write_text(FAKE_XLLAMACPP)
    marker = tmp_path / "model.gguf"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "haytham.models.llama_child", "--model", str(marker)]
    process = subprocess.Popen([*command, "--port", "9", "--parent-pid", str(os.getpid())], env=env)
    try:
        _wait_for(marker.exists)  # the child is inside the (stand-in) model load
        process.terminate()  # what Stop and Ctrl-C send: it ends mid-load, not after
        process.wait(timeout=1.5)
    finally:
        if process.poll() is None:
            process.kill()


def test_a_server_that_ignores_the_stop_is_killed_within_2_s() -> None:
    ignoring = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", ignoring])
    time.sleep(0.5)  # let it install the handler
    server = LocalServer()
    server._process = process  # the server this runtime started
    began = time.monotonic()
    server.stop()
    assert time.monotonic() - began < 2.0
    assert process.poll() is not None


def test_startup_is_reported_step_by_step_with_an_estimate_after_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    seen: list[str] = []
    server = LocalServer()

    def model_path() -> Path:
        seen.append(server.preparing().step)  # type: ignore[union-attr]
        return tmp_path / "model.gguf"

    def healthy(self: LocalServer) -> bool:
        step = self.preparing()
        assert step is not None and step.elapsed_s >= 0
        seen.append(step.step)
        return True

    monkeypatch.setattr(llama_server, "local_model_path", model_path)
    monkeypatch.setattr(
        llama_server,
        "server_command",
        lambda *a: [sys.executable, "-c", "import time; time.sleep(30)"],
    )
    monkeypatch.setattr(LocalServer, "_wait_healthy", healthy)
    assert server.preparing() is None and last_startup_seconds() is None
    try:
        server.url()
        assert seen == ["preparing the model file", "loading the model into memory"]
        assert server.preparing() is None  # ready: nothing to say any more
        assert last_startup_seconds() is not None  # the next start has an estimate
    finally:
        server.stop()


def test_the_run_page_words_for_a_starting_model() -> None:
    from frontend_streamlit.components.local_model import local_model_step
    from haytham.models.llama_server import StartupStep

    class Starting:
        def __init__(self, last: float | None) -> None:
            self.last = last

        def preparing(self) -> StartupStep:
            return StartupStep("loading the model into memory", 45.2, self.last)

    assert local_model_step(None) is None
    assert local_model_step(Starting(60.0)) == (
        "starting the local model: loading the model into memory (45 s of about 60 s last time)"
    )
    assert "no estimate before its first start here" in str(local_model_step(Starting(None)))


def test_stop_does_not_wait_for_a_start_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start holds the server's lock while the model loads; Stop must not queue behind it."""
    import threading

    from haytham.errors import ConfigError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(llama_server, "local_model_path", lambda: tmp_path / "model.gguf")
    monkeypatch.setattr(
        llama_server,
        "server_command",
        lambda *a: [sys.executable, "-c", "import time; time.sleep(60)"],
    )

    def loading(self: LocalServer) -> bool:  # until the process is gone, as the real check
        while self._process is not None and self._process.poll() is None:
            time.sleep(0.05)
        return False

    monkeypatch.setattr(LocalServer, "_wait_healthy", loading)
    server = LocalServer()
    failures: list[Exception] = []

    def start() -> None:
        try:
            server.url()
        except ConfigError as exc:
            failures.append(exc)

    starter = threading.Thread(target=start)
    starter.start()
    _wait_for(lambda: (s := server.preparing()) is not None and s.step.startswith("loading"))
    began = time.monotonic()
    server.stop()
    assert time.monotonic() - began < 2.0
    starter.join(10)
    assert not starter.is_alive() and failures  # the start ends with a sentence, no server
