"""One redaction for every error message, event, log line and exception text.

Provider SDKs echo requests in their errors: headers, URLs with credentials, query strings. Such
text reaches ``events.jsonl``, ``status``, the terminal, logs and Burr's tracking. :func:`redact`
removes two kinds of secret before it is recorded or shown:

- **known values**: every environment variable whose name looks secret (``…KEY``, ``…TOKEN``,
  ``…SECRET``, ``…PASSWORD``, ``…CREDENTIAL``, ``…AUTH``) with a value of 8+ characters, the
  credentials the settings hold (also from ``.env`` only, via :func:`remember_settings`), and the
  credentials inside any configured base URL (``user:password@``: environment variables named
  ``…URL``/``…HOST``/``…ENDPOINT`` and the URL settings :func:`remember_settings` was given,
  which may come from ``.env`` only) in plain and Basic-auth (base64) form, replaced by
  ``[NAME redacted]``;
- **credential shapes**, whatever their value: the shapes of the providers' keys
  (``ProviderSpec.credential_patterns``, known through :func:`remember_settings`), ``Authorization``/``x-api-key``/``api-key``
  headers (also as ``('authorization', 'Bearer …')`` pairs), ``Bearer`` tokens, ``Basic``
  credentials (only when they decode to printable ``user:password``), URL userinfo
  (``scheme://user:password@host`` → ``scheme://[redacted]@host``) and key-like query
  parameters (``?key=``, ``api_key=``, ``token=``…).

Ordinary words survive: "Basic plan", "bearer of news", "the key insight".
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

E = TypeVar("E", bound=BaseException)
REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_URL_NAME = re.compile(r"URL|HOST|ENDPOINT", re.IGNORECASE)
_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key|apikey|x-auth-token)"
    r"(['\"]?\s*[:=]\s*(?:b?['\"])?|['\"]\s*,\s*b?['\"])"
    r"((?:bearer|basic|token)\s+)?"
    r"([^\s'\",;}&\\]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9\-._~+/]{8,}=*)")
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{6,}={0,2})")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,20}://)([^/?#\s@'\"<>\\]+)@")
_QUERY = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|(?:access|refresh|id|auth)?[_-]?token|auth|password|passwd"
    r"|secret|client[_-]?secret|sig|signature)=)"
    r"([^&\s#'\"\\]+)"
)
_SECRET_KEY = re.compile(
    r"(?i)(?:proxy-)?authorization|x-api-key|api[_-]?key|x-goog-api-key|x-auth-token"
    r"|(?:access|refresh|id|auth)[_-]?token|password|passwd|secret|client[_-]?secret"
)
_configured: dict[str, str] = {}  # value -> label, from remember_settings()
_shapes: dict[str, re.Pattern[str]] = {}  # providers' key shapes, from remember_settings()


class KnowsCredentials(Protocol):
    """What :func:`remember_settings` reads (:class:`haytham.config.Settings` has it)."""

    def credentials(self) -> dict[str, str]:
        """Variable name -> value of every credential that is set."""

    def endpoints(self) -> dict[str, str]:
        """Settings field -> every endpoint URL that is set."""

    def credential_patterns(self) -> tuple[str, ...]:
        """The shapes of the providers' keys (regular expressions)."""


def _url_secrets(url: str, label: str, found: dict[str, str]) -> None:
    """The password of ``url``'s userinfo (as written and decoded) and its Basic-auth form."""
    try:
        parts = urlsplit(url.strip())
        raw_user, raw_password = parts.username, parts.password
    except ValueError:
        return
    if not raw_password:
        return
    user, password = unquote(raw_user or ""), unquote(raw_password)
    for value in {raw_password, password}:
        if (
            len(value) >= 4
        ):  # shorter ones would blank ordinary text; the URL shape still hides them
            found.setdefault(value, label)
    for pair in {f"{user}:{password}", f"{raw_user or ''}:{raw_password}"}:
        found.setdefault(base64.b64encode(pair.encode()).decode(), label)


