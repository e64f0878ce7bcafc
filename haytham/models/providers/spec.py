"""What a provider is: a :class:`ProviderSpec`, and the table of them a settings object reads.

One module per provider (``haytham/models/providers/<name>.py``) defines its ``SPEC``;
:mod:`haytham.models.providers.table` lists them. Everything else (the settings' validation and
defaults, the model factory, the status report, redaction, the evaluation judge and budget, the
CLIs and the provider page) reads the spec of ``settings.provider`` instead of switching on its
name.

The model layer sits below :mod:`haytham.config`: it reads the settings through the
:class:`ProviderSettings` protocol, which :class:`haytham.config.Settings` satisfies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from typing import Self

    from strands.models import Model

    from haytham.models.accounting import TextSink
    from haytham.models.replay import Cassette

TIERS: tuple[str, ...] = ("light", "heavy", "reasoning")
"""Model tiers: cheap/fast, the default workhorse, and the strongest reasoning model."""

MAX_OUTPUT_TOKENS: Mapping[str, int] = MappingProxyType(
    {"light": 4096, "heavy": 8192, "reasoning": 16000}
)
"""Output token cap per tier for providers that need one (Anthropic, Bedrock)."""

ProviderTable = Mapping[str, "ProviderSpec"]
"""Provider name -> its spec, in the order the report and the provider page list them."""


class ProviderSettings(Protocol):
    """What the model layer reads from the settings (:class:`haytham.config.Settings`)."""

    providers: ClassVar[ProviderTable]

    @property
    def provider(self) -> str:
        """The selected provider's name (a key of :attr:`providers`)."""

    @property
    def request_timeout(self) -> float:
        """Seconds one model request may take."""

    @property
    def context_window(self) -> int | None:
        """``HAYTHAM_CONTEXT_WINDOW``: tokens the model accepts, when set."""

    @property
    def max_retries(self) -> int:
        """Retries of a failed model call."""

    @property
    def retry_base_delay(self) -> float:
        """Seconds before the first retry (doubled each time)."""

    @property
    def provider_concurrency(self) -> int:
        """Model calls in flight per provider."""

    @property
    def record_to(self) -> Path | None:
        """A cassette every successful turn is appended to."""

    @property
    def cassette(self) -> Path | None:
        """The cassette the replay provider answers from."""

    @property
    def replay_latency(self) -> float:
        """Seconds each replayed call takes."""

    @property
    def openai_base_url(self) -> str | None:
        """``OPENAI_BASE_URL``: an OpenAI-compatible server."""

    @property
    def ollama_host(self) -> str | None:
        """``OLLAMA_HOST``: the Ollama server."""

    @property
    def llamacpp_base_url(self) -> str | None:
        """``HAYTHAM_LLAMACPP_URL``: a running llama-server."""

    @property
    def aws_profile(self) -> str | None:
        """``AWS_PROFILE``."""

    @property
    def aws_region(self) -> str | None:
        """``AWS_REGION`` (or ``AWS_DEFAULT_REGION``)."""

    @property
    def spec(self) -> ProviderSpec:
        """The selected provider's spec."""

    def model_id(self, tier: str) -> str:
        """The model id for ``tier``."""

    def secret(self, field: str) -> str | None:
        """The plain value of the credential ``field``, if set."""

    def updated(self, **changes: Any) -> Self:
        """A validated copy with ``changes``."""

    def credentials(self) -> dict[str, str]:
        """Variable name -> value of every credential that is set (for redaction)."""

    def endpoints(self) -> dict[str, str]:
        """Settings field -> every endpoint URL that is set (for redaction)."""

    def credential_patterns(self) -> tuple[str, ...]:
        """The shapes of every provider's keys (for redaction)."""


class ModelRuntimeLike(Protocol):
    """The per-process resources a provider's model may use (:class:`~haytham.models.factory.
    ModelRuntime`)."""

    def local_url(self) -> str:
        """Base URL of the shared local llama-server, started on first use."""

    def cassette(self, path: Path) -> Cassette:
        """The cassette at ``path``, loaded once per runtime."""


@dataclass(frozen=True)
class ModelRequest:
    """Everything a provider's :attr:`ProviderSpec.build` needs to make one Strands model."""

    settings: ProviderSettings
    tier: str
    agent: str
    runtime: ModelRuntimeLike
    window: int
    output_model: type[BaseModel] | None = None
    on_text: TextSink | None = None

    @property
    def model_id(self) -> str:
        """The model id for this request's tier."""
        return self.settings.model_id(self.tier)

    @property
    def timeout(self) -> float:
        """Seconds one request may take."""
        return self.settings.request_timeout


class ProviderStatus(BaseModel):
    """Whether one provider is usable here, why (not), and what to set or install."""

    name: str
    usable: bool
    reason: str
    env_vars: list[str]
    install: str | None


@dataclass(frozen=True)
class StatusCheck:
    """Where a status check looks: ``env`` is the real environment (boto's chain, ``HOME``);
    ``thorough`` allows slower checks (the full boto chain, loading the cassette)."""

    env: Mapping[str, str]
    thorough: bool


