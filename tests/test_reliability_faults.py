"""Provider faults mid-stage (issue 8): bounded, counted retries; a typed stage failure that
keeps earlier stages; ``resume`` after the fault clears finishes the run.

The faults are injected below the accounting/retry layer (``tests/faults.py``), so the retries,
events and errors asserted here are the application's own.
"""

from __future__ import annotations

import json

import pytest
from faults import EXCEPTION_KINDS, REPLY_KINDS, Fault, FaultPlan, assert_consistent, read_events
from faults import started as started_counts
from pipeline_helpers import POWER8_IDEA, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import ProviderError, StageFailed

MAX_RETRIES = 3  # Settings.max_retries default
TRANSIENT = {  # kind -> the reason the user reads
    "timeout": "timed out",
    "throttle": "throttled by the provider",
    "server_error": "temporary provider error (HTTP 503)",
    "connection_reset": "connection failed",
}
NOT_RETRIED = {  # kind -> the reason the user reads (issue 28: said at once, not retried)
    "client_error": "request rejected (HTTP 400)",
    "connection_refused": "nothing answers at the provider's address (connection refused)",
}


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.setenv("HAYTHAM_RETRY_DELAY", "0")
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA, encoding="utf-8")

    def run(*args: str) -> int:
        return main([*args, *replay_cli_args(tmp_path)])

    run.idea = str(idea)  # type: ignore[attr-defined]
    return run


def _calls(root, agent):
    return [e["data"] for e in read_events(root, "model_call") if e["data"]["agent"] == agent]


def test_transient_faults_are_retried_and_every_retry_is_counted(tmp_path, monkeypatch):
    plan = FaultPlan(
        Fault("timeout", "idea-analysis", times=1),
        Fault("throttle", "market-context", times=2),
        Fault("server_error", "risk-assessment", times=MAX_RETRIES),
        Fault("connection_reset", "validation-summary", times=1),
    ).install(monkeypatch)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="flaky")
        assert svc.run(sid).gate == 1
    root = tmp_path / "sessions" / sid
    for agent, retries in (
        ("idea-analysis", 1),
        ("market-context", 2),
        ("risk-assessment", MAX_RETRIES),
        ("validation-summary", 1),
    ):
        (call,) = _calls(root, agent)  # one accounted call, its retries inside it
        assert (call["ok"], call["retries"]) == (True, retries), agent
        assert plan.calls[agent] == retries + 1
    summary = json.loads((root / "summary.json").read_text())
    assert summary["stages"]["market-context"]["retries"] == 2
    assert summary["totals"]["retries"] == 1 + 2 + MAX_RETRIES + 1
    assert_consistent(root)


@pytest.mark.parametrize("kind", [*TRANSIENT, *NOT_RETRIED])
def test_a_persistent_provider_fault_fails_the_stage_and_resume_finishes(
    cli, capsys, kind, tmp_path, monkeypatch
):
    plan = FaultPlan(Fault(kind, "market-context")).install(monkeypatch)
    assert cli("run", "--idea-file", cli.idea, "--session-id", "f") == 1
    err = capsys.readouterr().err
    attempts = 1 if kind in NOT_RETRIED else MAX_RETRIES + 1
    reason = TRANSIENT.get(kind) or NOT_RETRIED[kind]
    assert reason in err, err
    assert kind in NOT_RETRIED or f"failed after {attempts} attempt" in err, err
    assert "`haytham resume f`" in err and "Traceback" not in err
    assert plan.calls["market-context"] == attempts  # bounded: never more

    root = tmp_path / "sessions" / "f"
    (call,) = _calls(root, "market-context")
    assert (call["ok"], call["retries"]) == (False, attempts - 1)
    (failed,) = read_events(root, "stage_failed", "market-context")
    assert failed["data"]["error"]["error_type"] == "ProviderError"
    assert failed["data"]["error"]["attempts"] == attempts
    kept = (root / "stages" / "01-idea-analysis" / "output.json").read_bytes()
    assert (root / "concept_anchor.json").exists()
    assert not (root / "stages" / "02-market-context").exists()
    state = assert_consistent(root)
    assert set(state["outputs"]) == {"idea-analysis"}

    assert cli("status", "f") == 0
    out = capsys.readouterr().out
    assert "market-context" in out and "failed" in out and "haytham resume f" in out

    plan.clear()  # the provider recovered
    assert cli("resume", "f") == 0
    assert "waiting at Gate 1" in capsys.readouterr().out
    counts = started_counts(root)
    assert counts["market-context"] == 2
    assert all(
        counts[s] == 1
        for s in ("idea-analysis", "anchor-extraction", "risk-assessment", "validation-summary")
    )
    assert (root / "stages" / "01-idea-analysis" / "output.json").read_bytes() == kept
    assert_consistent(root)


