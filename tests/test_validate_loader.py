"""Reading session folders: what exists is validated, broken files raise SessionCorrupt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from haytham.errors import SessionCorrupt, SessionNotFound
from haytham.validate import load_snapshot
from haytham.validate.calibration import CaseError, apply_patch, load_case, load_cases

DRIFT = Path(__file__).parent / "fixtures" / "drift"


@pytest.fixture
def session(tmp_path: Path) -> Path:
    dest = tmp_path / "s"
    shutil.copytree(DRIFT / "power_of_8", dest)
    return dest


def test_full_session_loads(session: Path) -> None:
    snap = load_snapshot(session)
    assert len(snap.outputs) == 10
    assert snap.anchor is not None and snap.anchor.invariant("group_structure")
    assert {c["tool"] for c in snap.tool_calls} == {"web_search"}
    assert all(c["stage"] == "market-context" for c in snap.tool_calls)


def test_missing_later_stages_are_fine(session: Path) -> None:
    for d in (
        "07-system-traits",
        "08-build-buy-analysis",
        "09-architecture-decisions",
        "10-story-generation",
    ):
        shutil.rmtree(session / "stages" / d)
    (session / "events.jsonl").unlink()
    snap = load_snapshot(session)
    assert list(snap.outputs)[-1] == "capability-model" and snap.tool_calls == ()


def test_broken_json_names_the_file(session: Path) -> None:
    target = session / "stages" / "05-mvp-scope" / "output.json"
    target.write_text("{not json", encoding="utf-8")
    with pytest.raises(SessionCorrupt) as err:
        load_snapshot(session)
    assert "05-mvp-scope" in str(err.value) and "invalid JSON" in str(err.value)


def test_schema_violation_is_corrupt(session: Path) -> None:
    target = session / "stages" / "05-mvp-scope" / "output.json"
    data = json.loads(target.read_text(encoding="utf-8"))
    data["payload"]["appetite"] = "enormous"
    target.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionCorrupt, match="appetite"):
        load_snapshot(session)


def test_bad_anchor_and_missing_idea(session: Path) -> None:
    (session / "concept_anchor.json").write_text('{"intent": {}}', encoding="utf-8")
    with pytest.raises(SessionCorrupt, match="concept_anchor.json"):
        load_snapshot(session)
    (session / "concept_anchor.json").unlink()
    (session / "idea.md").unlink()
    with pytest.raises(SessionCorrupt, match="idea.md"):
        load_snapshot(session)


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFound):
        load_snapshot(tmp_path / "nope")


def test_truncated_last_event_line_is_skipped(session: Path) -> None:
    events = session / "events.jsonl"
    events.write_text(
        events.read_text(encoding="utf-8") + '{"ts": "x", "type": "tool_ca', encoding="utf-8"
    )
    assert len(load_snapshot(session).tool_calls) == 2
    events.write_text('{"broken\n' + events.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SessionCorrupt, match="line 1"):
        load_snapshot(session)


def test_every_fixture_case_loads_and_validates(tmp_path: Path) -> None:
    cases = load_cases(DRIFT, tmp_path)
    assert len(cases) >= 30
    assert sum(c.drift is None for c in cases) >= 10
    kinds = {c.drift for c in cases if c.drift}
    assert {
        "dropped_invariant",
        "genericized_identity",
        "trait_contradiction",
        "appetite_breach",
        "framework_conflict",
        "unsourced_statistic",
        "phantom_founder_claim",
    } <= kinds
    for case in cases:
        snap = load_snapshot(case.path)  # every stage output validates against its schema
        assert snap.anchor is not None and snap.outputs


def test_patch_that_no_longer_applies_fails_loudly(tmp_path: Path) -> None:
    case = load_case(DRIFT / "power_of_8", tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(case.path, copy)
    with pytest.raises(CaseError, match="not found"):
        apply_patch(
            copy,
            {
                "op": "replace_text",
                "file": "concept_anchor.json",
                "find": "zzz-not-there",
                "replace": "y",
            },
        )