@dataclass(frozen=True)
class KeyField:
    """The credential a founder may type on the provider page."""

    field: str
    variable: str
    label: str


@dataclass(frozen=True)
class UrlField:
    """The endpoint a founder may set on the provider page (``required``: no default)."""

    field: str
    label: str
    default: str = ""
    required: str | None = None


def _no_cap(model: Model, settings: ProviderSettings) -> None:
    """Providers whose config takes no output cap."""


def _no_sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Providers whose sampling cannot be set."""
    return []


def _no_endpoint(settings: ProviderSettings) -> str | None:
    """The cloud SDKs' own endpoints, and the local server this process starts."""
    return None


@dataclass(frozen=True)
class ProviderSpec:
    """Everything about one provider, in one place.

    Attributes:
        name: What ``HAYTHAM_PROVIDER`` says.
        label: The provider page's one-line description.
        default_models: Tier -> model id, unless ``HAYTHAM_MODEL_<TIER>`` says otherwise.
        context_window: Tokens it accepts unless ``HAYTHAM_CONTEXT_WINDOW`` says otherwise.
        build: The raw Strands model for a request (no accounting wrapper).
        status: ``(usable, reason)`` here; ``reason`` is one plain sentence, redacted by the
            report.
        variables: The environment variables it reads (shown by ``haytham providers``).
        install: The command that installs its extra, if it has one.
        secret_fields: Settings fields holding its credentials.
        url_fields: Settings fields holding its endpoints (credentials in them are redacted).
        credential_patterns: Regular expressions of its keys' shape, redacted wherever they
            appear.
        credential_hint: What to check when the provider rejects the credentials.
        key: The credential the provider page lets a founder type.
        url: The endpoint the provider page lets a founder set.
        endpoint: The base URL its calls go to, where the settings name one.
        one_token: Cap a model's reply at one token (the connection check).
        sampling: Set ``(model, model_id, temperature, seed)`` where it can (evaluation
            judges); what it set, as short notes.
        caveat: Shown wherever its results are displayed.
        deterministic: Same request, same answer, by construction (replay).
        free: Costs nothing per token (runs here or on your own server).
        needs_key: Refuses to run without a credential.
        records: ``HAYTHAM_RECORD_TO`` may record its turns.
    """

    name: str
    label: str
    default_models: Mapping[str, str]
    context_window: int
    build: Callable[[ModelRequest], Model]
    status: Callable[[ProviderSettings, StatusCheck], tuple[bool, str]]
    variables: tuple[str, ...] = ()
    install: str | None = None
    secret_fields: tuple[str, ...] = ()
    url_fields: tuple[str, ...] = ()
    credential_patterns: tuple[str, ...] = ()
    credential_hint: str | None = None
    key: KeyField | None = None
    url: UrlField | None = None
    endpoint: Callable[[ProviderSettings], str | None] = _no_endpoint
    one_token: Callable[[Model, ProviderSettings], None] = _no_cap
    sampling: Callable[[Model, str, float, int], list[str]] = _no_sampling
    caveat: str | None = None
    deterministic: bool = False
    free: bool = False
    needs_key: bool = False
    records: bool = True

    def __post_init__(self) -> None:
        missing = sorted(set(TIERS) - set(self.default_models))
        if missing:
            raise ValueError(f"provider {self.name} has no default model for {missing}")


def provider_table(*specs: ProviderSpec) -> ProviderTable:
    """An immutable table of ``specs``, by name, in the order given."""
    return MappingProxyType({spec.name: spec for spec in specs})


def with_provider(table: ProviderTable, spec: ProviderSpec) -> ProviderTable:
    """``table`` with ``spec`` added (or replacing the one of the same name)."""
    return provider_table(*(s for s in table.values() if s.name != spec.name), spec)


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (found without importing it)."""
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str) -> None:
    """Raise :class:`~haytham.errors.ConfigError` when ``extra``'s package is not installed."""
    from haytham.errors import ConfigError

    try:
        __import__(module)
    except ImportError as error:
        raise ConfigError(
            f"The {extra} provider needs its extra: run pip install 'haytham[{extra}]'."
        ) from error


def merge_config(model: Model, section: str, values: dict[str, Any]) -> None:
    """Set ``values`` in one nested dict of the model's config (``params``, ``options``),
    keeping what it already holds."""
    config = dict(model.get_config() or {})
    model.update_config(**{section: {**(config.get(section) or {}), **values}})


def params_cap(model: Model, key: str = "max_tokens") -> None:
    """Cap the reply at one token in a model whose config holds request ``params``."""
    merge_config(model, "params", {key: 1})


def params_sampling(model: Model, temperature: float, seed: int | None) -> list[str]:
    """Set ``temperature`` (and ``seed``) in a model whose config holds request ``params``."""
    values: dict[str, Any] = {"temperature": temperature}
    notes = [f"temperature={temperature}"]
    if seed is not None:
        values["seed"] = seed
        notes.append(f"seed={seed}")
    merge_config(model, "params", values)
    return notes
