"""Appetite: story count within bound, traceable ids, every capability has a story, no cycles."""

from __future__ import annotations

import re
from pathlib import Path

from haytham.stages import BY_SLUG
from haytham.stages.mvp_scope import APPETITES
from haytham.validate import Snapshot, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import load_case

DRIFT = Path(__file__).parent / "fixtures" / "drift"
LEX = ValidatorSettings(embeddings=False)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def found(s: Snapshot) -> list:
    return run_validators(s, settings=LEX).by_validator("appetite")


def test_power_of_8_twenty_stories_on_small_appetite(tmp_path: Path) -> None:
    """ADR-022 S6: 20 stories for a Small (1-2 weeks) appetite."""
    (f,) = found(snap("power_of_8__twenty_stories_small", tmp_path))
    assert f.stage == "story-generation"
    assert "20 stories exceed the bound of 8 for a small appetite" in f.message


def test_within_bounds_is_clean(tmp_path: Path) -> None:
    for name in ("power_of_8", "cli_planlint", "market_homecooks", "mobile_birdcount"):
        assert found(snap(name, tmp_path)) == [], name


def test_cycle_and_unknown_capability(tmp_path: Path) -> None:
    fs = found(snap("market_homecooks__dependency_cycle", tmp_path))
    messages = " | ".join(f.message for f in fs)
    assert "dependency cycle: STORY-002 -> STORY-003 -> STORY-002" in messages
    assert "CAP-F-012" in messages


def test_orphan_capability_and_unknown_dependency(tmp_path: Path) -> None:
    s = snap("web_quiz", tmp_path)
    sg = s.outputs["story-generation"]
    stories = [st for st in sg.payload.stories if "CAP-F-002" not in st.implements]
    stories[0] = stories[0].model_copy(update={"depends_on": ["STORY-099"]})
    out = sg.model_copy(update={"payload": sg.payload.model_copy(update={"stories": stories})})
    fs = found(Snapshot(s.idea, s.anchor, {**s.outputs, "story-generation": out}, ()))
    messages = " | ".join(f.message for f in fs)
    assert "functional capabilities with no story: CAP-F-002" in messages
    assert "depends on unknown stories STORY-099" in messages


def test_missing_capability_model_skips_traceability(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    outputs = {k: v for k, v in s.outputs.items() if k != "capability-model"}
    assert found(Snapshot(s.idea, s.anchor, outputs, ())) == []


def test_prompts_and_docs_say_what_the_appetite_table_holds() -> None:
    """Code reads the bounds from one table; the texts that state them in words must agree."""
    scope_prompt = " ".join(BY_SLUG["mvp-scope"].prompt().split())
    docs = " ".join((Path(__file__).parents[1] / "docs" / "pipeline.md").read_text().split())
    for name, size in APPETITES.items():
        assert f"`{name}` ({size.weeks} weeks, at most {size.max_stories} stories" in scope_prompt
        assert f"{name} ≤ {size.max_stories}" in docs
    # story-generation's prompt leaves the number to the user message, which states the bound
    assert not re.search(r"at most \d+ stories", BY_SLUG["story-generation"].prompt())


def test_a_capability_that_only_states_an_exclusion_needs_no_story(tmp_path: Path) -> None:
    """A capability carrying only a ``forbids`` invariant ("no student accounts or stored data")
    is a rule stories honour, not a behaviour a story builds: a second opinion, not a warning."""
    s = snap("web_quiz", tmp_path)
    assert s.anchor is not None and s.anchor.invariant("student_data").polarity == "forbids"
    caps, sg = s.outputs["capability-model"], s.outputs["story-generation"]
    functional = [
        c.model_copy(update={"carries": ["INV-4"]}) if c.id == "CAP-F-002" else c
        for c in caps.payload.functional
    ]
    caps = caps.model_copy(
        update={"payload": caps.payload.model_copy(update={"functional": functional})}
    )
    stories = [st for st in sg.payload.stories if "CAP-F-002" not in st.implements]
    sg = sg.model_copy(update={"payload": sg.payload.model_copy(update={"stories": stories})})
    outputs = {**s.outputs, "capability-model": caps, "story-generation": sg}
    (f,) = [f for f in found(Snapshot(s.idea, s.anchor, outputs, ())) if "no story" in f.message]
    assert f.severity == "info" and "CAP-F-002" in f.message and "rule" in f.message