def remember_settings(settings: KnowsCredentials) -> None:
    """Know the credentials ``settings`` holds (API keys and AWS secrets from ``settings.
    credentials()``, and those in its endpoint URLs), which may come from ``.env`` and so be in
    no environment variable, and the shapes of its providers' keys, for every later
    :func:`redact`. Idempotent and cheap."""
    for name, value in settings.credentials().items():
        if len(value) >= 8 and _SECRET_NAME.search(name):
            _configured.setdefault(value, f"[{name} redacted]")
    for field, url in settings.endpoints().items():
        if "@" in url:
            _url_secrets(url, f"[{field} credentials redacted]", _configured)
    for pattern in settings.credential_patterns():
        if pattern not in _shapes:
            _shapes[pattern] = re.compile(pattern)


def _known(environ: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(value, label) of every configured secret, longest first."""
    found: dict[str, str] = dict(_configured)
    for name, value in environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name):
            found.setdefault(value, f"[{name} redacted]")
        if _URL_NAME.search(name) and "@" in value:
            _url_secrets(value, f"[{name} credentials redacted]", found)
    yield from sorted(found.items(), key=lambda kv: -len(kv[0]))


def _is_credentials(token: str) -> bool:
    """Whether ``token`` is base64 of printable ``user:password`` (a word like "planning"
    decodes to bytes, but not to that)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _bearer(match: re.Match[str]) -> str:
    token = match.group(2)
    secret = any(c.isdigit() for c in token) or len(token) >= 24
    return match.group(1) + REDACTED if secret else match.group(0)


def _basic(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED if _is_credentials(match.group(2)) else match.group(0)


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` without credentials (see the module docstring); other text is unchanged."""
    if not text:
        return text
    for value, label in _known(os.environ if environ is None else environ):
        if value in text:
            text = text.replace(value, label)
    for shape in tuple(_shapes.values()):
        text = shape.sub(REDACTED, text)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) or "") + REDACTED, text)
    text = _BEARER.sub(_bearer, text)
    text = _BASIC.sub(_basic, text)
    text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    return _QUERY.sub(lambda m: m.group(1) + REDACTED, text)


def carries_secret(error: BaseException) -> bool:
    """Whether ``error`` or anything it was raised from shows a credential."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = f"{current} {current.args!r}"
        if redact(text) != text:
            return True
        current = current.__cause__ or current.__context__
    return False


def scrubbed(error: E) -> E:
    """``error`` itself, its text arguments redacted and, when what it was raised from shows a
    credential, that chain cut (as ``raise … from None`` would): tracebacks (``--debug``, logs,
    Burr's tracking) then show nothing secret."""
    error.args = tuple(redact(a) if isinstance(a, str) else a for a in error.args)
    for attr in ("message", "detail"):
        value = getattr(error, attr, None)
        if isinstance(value, str):
            with contextlib.suppress(AttributeError, TypeError):
                setattr(error, attr, redact(value))
    for link in (error.__cause__, error.__context__):
        if link is not None and carries_secret(link):
            error.__cause__, error.__suppress_context__ = None, True
    return error


def redact_tree(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with every string redacted; a string under
    a credential-like key (``Authorization``, ``x-api-key``, ``api_key``, ``password``…) is
    replaced whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {
            k: REDACTED
            if isinstance(v, str) and v and isinstance(k, str) and _SECRET_KEY.fullmatch(k)
            else redact_tree(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_tree(v) for v in value]
    return value


def redact_json(line: str) -> str:
    """One serialized JSON value (an ``events.jsonl`` line) redacted as text, so shapes that
    span keys and values (``"Authorization": "Bearer …"``) are caught too; a redaction that
    would break the JSON keeps ``line`` (whose strings :func:`redact_tree` already cleaned)."""
    out = redact(line)
    if out == line:
        return line
    try:
        json.loads(out)
    except ValueError:
        return line
    return out