def test_one_bad_reply_of_each_kind_is_repaired_in_the_same_stage(tmp_path, monkeypatch):
    kinds = dict(
        zip(
            ("idea-analysis", "market-context", "risk-assessment", "validation-summary"),
            ("malformed_json", "schema_invalid", "text_json", "empty"),
            strict=True,
        )
    )
    plan = FaultPlan(*(Fault(k, agent, times=1) for agent, k in kinds.items())).install(monkeypatch)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="repaired")
        assert svc.run(sid).gate == 1
    root = tmp_path / "sessions" / sid
    for agent in kinds:
        assert len(_calls(root, agent)) == 2, agent  # the bad answer and one repair
        assert plan.injected[agent] == 1
    assert not read_events(root, "stage_failed")
    assert_consistent(root)


@pytest.mark.parametrize("kind", REPLY_KINDS)
def test_persistent_bad_output_is_a_typed_stage_failure_and_resume_finishes(
    tmp_path, monkeypatch, kind
):
    plan = FaultPlan(Fault(kind, "market-context")).install(monkeypatch)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="bad")
        with pytest.raises(StageFailed) as failure:
            svc.run(sid)
        root = tmp_path / "sessions" / sid
        assert failure.value.stage == "market-context"
        (failed,) = read_events(root, "stage_failed", "market-context")
        if kind == "max_tokens":  # not worth a repair turn: the same limit would cut it again
            assert "cut off at its output token limit" in str(failure.value)
            assert plan.calls["market-context"] == 1
        else:
            assert failure.value.cause["error_type"] == "contract_violation"
            assert failure.value.cause["mismatch"] in (
                "missing_required_key",
                "nil_required_input",
                "type_mismatch",
            )
            assert failed["data"]["error"]["error_type"] == "contract_violation"
            assert plan.calls["market-context"] == 2  # one answer, one repair, then stop
        assert set(assert_consistent(root)["outputs"]) == {"idea-analysis"}
        plan.clear()
        assert svc.resume(sid).gate == 1
    assert started_counts(root)["idea-analysis"] == 1
    assert_consistent(root)


def test_a_fault_after_a_gate_decision_keeps_the_decision(cli, capsys, tmp_path, monkeypatch):
    assert (
        cli(
            "run",
            "--idea-file",
            cli.idea,
            "--session-id",
            "g",
            "--auto-approve",
            "--until",
            "gate-2",
        )
        == 0
    )
    root = tmp_path / "sessions" / "g"
    plan = FaultPlan(Fault("throttle", "system-traits")).install(monkeypatch)
    capsys.readouterr()
    assert cli("approve", "g", "--gate", "2") == 1
    err = capsys.readouterr().err
    assert "throttled by the provider" in err and "`haytham resume g`" in err
    state = assert_consistent(root)
    assert state["gates"]["2"]["status"] == "approved"
    assert "system-traits" not in state["outputs"] and "capability-model" in state["outputs"]
    plan.clear()
    assert cli("resume", "g", "--auto-approve") == 0
    assert json.loads((root / "summary.json").read_text())["status"] == "done"
    counts = started_counts(root)
    assert counts["system-traits"] == 2 and counts["mvp-scope"] == 1
    assert_consistent(root)


def test_provider_error_is_typed_through_the_service(tmp_path, monkeypatch):
    FaultPlan(Fault("connection_reset", "idea-analysis")).install(monkeypatch)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        with pytest.raises(ProviderError) as failure:
            svc.run(sid)
    assert failure.value.retryable and failure.value.attempts == MAX_RETRIES + 1
    assert set(EXCEPTION_KINDS) >= set(TRANSIENT)
