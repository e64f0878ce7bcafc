"""Receiving-stage validation (seed 000): ordering, fallback, retry cap, counters, accounting."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pipeline_helpers import POWER8, POWER8_IDEA, replay_settings
from verify_helpers import CLEAN, RECEIVING, events, service

from haytham.errors import ProviderError
from haytham.models.factory import ModelRuntime
from haytham.pipeline.runner import StageRunner
from haytham.pipeline.staleness import output_digest, stale_checks
from haytham.schemas.envelope import StageOutput
from haytham.stages import BY_SLUG
from haytham.state import SessionState
from haytham.storage.folder import SessionStore
from haytham.verify.receiving import (
    MAX_VALIDATION_RETRIES,
    WARNINGS_KEY,
    InputValidation,
    InputValidationResult,
    input_validation_enabled,
)

LINES = {
    json.loads(x)["agent"]: json.loads(x)
    for x in (POWER8 / "pipeline.jsonl").read_text().splitlines()
}


def _output(slug: str) -> dict[str, Any]:
    spec = BY_SLUG[slug]
    return spec.output_model.model_validate(LINES[slug]["response"][-1]["input"]).model_dump(
        mode="json"
    )


STATE = SessionState.of(
    {
        "idea": POWER8_IDEA,
        "anchor_text": "CONCEPT ANCHOR (test)",
        "outputs": {
            s: _output(s) for s in ("mvp-scope", "capability-model", "architecture-decisions")
        },
    }
)


def _json(output: StageOutput) -> dict[str, Any]:
    return output.model_dump(mode="json")


class FakeAsk:
    """Stands in for ``ModelCaller.ask``: scripted validator verdicts and revisions."""

    def __init__(self, reject, revise=None) -> None:
        self.reject, self.revise = reject, revise
        self.validated: list[list[str]] = []
        self.revised: list[str] = []
        self.rows: set[str] = set()

    def __call__(self, stage, tier, system, ctx, model_cls, *, account_as=None):
        self.rows.add(account_as)
        part = dict(ctx.parts)
        if model_cls is InputValidationResult:
            text = part["items"]
            items = json.loads(text[text.index("```json") + 7 : text.rindex("```")])
            ids = [i["id"] for i in items]
            self.validated.append(ids)
            outcome = self.reject(len(self.validated), ids)
            if isinstance(outcome, Exception):
                raise outcome
            return InputValidationResult(
                rejected=[{"id": i, "reason": f"fix {i}"} for i in outcome]
            )
        text = part["item"]
        item = json.loads(text[text.index("```json") + 7 : text.rindex("```")])
        self.revised.append(item["id"])
        if self.revise is None:
            raise ProviderError("reviser unavailable")
        return model_cls.model_validate(self.revise(item))


def _receiver(tmp_path, ask):
    files = SessionStore(tmp_path / "sessions").create("recv")
    return InputValidation(files, ask), files


def _events(files, kind):
    return [e for e in files.events() if e["type"] == kind]


def _revise(item):
    return {**item, "description": item.get("description", "") + " (revised)"}


def test_still_rejected_items_pass_through_after_the_retry_cap_appended_in_order(tmp_path):
    ask = FakeAsk(
        reject=lambda n, ids: [i for i in ids if i in ("SCOPE-2", "SCOPE-4")], revise=_revise
    )
    receiver, files = _receiver(tmp_path, ask)
    got = receiver.receive(BY_SLUG["capability-model"], STATE)
    assert ask.validated == [
        ["SCOPE-1", "SCOPE-2", "SCOPE-3", "SCOPE-4", "SCOPE-5", "SCOPE-6"],
        ["SCOPE-2", "SCOPE-4"],
        ["SCOPE-2", "SCOPE-4"],
    ]  # only revised
    assert ask.revised == ["SCOPE-2", "SCOPE-4"] * MAX_VALIDATION_RETRIES
    items = _json(got.changed["mvp-scope"])["payload"]["in_scope"]
    assert [i["id"] for i in items] == [
        "SCOPE-1",
        "SCOPE-3",
        "SCOPE-5",
        "SCOPE-6",
        "SCOPE-2",
        "SCOPE-4",
    ]
    assert items[4][WARNINGS_KEY] == ["Rejected after 2 retries: fix SCOPE-2"]
    assert items[4]["description"].endswith("(revised) (revised)")
    assert all(WARNINGS_KEY not in i for i in items[:4])
    assert got.quality_flags == {
        "items_produced": 6,
        "validation_rejections": 6,
        "validation_retries": 2,
    }
    assert got.outputs["mvp-scope"] == got.changed["mvp-scope"]
    assert ask.rows == {"validate-input:capability-model"}  # every call accounted per boundary
    (done,) = _events(files, "stage_completed")
    assert done["stage"] == "validate-input:capability-model"
    assert done["data"]["quality_flags"] == got.quality_flags
    assert len(_events(files, "input_validation")) == 3
    assert len(_events(files, "input_revision")) == 4


def test_revised_items_that_pass_keep_their_place(tmp_path):
    script = {1: ["SCOPE-2", "SCOPE-4"], 2: ["SCOPE-4"], 3: []}
    ask = FakeAsk(reject=lambda n, ids: script[n], revise=_revise)
    receiver, _ = _receiver(tmp_path, ask)
    got = receiver.receive(BY_SLUG["capability-model"], STATE)
    assert ask.validated[1:] == [["SCOPE-2", "SCOPE-4"], ["SCOPE-4"]]
    items = _json(got.changed["mvp-scope"])["payload"]["in_scope"]
    assert [i["id"] for i in items] == [f"SCOPE-{n}" for n in range(1, 7)]
    assert not any(WARNINGS_KEY in i for i in items)
    assert items[1]["description"].endswith("(revised)")
    assert got.quality_flags == {
        "items_produced": 6,
        "validation_rejections": 3,
        "validation_retries": 2,
    }


def test_a_failing_validator_accepts_everything_and_logs_it(tmp_path, caplog):
    ask = FakeAsk(reject=lambda n, ids: ProviderError("model down"))
    receiver, files = _receiver(tmp_path, ask)
    with caplog.at_level(logging.WARNING, logger="haytham.verify.receiving"):
        got = receiver.receive(BY_SLUG["build-buy-analysis"], STATE)
    assert got.changed == {} and got.outputs == STATE.outputs
    assert got.quality_flags == {
        "items_produced": 11,
        "validation_rejections": 0,
        "validation_retries": 0,
    }
    (ev,) = _events(files, "input_validation")
    assert ev["data"]["fallback"] is True and "model down" in ev["data"]["error"]
    assert len(ev["data"]["accepted"]) == 11
    assert "accepting all 11 items" in caplog.text


def test_a_failing_revalidation_accepts_the_revised_items(tmp_path):
    ask = FakeAsk(
        reject=lambda n, ids: ["SCOPE-3"] if n == 1 else RuntimeError("boom"), revise=_revise
    )
    receiver, _ = _receiver(tmp_path, ask)
    got = receiver.receive(BY_SLUG["capability-model"], STATE)
    items = _json(got.changed["mvp-scope"])["payload"]["in_scope"]
    assert [i["id"] for i in items] == [f"SCOPE-{n}" for n in range(1, 7)]
    assert items[2]["description"].endswith("(revised)") and WARNINGS_KEY not in items[2]
    assert got.quality_flags["validation_retries"] == 1


def test_a_failing_reviser_keeps_the_item_and_the_cap_still_holds(tmp_path):
    ask = FakeAsk(reject=lambda n, ids: [i for i in ids if i == "DEC-RT-001"], revise=None)
    receiver, files = _receiver(tmp_path, ask)
    got = receiver.receive(BY_SLUG["story-generation"], STATE)
    assert len(ask.validated) == 1 and ask.revised == ["DEC-RT-001"] * 2
    decisions = _json(got.changed["architecture-decisions"])["payload"]["decisions"]
    assert decisions[-1]["id"] == "DEC-RT-001"
    assert decisions[-1][WARNINGS_KEY] == ["Rejected after 2 retries: fix DEC-RT-001"]
    original = next(
        d
        for d in _json(STATE.outputs["architecture-decisions"])["payload"]["decisions"]
        if d["id"] == "DEC-RT-001"
    )
    assert {k: v for k, v in decisions[-1].items() if k != WARNINGS_KEY} == original
    coverage = _json(got.changed["architecture-decisions"])["payload"]["coverage"]
    assert coverage["uncovered"] == []  # computed fields re-derived after the change
    assert "capability-model" not in got.changed  # its items were all accepted
    assert [e["data"]["ok"] for e in _events(files, "input_revision")] == [False, False]


def test_empty_input_makes_no_call_and_unknown_ids_are_ignored(tmp_path):
    ask = FakeAsk(reject=lambda n, ids: ["CAP-F-999"])
    receiver, _ = _receiver(tmp_path, ask)
    assert receiver.validate_input(BY_SLUG["capability-model"], [], STATE, "row", 0) == []
    assert ask.validated == []
    got = receiver.receive(BY_SLUG["build-buy-analysis"], STATE)
    assert got.changed == {} and got.quality_flags["validation_rejections"] == 0
    assert receiver.receive(BY_SLUG["system-traits"], STATE) is None  # not a boundary


def test_the_switch(tmp_path):
    assert input_validation_enabled(replay_settings(tmp_path)) is True
    for off in ("off", "0", "false", "NO"):
        off_settings = replay_settings(tmp_path, env={"HAYTHAM_INPUT_VALIDATION": off})
        assert input_validation_enabled(off_settings) is False
    settings = replay_settings(tmp_path)
    off_settings = replay_settings(tmp_path, env={"HAYTHAM_INPUT_VALIDATION": "off"})
    files = SessionStore(tmp_path / "sessions").create("switch")
    with ModelRuntime(settings) as models:
        assert StageRunner(off_settings, models, files).receiver is None
        assert StageRunner(settings, models, files).receiver is not None
        assert StageRunner(settings, models, files, input_validation=False).receiver is None


def test_through_the_pipeline_a_rejected_scope_item_is_revised_and_accounted(tmp_path):
    with service(tmp_path, CLEAN, RECEIVING, verifiers=False) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="recv")
        assert svc.run(sid, auto_approve=True, until=2).gate == 2
        state = svc.load_state(sid)
    root = tmp_path / "sessions" / sid
    flags = {"items_produced": 6, "validation_rejections": 1, "validation_retries": 1}
    assert state.stage_meta["capability-model"].quality_flags == flags
    done = [e for e in events(root, "stage_completed") if e["stage"] == "capability-model"]
    assert done[0]["data"]["quality_flags"] == flags
    scope = json.loads((root / "stages" / "05-mvp-scope" / "output.json").read_text())
    assert scope["payload"]["in_scope"][2]["description"].endswith(
        "The psychologist picks the receiver when scheduling."
    )
    # the revised scope was validated again as it is now: nothing is stale at the gate
    assert stale_checks(state) == []
    checked = state.stage_meta["mvp-scope"].checked.outputs["mvp-scope"]
    assert checked == output_digest(state.outputs["mvp-scope"])
    row = json.loads((root / "summary.json").read_text())["stages"][
        "validate-input:capability-model"
    ]
    assert row["model_calls"] == 3 and row["input_tokens"] > 0 and row["status"] == "completed"
    agents = [
        e["data"]["agent"]
        for e in events(root, "model_call")
        if e["stage"] == "validate-input:capability-model"
    ]
    assert agents == [
        "capability-model-input-validator",
        "mvp-scope-reviser",
        "capability-model-input-validator",
    ]
    # the stage counts stay one call per stage
    summary = json.loads((root / "summary.json").read_text())["stages"]
    assert summary["capability-model"]["model_calls"] == 1


@pytest.mark.parametrize("setting", ["on", "off"])
def test_a_cassette_without_validator_lines_still_runs(tmp_path, setting):
    with service(tmp_path, verifiers=False, env={"HAYTHAM_INPUT_VALIDATION": setting}) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="plain")
        assert svc.run(sid, auto_approve=True).status == "done"
    fallbacks = [e for e in events(tmp_path / "sessions" / sid, "input_validation")]
    if setting == "off":
        assert fallbacks == []
    else:
        assert [e["data"]["consumer"] for e in fallbacks] == [
            "capability-model",
            "build-buy-analysis",
            "story-generation",
        ]
        assert all(
            e["data"]["fallback"] and "No recorded turn" in e["data"]["error"] for e in fallbacks
        )
