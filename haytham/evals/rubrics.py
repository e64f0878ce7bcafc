"""Rubrics (``prompts/rubrics/*.md``): a small front matter, then the text the judge reads.

Front matter keys: ``id`` (the judge agent is ``judge-<id>``), ``version`` (part of the cache
key; bump it whenever the meaning of a score changes), ``target`` (``pipeline``, ``anchor`` or
``stage:<slug>``) and ``title``. ``_judge.md`` is the shared preamble every judge receives before
its rubric. Files starting with ``_`` are not rubrics.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from haytham.errors import ConfigError, InputError
from haytham.stages import BY_SLUG, STAGES
from haytham.stages.base import PROMPTS_DIR

RUBRICS_DIR = PROMPTS_DIR / "rubrics"
PREAMBLE = "_judge.md"
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_ID = re.compile(r"^[a-z0-9-]{1,60}$")


@dataclass(frozen=True)
class Rubric:
    """One judge rubric from ``prompts/rubrics/``: its id, version, what it judges (the whole
    run or ``stage:<slug>``) and its text, with the shared judge preamble."""

    id: str
    version: int
    target: str
    title: str
    body: str
    preamble: str = ""

    @property
    def agent(self) -> str:
        """The judge agent's name (cassette lines and accounting rows use it)."""
        return f"judge-{self.id}"

    @property
    def stage(self) -> str | None:
        """The stage slug a ``stage:<slug>`` rubric judges, else None."""
        return self.target.split(":", 1)[1] if self.target.startswith("stage:") else None

    @property
    def system_prompt(self) -> str:
        """The judge's system prompt: the shared preamble, then this rubric's body."""
        return (self.preamble.rstrip() + "\n\n" + self.body.strip() + "\n").lstrip()

    @property
    def digest(self) -> str:
        """sha256 of the full system prompt (recorded in reports; changes show up in diffs)."""
        return hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()[:16]


def parse_rubric(text: str, source: str, preamble: str = "") -> Rubric:
    """A rubric from its file text; raises :class:`ConfigError` naming ``source``."""
    match = _FRONT.match(text)
    if not match:
        raise ConfigError(f"Rubric {source} has no front matter (--- id/version/target/title ---).")
    meta: dict[str, str] = {}
    for line in match.group(1).splitlines():
        if line.strip():
            key, sep, value = line.partition(":")
            if not sep:
                raise ConfigError(f"Rubric {source}: bad front matter line {line!r}.")
            meta[key.strip()] = value.strip()
    missing = [k for k in ("id", "version", "target", "title") if not meta.get(k)]
    if missing:
        raise ConfigError(f"Rubric {source} lacks {', '.join(missing)} in its front matter.")
    if not _ID.match(meta["id"]):
        raise ConfigError(f"Rubric {source}: id {meta['id']!r} must be lower-case a-z, 0-9, '-'.")
    if not meta["version"].isdigit():
        raise ConfigError(f"Rubric {source}: version must be a whole number.")
    target = meta["target"]
    if target not in ("pipeline", "anchor") and not (
        target.startswith("stage:") and target[6:] in BY_SLUG
    ):
        raise ConfigError(
            f"Rubric {source}: target {target!r} must be pipeline, anchor or "
            f"stage:<slug> with one of {', '.join(BY_SLUG)}."
        )
    body = text[match.end() :]
    if not body.strip():
        raise ConfigError(f"Rubric {source} has an empty body.")
    return Rubric(meta["id"], int(meta["version"]), target, meta["title"], body, preamble)


def _order(r: Rubric) -> tuple[int, int]:
    if r.target == "pipeline":
        return (0, 0)
    if r.target == "anchor":
        return (1, 0)
    stage = r.stage or ""
    return (2, BY_SLUG[stage].number if stage in BY_SLUG else 99)


def load_rubrics(directory: Path = RUBRICS_DIR, ids: Sequence[str] | None = None) -> list[Rubric]:
    """All rubrics in ``directory`` (pipeline, anchor, then stages in order), or those in ``ids``.

    Raises:
        ConfigError: a rubric file is invalid, two share an id, or there are none.
        InputError: an id in ``ids`` is unknown.
    """
    preamble_path = directory / PREAMBLE
    preamble = preamble_path.read_text(encoding="utf-8") if preamble_path.is_file() else ""
    rubrics: dict[str, Rubric] = {}
    for path in sorted(directory.glob("*.md")):
        if path.name.startswith("_"):
            continue
        rubric = parse_rubric(path.read_text(encoding="utf-8"), str(path), preamble)
        if rubric.id in rubrics:
            raise ConfigError(f"Two rubrics share the id {rubric.id!r} ({path}).")
        rubrics[rubric.id] = rubric
    if not rubrics:
        raise ConfigError(f"No rubrics found in {directory}.")
    ordered = sorted(rubrics.values(), key=_order)
    if ids is None:
        return ordered
    unknown = [i for i in ids if i not in rubrics]
    if unknown:
        raise InputError(f"Unknown rubric(s) {', '.join(unknown)}; known: {', '.join(rubrics)}.")
    return [r for r in ordered if r.id in set(ids)]


def stage_rubric_ids() -> list[str]:
    """The per-stage rubric ids, in pipeline order (``stage-<slug>``)."""
    return [f"stage-{s.slug}" for s in STAGES]


__all__ = ["RUBRICS_DIR", "Rubric", "load_rubrics", "parse_rubric", "stage_rubric_ids"]
