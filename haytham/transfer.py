"""A whole session as one JSON file, to move it between stores (the folder and the shared database).

``haytham export ID --format session --output F`` writes it; ``haytham import F`` reads it into
the store the settings name. The file holds everything a session is: every file of the folder
contract as text, the event log's lines as written, and every persisted Burr step (its state,
position, status and time), so a session imported from one store reads back byte for byte the
same from the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from haytham.errors import InputError
from haytham.storage import StateRow, validate_session_id
from haytham.store import read_capped

FORMAT = "haytham-session"
SESSION_FORMAT = "session"  # the export format name of a whole session
VERSION = 1
MAX_BUNDLE_BYTES = 256 * 1024 * 1024


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
    """A session file, checked before anything is written (one sentence on any problem)."""
    shown = str(path)[:200]
    try:
        raw = read_capped(path, MAX_BUNDLE_BYTES)
    except OSError as exc:
        raise InputError(f"Could not read {shown}: {exc.strerror or exc}.") from None
    if raw is None:
        raise InputError(f"{shown} is larger than {MAX_BUNDLE_BYTES // 2**20} MiB; not a session.")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{shown} is not a session export (not UTF-8 JSON: {exc}).") from None
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
    return data


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
