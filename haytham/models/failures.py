"""What we know about provider *failures*, whatever the provider.

:func:`classify_error` (retry or not), :func:`unreachable_reason` (a connection that no retry
would fix) and :func:`surfacing` (keeping typed errors visible through Strands' event loop).
"""

from __future__ import annotations

import asyncio
import socket

from strands.types.exceptions import EventLoopException, ModelThrottledException

from haytham.errors import CassetteMiss, ConfigError, HaythamError, ProviderError
from haytham.safety.redact import redact

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
