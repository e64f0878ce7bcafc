"""JSON read under caps, checked while the bytes stream in: a received file can make the reader
refuse, never make it use unbounded memory, time or stack.

:func:`load_bounded` reads a binary stream in chunks and builds the value without recursion.
Every cap is checked as the data arrives, before the part that breaks it is kept: the bytes read,
the nesting depth, the length of one string (as written, escapes included), the count of values,
the entries of chosen containers (by path), and each key of chosen objects (by path, through a
caller's check). Anything over a cap raises :class:`OverCap`; anything that is not JSON raises
:class:`NotJson`; both carry one sentence.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

CHUNK = 256 * 1024
MAX_SCALAR = 400  # characters of one number or literal
_WS = re.compile(r"[ \t\n\r]*")
# after the blanks (_WS, matched first, so no pattern scans a run of blanks twice): punctuation
# (1), a number: its integer part (2) and fraction or exponent (3), a literal (4), or a string's
# opening quote
_TOKEN = re.compile(
    r"(?:([{}\[\],:])|(-?(?:0|[1-9][0-9]*))((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r'|(true|false|null)|")'
)
_LITERALS = {"true": True, "false": False, "null": None}
ITEM = "[]"  # a list item's step in a path
Path = tuple[str, ...]


class OverCap(ValueError):
    """The data breaks one of the caps (the message names which, in one sentence)."""


class NotJson(ValueError):
    """The data is not JSON (the message says where, in one sentence)."""


@dataclass(frozen=True)
class Caps:
    """What one read may hold. ``items`` caps the entries of the containers at the given paths
    (keys of objects, ``ITEM`` for any list item); ``check_key`` sees every key of the objects
    at ``keyed`` paths as it arrives and raises to refuse it."""

    max_bytes: int
    max_depth: int
    max_string: int
    max_values: int
    items: Mapping[Path, int] = field(default_factory=dict)
    keyed: frozenset[Path] = frozenset()
    check_key: Callable[[Path, str], None] | None = None


class _Reader:
    """Tokens of a UTF-8 byte stream, holding at most one pending token plus one chunk."""

    def __init__(self, fh: BinaryIO, caps: Caps, chunk: int) -> None:
        self.fh = fh
        self.chunk = chunk
        self.caps = caps
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.read = 0

    def more(self) -> bool:
        """Read one more chunk into the buffer (dropping what was consumed); False at the end."""
        if self.eof:
            return False
        chunk = self.fh.read(self.chunk)
        self.read += len(chunk)
        if self.read > self.caps.max_bytes:
            raise OverCap(f"it is larger than {self.caps.max_bytes:,} bytes")
        try:
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise NotJson(f"it is not UTF-8 text ({exc.reason})") from None
        if not chunk:
            self.eof = True
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return bool(chunk) or bool(text)

    def token(self) -> tuple[str, Any] | None:
        """The next token: ``("p", char)``, ``("s", text)`` or ``("v", value)``; None at the end."""
        while True:
            rest = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            found = _TOKEN.match(self.buf, rest)
            if found is None:  # only blanks left, or a token cut by the chunk's end, or junk
                if rest < len(self.buf) and len(self.buf) - rest >= len("false") or self.eof:
                    if rest >= len(self.buf):
                        return None
                    raise NotJson(f"unexpected {self.buf[rest : rest + 10]!r}")
                self.pos = rest
                self.more()
                continue
            punct, whole, part, literal = found.groups()
            if punct:
                self.pos = found.end()
                return ("p", punct)
            if (
                whole or literal
            ):  # "1" before "1.5" or "1e-5" may be cut by the chunk's end: look 4 ahead
                if len(self.buf) - found.end() <= 3 and not self.eof:
                    if len(self.buf) - self.pos > MAX_SCALAR:
                        raise OverCap(f"a number is longer than {MAX_SCALAR} characters")
                    self.more()
                    continue
                self.pos = found.end()
                if literal:
                    return ("v", _LITERALS[literal])
                if len(whole) + len(part) > MAX_SCALAR:
                    raise OverCap(f"a number is longer than {MAX_SCALAR} characters")
                return ("v", float(whole + part) if part else int(whole))
            self.pos = found.end() - 1  # at the opening quote
            return ("s", self.string())

    def string(self) -> str:
        """The string starting at the buffer's position (its opening quote)."""
        ahead = 1  # where to look for the closing quote, from self.pos
        while True:
            end = self.buf.find('"', self.pos + ahead)
            while end >= 0:
                slashes = 0
                while self.buf[end - 1 - slashes] == "\\":
                    slashes += 1
                if slashes % 2 == 0:
                    break
                end = self.buf.find('"', end + 1)
            if end >= 0:
                break
            ahead = len(self.buf) - self.pos
            if ahead > self.caps.max_string + 2:
                raise OverCap(f"a string is longer than {self.caps.max_string:,} characters")
            if not self.more():
                raise NotJson("it ends inside a string")
        if end - self.pos - 1 > self.caps.max_string:
            raise OverCap(f"a string is longer than {self.caps.max_string:,} characters")
        raw = self.buf[self.pos : end + 1]
        self.pos = end + 1
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotJson(f"a string is not valid JSON ({exc.msg})") from None


