"""A whole session as one JSON file, to move it between stores (the folder and the shared database).

``haytham export ID --format session --output F`` writes it; ``haytham import F`` reads it into
the store the settings name. The file holds everything a session is: every file of the folder
contract as text, the event log's lines as written, and every persisted Burr step (its state,
position, status and time), so a session imported from one store reads back byte for byte the
same from the other.

A received bundle is untrusted: it is read while it streams in under caps (size, files, events,
rows, string length, nesting depth, values; :mod:`haytham.safety.bounded_json`), every file must be
one the folder contract names (:func:`member_kind`), files Haytham makes itself (the state
database, its journals, the lock, the event log) are never taken from it, and every state row
must load as the product's own state; any problem is one sentence and nothing is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haytham.errors import InputError
from haytham.pipeline.projection import SNAPSHOT
from haytham.safety.bounded_json import Caps, NotJson, OverCap, load_bounded, loads_bounded
from haytham.stages import BY_SLUG, STAGES, Phase
from haytham.state import SessionState, UnknownStateData, state_from_row
from haytham.storage.folder import SQLITE_FILES
from haytham.storage.protocol import StateRow, validate_session_id

FORMAT = "haytham-session"
SESSION_FORMAT = "session"  # the export format name of a whole session
VERSION = 1

# Caps on a received bundle, checked while it streams in (docs/reliability.md gives the
# measured cost of refusing one over them). A finished session's bundle is about 1.5 MB, 30
# files, 70 events, 25 state rows, 12 levels deep and 18,000 JSON values.
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
MAX_MEMBER_CHARS = 4 * 1024 * 1024  # one file, event line or string in a state row
MAX_FILES = 400
MAX_EVENTS = 100_000
MAX_ROWS = 10_000
MAX_DEPTH = 64
MAX_VALUES = 1_000_000

# Files Haytham makes itself and never takes from a bundle: the state database is rebuilt from
# the bundle's state rows, the event log from its events, the lock and journals are new.
RESERVED = frozenset({"events.jsonl", ".lock", *SQLITE_FILES})
_FIXED = {
    "idea.md": "text",
    "session.json": "json",
    "concept_anchor.json": "json",
    "gates.json": "json",
    "revisions.json": "json",
    "summary.json": "json",
    SNAPSHOT: "json",
}
_STAGE_FILE = re.compile(r"stages/([0-9]{2}-[a-z0-9-]+)/output\.(json|md)")
_VERIFICATION = re.compile(r"verifications/([a-z]+)\.json")
_REVIEW = re.compile(r"reviews/[0-9]{2,4}-([a-z0-9-]+)\.json")
_STAGE_DIRS = frozenset(s.dir_name for s in STAGES)
_PHASES = frozenset(p.value.lower() for p in Phase)


def member_kind(rel: str) -> str | None:
    """``"json"`` or ``"text"`` for a file a session may hold (the folder contract), else
    ``None``: the path allowlist of an import."""
    if rel in _FIXED:
        return _FIXED[rel]
    if found := _STAGE_FILE.fullmatch(rel):
        return None if found[1] not in _STAGE_DIRS else "json" if found[2] == "json" else "text"
    if found := _VERIFICATION.fullmatch(rel):
        return "json" if found[1] in _PHASES else None
    if found := _REVIEW.fullmatch(rel):
        return "json" if found[1] in BY_SLUG else None
    return None


def _check_member(shown: str) -> Callable[[tuple[str, ...], str], None]:
    def check(_path: tuple[str, ...], rel: str) -> None:
        named = repr(rel if len(rel) <= 80 else rel[:77] + "...")
        if rel in RESERVED or rel.startswith("state.db"):
            raise InputError(
                f"{shown} carries {named}, a file Haytham makes itself (it is rebuilt from the "
                "export's state and events, never taken from it); nothing was imported."
            )
        if member_kind(rel) is None:
            raise InputError(
                f"{shown} carries {named}, which is not a file of a session; nothing was imported."
            )

    return check


def _caps(shown: str) -> Caps:
    return Caps(
        max_bytes=MAX_BUNDLE_BYTES,
        max_depth=MAX_DEPTH,
        max_string=MAX_MEMBER_CHARS,
        max_values=MAX_VALUES,
        items={("files",): MAX_FILES, ("events",): MAX_EVENTS, ("state",): MAX_ROWS},
        keyed=frozenset({("files",)}),
        check_key=_check_member(shown),
    )


_MEMBER_CAPS = Caps(
    max_bytes=4 * MAX_MEMBER_CHARS,
    max_depth=MAX_DEPTH,
    max_string=MAX_MEMBER_CHARS,
    max_values=MAX_VALUES,
)


def dump_session(files: Any) -> dict[str, Any]:
    """The session behind ``files`` (either store), whole."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "session_id": files.session_id,
        "files": files.all_files(),
        "events": files.event_lines(),
        "state": [
            {
                "sequence_id": r.sequence_id,
                "position": r.position,
                "status": r.status,
                "created_at": r.created_at,
                "state": r.state,
            }
            for r in files.state_rows()
        ],
    }


