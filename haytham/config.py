"""Settings: which model provider to use and how, read from CLI flags, the environment and `.env`.

Precedence, lowest to highest: built-in defaults < `.env` file < process environment < explicit
overrides (CLI flags; ``None`` means "not given").

Secrets are deliberately *not* part of :class:`Settings`: API keys stay in ``os.environ`` and are read
only when a provider client is built (see :mod:`haytham.models.providers`), so a ``Settings`` object can
be logged or written into a session file without leaking anything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from haytham.errors import ConfigError

PROVIDERS: tuple[str, ...] = (
    "local",
    "anthropic",
    "bedrock",
    "openai",
    "ollama",
    "llamacpp",
    "replay",
)
"""Every provider name :func:`haytham.models.factory.build_model` understands."""

TIERS: tuple[str, ...] = ("light", "heavy", "reasoning")
"""Model tiers: cheap/fast, the default workhorse, and the strongest reasoning model."""

LOCAL_MODEL_ID = "gemma-3-270m-q4_k_m"
"""Model id reported for the bundled local model (the GGUF served by llama-server)."""

DEFAULT_MODEL_IDS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "local": MappingProxyType(dict.fromkeys(TIERS, LOCAL_MODEL_ID)),
        "anthropic": MappingProxyType(
            {
                "light": "claude-haiku-4-5",
                "heavy": "claude-sonnet-4-6",
                "reasoning": "claude-opus-4-6",
            }
        ),
        "bedrock": MappingProxyType(
            {
                "light": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
                "heavy": "global.anthropic.claude-sonnet-4-6",
                "reasoning": "global.anthropic.claude-opus-4-6-v1",
            }
        ),
        "openai": MappingProxyType(
            {"light": "gpt-5-mini", "heavy": "gpt-5.1", "reasoning": "gpt-5.1"}
        ),
        "ollama": MappingProxyType(
            {"light": "llama3.2:3b", "heavy": "qwen3:8b", "reasoning": "qwen3:14b"}
        ),
        "llamacpp": MappingProxyType(dict.fromkeys(TIERS, "default")),
        "replay": MappingProxyType(dict.fromkeys(TIERS, "replay")),
    }
)
"""Per-provider default model id for each tier; ``HAYTHAM_MODEL_<TIER>`` overrides them."""

# Environment variable -> Settings field. Nothing secret is ever listed here.
ENV_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "HAYTHAM_PROVIDER": "provider",
        "HAYTHAM_MODEL_LIGHT": "model_light",
        "HAYTHAM_MODEL_HEAVY": "model_heavy",
        "HAYTHAM_MODEL_REASONING": "model_reasoning",
        "HAYTHAM_SESSIONS_DIR": "sessions_dir",
        "HAYTHAM_CASSETTE": "cassette",
        "HAYTHAM_RECORD_TO": "record_to",
        "OPENAI_BASE_URL": "openai_base_url",
        "OLLAMA_HOST": "ollama_host",
        "HAYTHAM_LLAMACPP_URL": "llamacpp_base_url",
        "HAYTHAM_CONTEXT_WINDOW": "context_window",
        "HAYTHAM_MAX_RETRIES": "max_retries",
        "HAYTHAM_RETRY_DELAY": "retry_base_delay",
        "HAYTHAM_REQUEST_TIMEOUT": "request_timeout",
        "HAYTHAM_SEARCH_URL": "search_url",
    }
)
"""Environment variables read by :func:`load_settings` and the field each one sets."""

SECRET_ENV_VARS: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
)
"""Credential variables a `.env` file may provide; they go to ``os.environ``, never into Settings."""


class Settings(BaseModel):
    """Immutable run configuration: provider, model ids per tier, paths and retry policy.

    One instance is built per CLI command (or UI server) by :func:`load_settings` and passed down;
    it holds no secrets, so it is safe to log or persist.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = "local"
    model_light: str | None = None
    model_heavy: str | None = None
    model_reasoning: str | None = None
    sessions_dir: Path = Path("sessions")
    cassette: Path | None = None
    record_to: Path | None = None
    openai_base_url: str | None = None
    ollama_host: str | None = None
    llamacpp_base_url: str | None = None
    context_window: int | None = None
    max_retries: int = 3
    retry_base_delay: float = 1.0
    request_timeout: float = 120.0
    search_url: str | None = None  # a SearXNG-compatible JSON search endpoint; None = offline

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in PROVIDERS:
            raise ValueError(f"unknown provider {value!r}; choose one of {', '.join(PROVIDERS)}")
        return value

    @field_validator("max_retries")
    @classmethod
    def _non_negative_retries(cls, value: int) -> int:
        if value < 0:
            raise ValueError("max_retries must be 0 or more")
        return value

    @field_validator("retry_base_delay", "request_timeout")
    @classmethod
    def _non_negative_float(cls, value: float) -> float:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value

    @field_validator("context_window")
    @classmethod
    def _positive_window(cls, value: int | None) -> int | None:
        if value is not None and value < 512:
            raise ValueError("context_window must be at least 512 tokens")
        return value

    def model_id(self, tier: str) -> str:
        """Return the model id to use for ``tier`` ("light", "heavy" or "reasoning").

        An explicit ``model_<tier>`` setting wins; otherwise the provider's default for that tier.
        """
        if tier not in TIERS:
            raise ConfigError(f"Unknown model tier {tier!r}; use one of {', '.join(TIERS)}.")
        override = getattr(self, f"model_{tier}")
        return override or DEFAULT_MODEL_IDS[self.provider][tier]