@dataclass
class _Frame:
    container: dict[str, Any] | list[Any]
    path: Path
    cap: int | None  # the most entries it may hold (``Caps.items``)
    keyed: bool  # its keys go through ``Caps.check_key``
    key: str = ""


def load_bounded(fh: BinaryIO, caps: Caps, *, chunk: int = CHUNK) -> Any:
    """The JSON value in the binary stream ``fh``, read ``chunk`` bytes at a time under ``caps``.

    Raises:
        OverCap: a cap was broken (checked before the offending part is kept).
        NotJson: the stream is not one JSON value.
    """
    reader = _Reader(fh, caps, chunk)
    stack: list[_Frame] = []
    values = 0

    def need() -> tuple[str, Any]:
        tok = reader.token()
        if tok is None:
            raise NotJson("it ends early")
        return tok

    def key_of(frame: _Frame, tok: tuple[str, Any]) -> None:
        if tok[0] != "s":
            raise NotJson("an object key is not a string")
        if frame.keyed and caps.check_key is not None:
            caps.check_key(frame.path, tok[1])
        if need() != ("p", ":"):
            raise NotJson("a ':' is missing after an object key")
        frame.key = tok[1]

    tok = need()
    while True:
        values += 1
        if values > caps.max_values:
            raise OverCap(f"it holds more than {caps.max_values:,} values")
        kind, item = tok
        if kind == "p" and item in "{[":
            if len(stack) >= caps.max_depth:
                raise OverCap(f"it is nested deeper than {caps.max_depth} levels")
            parent = stack[-1] if stack else None
            path: Path = () if parent is None else (*parent.path, _step(parent))
            frame = _Frame(
                {} if item == "{" else [], path, caps.items.get(path), path in caps.keyed
            )
            stack.append(frame)
            tok = need()
            closer = "}" if item == "{" else "]"
            if tok != ("p", closer):
                if isinstance(frame.container, dict):
                    key_of(frame, tok)
                    tok = need()
                continue
            value: Any = stack.pop().container
        elif kind == "p":
            raise NotJson(f"unexpected {item!r}")
        else:
            value = item
        while True:  # attach ``value`` to its parent, then read what follows it
            if not stack:
                if reader.token() is not None:
                    raise NotJson("there is more after the JSON value")
                return value
            frame = stack[-1]
            if isinstance(frame.container, dict):
                frame.container[frame.key] = value
            else:
                frame.container.append(value)
            if frame.cap is not None and len(frame.container) > frame.cap:
                raise OverCap(f"{'/'.join(frame.path)} holds more than {frame.cap:,} entries")
            tok = need()
            closer = "}" if isinstance(frame.container, dict) else "]"
            if tok == ("p", ","):
                tok = need()
                if isinstance(frame.container, dict):
                    key_of(frame, tok)
                    tok = need()
                break
            if tok != ("p", closer):
                raise NotJson(f"a ',' or {closer!r} is missing")
            value = stack.pop().container


def _step(frame: _Frame) -> str:
    return frame.key if isinstance(frame.container, dict) else ITEM


def loads_bounded(text: str, caps: Caps, *, chunk: int = CHUNK) -> Any:
    """:func:`load_bounded` of a string already in memory (a member of a bundle)."""
    return load_bounded(io.BytesIO(text.encode("utf-8")), caps, chunk=chunk)
