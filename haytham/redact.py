"""One redaction for every error message, event, log line and exception text.

Provider SDKs echo requests in their errors: headers, URLs with credentials, query strings. Such
text reaches ``events.jsonl``, ``status``, the terminal, logs and Burr's tracking. :func:`redact`
removes two kinds of secret before it is recorded or shown:

- **known values**: every environment variable whose name looks secret (``…KEY``, ``…TOKEN``,
  ``…SECRET``, ``…PASSWORD``, ``…CREDENTIAL``, ``…AUTH``) with a value of 8+ characters, and the
  credentials inside any configured base URL (``user:password@``) in plain and Basic-auth
  (base64) form, replaced by ``[NAME redacted]``;
- **credential shapes**, whatever their value: ``Authorization``/``x-api-key``/``api-key``
  headers, ``Bearer`` tokens, ``Basic`` credentials (only when they decode to ``user:password``),
  URL userinfo (``scheme://user:password@host``) and key-like query parameters.

Ordinary words survive: "Basic plan", "bearer of news", "the key insight".
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_URL_NAME = re.compile(r"URL|HOST|ENDPOINT", re.IGNORECASE)
_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key|apikey|x-auth-token)"
    r"(['\"]?\s*[:=]\s*['\"]?)"
    r"((?:bearer|basic|token)\s+)?"
    r"([^\s'\",;}&]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9\-._~+/]{8,}=*)")
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{6,}={0,2})")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,20}://)([^/\s@:]+:[^/\s@]+)@")
_QUERY = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|auth|password|secret|sig|signature)=)"
    r"([^&\s#'\"]+)"
)


def _known(environ: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(value, label) of every configured secret, longest first."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name):
            found.setdefault(value, f"[{name} redacted]")
        if _URL_NAME.search(name) and "@" in value:
            parts = urlsplit(value)
            if parts.password:
                label = f"[{name} credentials redacted]"
                user, password = unquote(parts.username or ""), unquote(parts.password)
                found.setdefault(password, label)
                found.setdefault(base64.b64encode(f"{user}:{password}".encode()).decode(), label)
    yield from sorted(found.items(), key=lambda kv: -len(kv[0]))


def _is_credentials(token: str) -> bool:
    try:
        decoded = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


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


def redact_tree(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v) for v in value]
    return value
