"""The one structured-output boundary (seed 001): tolerant keys, one repair, typed violation.

``ModelCaller.ask`` is what every stage, the single verifiers and the receiving-stage
validation use; these tests pin its contract: keys match across case and ``-``/``_``/space
variants, a violation earns exactly one repair turn (``limits={"turns": 2}``), and a second
failure is a typed :class:`ContractViolation`, never an empty success.
"""

from __future__ import annotations

import pytest
from pipeline_helpers import replay_settings
from verify_helpers import write_lines

from haytham.agents.caller import REPAIR_TURNS, ModelCaller
from haytham.agents.context import Context
from haytham.errors import ContractViolation
from haytham.models.factory import ModelRuntime
from haytham.schemas.base import TolerantModel, parse_contract
from haytham.storage.folder import SessionStore


class Verdict(TolerantModel):
    trigger_moment: str
    score: int


def _ask(tmp_path, *turns):
    lines = [{"agent": "judge", "turn": n, "response": r} for n, r in enumerate(turns, 1)]
    cassette = write_lines(tmp_path / "c.jsonl", lines)
    settings = replay_settings(tmp_path, cassette=cassette)
    files = SessionStore(tmp_path / "sessions").create("contract")
    ctx = Context()
    ctx.add("task", "# Task", "Answer with the Verdict tool.")
    with ModelRuntime(settings) as models:
        caller = ModelCaller(settings, models, files)
        try:
            return caller.ask("judge", "light", "You judge.", ctx, Verdict, account_as="row")
        finally:
            calls = [e for e in files.events() if e["type"] == "model_call"]
            _ask.calls = len(calls)
            _ask.rows = {e["stage"] for e in calls}


def _tool(data):
    return [{"tool": "Verdict", "input": data}]


def test_keys_match_tolerantly_without_a_repair(tmp_path):
    got = _ask(tmp_path, _tool({"Trigger-Moment": "after therapy", "SCORE": 3}))
    assert got == Verdict(trigger_moment="after therapy", score=3)
    assert _ask.calls == 1 and _ask.rows == {"row"}


def test_one_repair_turn_is_enough(tmp_path):
    got = _ask(tmp_path, _tool({"trigger moment": "x"}), _tool({"trigger_moment": "x", "score": 2}))
    assert got.score == 2 and _ask.calls == 2


def test_a_second_failure_is_a_typed_violation_and_there_is_no_third_call(tmp_path):
    bad = _tool({"trigger_moment": "x"})
    with pytest.raises(ContractViolation) as err:
        _ask(tmp_path, bad, bad, _tool({"trigger_moment": "x", "score": 1}))
    assert _ask.calls == REPAIR_TURNS == 2
    v = err.value.to_dict()
    assert v["error_type"] == "contract_violation" and v["mismatch"] == "missing_required_key"
    assert v["expected_keys"] == ["trigger_moment", "score"]
    assert v["actual_keys"] == ["trigger_moment"]
    assert v["expected_shape"] == "object" and v["actual_shape"] == "object"


def test_a_wrong_type_twice_is_a_type_mismatch(tmp_path):
    bad = _tool({"trigger_moment": "x", "score": "high"})
    with pytest.raises(ContractViolation) as err:
        _ask(tmp_path, bad, bad)
    assert err.value.mismatch == "type_mismatch" and _ask.calls == 2


def test_prose_instead_of_the_tool_twice_is_a_violation_not_an_empty_success(tmp_path):
    with pytest.raises(ContractViolation, match="gave no structured answer") as err:
        _ask(tmp_path, [{"text": "It is fine."}], [{"text": "Still fine."}])
    assert err.value.actual_shape == "text" and _ask.calls == 2


@pytest.mark.parametrize("empty", [None, {}, []])
def test_empty_required_input_is_a_typed_error(empty):
    with pytest.raises(ContractViolation) as err:
        parse_contract(Verdict, empty, where="stage")
    assert err.value.mismatch == "nil_required_input"
