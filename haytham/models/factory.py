"""Build the Strands model for a (provider, tier, agent), wrapped for accounting and retries.

Everything the app needs from the model layer goes through :func:`build_model`. Per-process
resources (the local ``llama-server``, loaded cassettes) live in a :class:`ModelRuntime`, created
once per CLI command or UI server and closed when it ends; there is no module-level state.

Agents built around these models should pass ``retry_strategy=None`` to ``strands.Agent`` so
retries happen only here (bounded by ``Settings.max_retries``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel
from strands.models import Model

from haytham.errors import ConfigError
from haytham.models.accounting import (
    AccountedModel,
    CallSink,
    ProgressSink,
    TextSink,
    estimate_tokens,
)
from haytham.models.limits import CallSlots, SharedCallSlots, Slots
from haytham.models.llama_server import LocalServer
from haytham.models.providers.spec import TIERS, ModelRequest, ProviderSettings
from haytham.models.providers.status import check_provider
from haytham.models.recording import RecordingModel
from haytham.models.replay import Cassette
from haytham.storage.backends import team_packages_missing

__all__ = ["ModelRuntime", "build_model", "context_window", "estimate_tokens"]


def context_window(settings: ProviderSettings) -> int:
    """Tokens the configured model accepts (input and output together), for overflow checks.

    For ``local`` this is also the ``-c`` the runtime passes to llama-server.
    """
    return settings.context_window or settings.spec.context_window


def call_slots(settings: ProviderSettings) -> Slots:
    """Provider call slots (:mod:`haytham.models.limits`): shared by every worker on the team
    database, else per process."""
    url = settings.secret("database_url")
    if url:
        try:
            from haytham.storage.postgres import Database  # psycopg only where a database is used
        except ImportError as exc:
            raise team_packages_missing(exc) from None
        return SharedCallSlots(settings.provider_concurrency, Database(url))
    return CallSlots(settings.provider_concurrency)


class ModelRuntime:
    """Per-process model resources: the local llama-server and loaded cassettes.

    Thread-safe; create one per CLI command (or one per Streamlit server, cached by the UI), share
    it between all agents, and close it (or use ``with``) to stop the server.
    """

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._server: LocalServer | None = None
        self._cassettes: dict[Path, Cassette] = {}
        self._closed = False
        self.slots = call_slots(settings)

    def local_url(self) -> str:
        """Base URL of the shared local llama-server, started on first use."""
        with self._lock:
            if self._closed:
                raise ConfigError("The model runtime was closed; start a new command.")
            if self._server is None:
                self._server = LocalServer(context_size=context_window(self.settings))
            server = self._server
        return server.url()

    @property
    def server(self) -> LocalServer | None:
        """The local server object, if one was created (for diagnostics and benchmarks)."""
        return self._server

    def cassette(self, path: Path) -> Cassette:
        """The cassette at ``path``, loaded once per runtime."""
        key = path.resolve()
        with self._lock:
            if key not in self._cassettes:
                self._cassettes[key] = Cassette.load(path)
            return self._cassettes[key]

    def close(self) -> None:
        """Stop the local server (if any). Idempotent."""
        with self._lock:
            self._closed = True
            server, self._server = self._server, None
            self._cassettes.clear()
        if server is not None:
            server.stop()

    def __enter__(self) -> ModelRuntime:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _provider_model(
    settings: ProviderSettings,
    tier: str,
    agent: str,
    runtime: ModelRuntime,
    output_model: type[BaseModel] | None = None,
    on_text: TextSink | None = None,
) -> Model:
    """The raw Strands model for the configured provider (no wrappers): its spec builds it."""
    window = context_window(settings)
    request = ModelRequest(settings, tier, agent, runtime, window, output_model, on_text)
    return settings.spec.build(request)


def build_model(
    settings: ProviderSettings,
    tier: str,
    agent: str,
    *,
    on_call: CallSink | None = None,
    on_progress: ProgressSink | None = None,
    on_text: TextSink | None = None,
    runtime: ModelRuntime | None = None,
    on_wait: Callable[[], None] | None = None,
    output_model: type[BaseModel] | None = None,
) -> Model:
    """A Strands model for ``settings.provider`` at ``tier``, for the agent named ``agent``.

    ``output_model`` names the structured output the agent will ask for; the local provider
    constrains decoding to that model's exact JSON schema.

    The result reports one :class:`~haytham.models.accounting.ModelCall` per call to ``on_call``
    (and, while a call streams, its estimated output tokens so far to ``on_progress``; once
    per attempt that has to wait for a provider slot, ``on_wait()``),
    retries transient failures (``settings.max_retries``, exponential backoff from
    ``settings.retry_base_delay``) and raises :class:`~haytham.errors.ProviderError` after the last
    attempt. With ``settings.record_to`` set, each successful turn is appended to that cassette.

    Pass the command's ``runtime`` so all agents share one local server and loaded cassettes;
    without one, a private runtime is created and closed when the model is garbage-collected.

    Raises:
        ConfigError: the provider is not installed or not configured (before any call is made).
    """
    if tier not in TIERS:
        raise ConfigError(f"Unknown model tier {tier!r}; use one of {', '.join(TIERS)}.")
    check_provider(settings)
    owned = runtime is None
    active = runtime or ModelRuntime(settings)
    spec = settings.spec
    inner = _provider_model(settings, tier, agent, active, output_model, on_text)
    if settings.record_to is not None and spec.records:
        inner = RecordingModel(inner, agent, settings.record_to)
    model = AccountedModel(
        inner,
        provider=settings.provider,
        model_id=settings.model_id(tier),
        tier=tier,
        agent=agent,
        on_call=on_call,
        on_progress=on_progress,
        max_retries=settings.max_retries,
        retry_base_delay=settings.retry_base_delay,
        slots=active.slots,
        on_wait=on_wait,
        endpoint=spec.endpoint(settings),
        on_text=on_text,
        credential_hint=spec.credential_hint,
    )
    if owned:
        weakref.finalize(model, active.close)
    return model
