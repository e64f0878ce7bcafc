"""Judgement cache: one JSON file per (rubric id, rubric version, prompt hash).

The prompt hash covers the provider, the model id, the sampling settings, the full system prompt
(preamble + rubric) and the full user prompt (which names the replica), so a cached answer is
only reused for exactly the same question. Used in ``--deterministic`` mode, where a rerun of
the same outputs then costs nothing. Writes are atomic; a corrupt entry is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from haytham.storage.folder import atomic_write


def prompt_hash(payload: dict[str, Any]) -> str:
    """sha256 (hex) of ``payload`` as canonical JSON: everything that defines one question."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Cached judgements, one JSON file each in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def key(rubric_id: str, version: int, digest: str) -> str:
        """The entry's name: rubric id and version, and the first 40 hex digits of the hash."""
        return f"{rubric_id}.v{version}.{digest[:40]}"

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached judgement, or None when absent or unreadable (then rewritten later)."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a judgement atomically (a reader never sees half a file)."""
        atomic_write(self._path(key), json.dumps(value, ensure_ascii=False, indent=1) + "\n")


__all__ = ["JudgeCache", "prompt_hash"]