def read_bundle(path: Path) -> dict[str, Any]:
    """A session file, read under the caps above and checked whole before anything is written
    (one sentence on any problem): every file named and shaped as a session's, every event a
    JSON object, every state row read by the product's own types."""
    shown = str(path)[:200]
    try:
        with Path(path).open("rb") as fh:
            if os.fstat(fh.fileno()).st_size > MAX_BUNDLE_BYTES:
                raise OverCap(f"it is larger than {MAX_BUNDLE_BYTES // 2**20} MiB")
            data = load_bounded(fh, _caps(shown))
    except OSError as exc:
        raise InputError(f"Could not read {shown}: {exc.strerror or exc}.") from None
    except OverCap as exc:
        raise InputError(f"{shown} is refused: {exc}; nothing was imported.") from None
    except NotJson as exc:
        raise InputError(f"{shown} is not a session export ({exc}).") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(
            f"{shown} is not a session export; make one with `haytham export ID --format session`."
        )
    if data.get("version") != VERSION:
        raise InputError(f"{shown} is a session export of version {data.get('version')!r}.")
    files, events, state = data.get("files"), data.get("events"), data.get("state")
    if not (
        isinstance(files, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
        and isinstance(events, list)
        and all(isinstance(e, str) for e in events)
        and isinstance(state, list)
        and all(isinstance(r, dict) and isinstance(r.get("state"), dict) for r in state)
    ):
        raise InputError(f"{shown} is a damaged session export (its parts have the wrong shape).")
    validate_session_id(str(data.get("session_id")))
    _check_parts(shown, files, events, state)
    return data


def _check_parts(
    shown: str, files: dict[str, str], events: list[str], state: list[dict[str, Any]]
) -> None:
    """Each JSON file and event parses (under the caps) and each state row loads as the
    product's own state, before anything is written."""
    try:
        for rel, text in files.items():
            if member_kind(rel) == "json":
                loads_bounded(text, _MEMBER_CAPS)
        for line in events:
            if not isinstance(loads_bounded(line, _MEMBER_CAPS), dict):
                raise NotJson("an event is not a JSON object")
    except (OverCap, NotJson) as exc:
        raise InputError(f"{shown} is a damaged session export ({exc}).") from None
    for row in state:
        try:
            SessionState.of(state_from_row(row["state"]))
        except (ValueError, TypeError, RecursionError) as exc:
            if isinstance(exc, UnknownStateData):
                why = exc.reason
            else:
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InputError(
                f"{shown} is refused: state row {row.get('sequence_id')!r} does not load as a "
                f"session's state ({why}); nothing was imported."
            ) from None


def load_session(store: Any, bundle: dict[str, Any]) -> str:
    """Create the session of ``bundle`` in ``store`` under its own id; a failure leaves no
    half-made session."""
    sid = validate_session_id(bundle["session_id"])
    try:
        rows = [
            StateRow(
                sid,
                int(r["sequence_id"]),
                str(r["position"]),
                r["state"],
                str(r["status"]),
                r.get("created_at"),
            )
            for r in bundle["state"]
        ]
    except (KeyError, TypeError, ValueError):
        raise InputError(
            "The session export's state rows are damaged; nothing was imported."
        ) from None
    files = store.create(sid)
    try:
        for rel, text in bundle["files"].items():
            files.write_text(rel, text)
        files.append_lines(list(bundle["events"]))
        files.write_rows(rows)
    except BaseException:
        store.delete(sid)
        raise
    return sid