_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a small ``.env`` file: ``KEY=VALUE`` lines, ``#`` comments, optional quotes.

    Missing files give an empty mapping. Malformed lines are ignored (like most .env readers);
    values in single or double quotes keep everything inside the quotes, unquoted values end at
    `` #``.
    """
    if not path.is_file():
        return {}
    values: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _DOTENV_LINE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace('\\"', '"')
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        values[key] = value
    return values


def load_settings(
    env: Mapping[str, str] | None = None,
    dotenv: Path | None = Path(".env"),
    **overrides: Any,
) -> Settings:
    """Build :class:`Settings` from `.env`, the environment and explicit overrides.

    Args:
        env: Environment to read; ``None`` means ``os.environ``.
        dotenv: `.env` file to read first (lowest precedence); ``None`` skips it.
        **overrides: Settings fields from CLI flags; a ``None`` value means "not given".

    When ``env`` is the real process environment, credential variables found only in `.env`
    (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``AWS_*``) are exported to ``os.environ`` without
    overwriting anything, so provider SDKs find them; they are never stored in Settings. So are
    the other ``HAYTHAM_*`` variables of `.env` (verifier, validator and input-validation
    switches such as ``HAYTHAM_BLOCKING_VALIDATORS``), which their modules read from the
    environment.

    Raises:
        ConfigError: a value cannot be used (names the variable or flag).
    """
    use_process_env = env is None
    environ: Mapping[str, str] = os.environ if env is None else env
    file_values = read_dotenv(dotenv) if dotenv is not None else {}

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for layer_name, layer in ((str(dotenv), file_values), ("environment", environ)):
        for var, field in ENV_FIELDS.items():
            raw = layer.get(var)
            if raw is not None and raw.strip() != "":
                values[field] = raw.strip()
                sources[field] = f"{var} (from {layer_name})"

    unknown = sorted(set(overrides) - set(Settings.model_fields))
    if unknown:
        raise TypeError(f"load_settings() got unknown settings: {', '.join(unknown)}")
    for field, value in overrides.items():
        if value is not None:
            values[field] = value
            sources[field] = f"the {field.replace('_', '-')} option"

    try:
        settings = Settings(**values)
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "settings"
        where = sources.get(field, field)
        raise ConfigError(f"Invalid value for {where}: {first['msg']}.") from None

    if use_process_env:
        for var, value in file_values.items():
            exported = var in SECRET_ENV_VARS or (
                var.startswith("HAYTHAM_") and var not in ENV_FIELDS
            )
            if exported and value and var not in os.environ:
                os.environ[var] = value
    return settings
