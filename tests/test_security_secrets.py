"""API keys never reach session files, events, exports, tracking data or logs (issue 8).

A whole session runs with fake keys in the environment; then every byte written under the test
folder (sessions, ``sessions/_tracking``, exports, the SQLite state) and everything printed or
logged is searched for them. A provider error that echoes a key is redacted before it is
recorded.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest
from faults import Fault, FaultPlan, read_events
from pipeline_helpers import POWER8_IDEA, POWER8_RUN

from haytham.cli import main
from haytham.models.accounting import redact_secrets

SECRET_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "HF_TOKEN",
    "TAVILY_API_KEY",
)


@pytest.fixture
def fake_keys(monkeypatch) -> dict[str, str]:
    keys = {
        name: f"FAKE-{name.lower().replace('_', '-')}-{secrets.token_hex(12)}"
        for name in SECRET_VARS
    }
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HAYTHAM_RETRY_DELAY", "0")
    return keys


def _leaks(keys: dict[str, str], folder: Path, *texts: str) -> list[str]:
    found = []
    for path in [p for p in folder.rglob("*") if p.is_file()]:
        data = path.read_bytes()
        found += [f"{name} in {path}" for name, v in keys.items() if v.encode() in data]
    for n, text in enumerate(texts):
        found += [f"{name} in output #{n}" for name, v in keys.items() if v in text]
    return found


def test_a_full_session_writes_no_key_anywhere(tmp_path, fake_keys, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    opts = [
        "--provider",
        "replay",
        "--cassette",
        str(POWER8_RUN),
        "--sessions-dir",
        str(tmp_path / "sessions"),
    ]
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    assert (
        main(["run", "--idea-file", str(idea), "--session-id", "keys", "--auto-approve", *opts])
        == 0
    )
    exports = tmp_path / "exports"
    exports.mkdir()
    for fmt in ("markdown", "json", "csv", "jira", "linear"):
        assert (
            main(
                ["export", "keys", "--format", fmt, "--output", str(exports / f"spec.{fmt}"), *opts]
            )
            == 0
        )
    for argv in (
        ["status", "keys", "--json"],
        ["show", "keys", "anchor"],
        ["sessions"],
        ["providers"],
        ["clear-from", "keys", "story-generation"],
        ["resume", "keys"],
        ["fork", "keys", "--from", "mvp-scope", "--session-id", "keys-fork"],
    ):
        assert main([*argv, *opts]) == 0, argv
    out = capsys.readouterr()
    tracking = tmp_path / "sessions" / "_tracking"
    assert (tracking / "haytham" / "keys" / "log.jsonl").exists()
    assert (tmp_path / "sessions" / "keys" / "state.db").exists()
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert not _leaks(fake_keys, tmp_path, out.out, out.err, logs)
    assert "✓ bedrock" in out.out and "✓ openai" in out.out  # the keys were seen as set


def test_a_provider_error_echoing_a_key_is_redacted_before_it_is_recorded(
    tmp_path, fake_keys, monkeypatch, capsys, caplog
):
    caplog.set_level(logging.DEBUG)
    key = fake_keys["OPENAI_API_KEY"]
    FaultPlan(
        Fault(
            "connection_refused",
            "idea-analysis",
            detail=f"while connecting to https://user:{key}@llm.internal/v1 "
            f"(Authorization: Bearer {key})",
        )
    ).install(monkeypatch)
    opts = [
        "--provider",
        "replay",
        "--cassette",
        str(POWER8_RUN),
        "--sessions-dir",
        str(tmp_path / "sessions"),
    ]
    assert main(["run", "--idea", POWER8_IDEA, "--session-id", "echo", *opts]) == 1
    out = capsys.readouterr()
    assert "[OPENAI_API_KEY redacted]" in out.err and "connection failed" in out.err
    (failed,) = read_events(tmp_path / "sessions" / "echo", "stage_failed")
    assert "[OPENAI_API_KEY redacted]" in failed["data"]["error"]["message"]
    assert main(["status", "echo", *opts]) == 0
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert not _leaks(fake_keys, tmp_path, out.out, out.err, capsys.readouterr().out, logs)


def test_redaction_covers_secret_looking_names_only():
    env = {
        "MY_SERVICE_TOKEN": "tok-123456789",
        "DB_PASSWORD": "hunter2hunter2",
        "HOME": "/root/home-dir",
        "SHORT_KEY": "abc",
    }
    text = "tok-123456789 hunter2hunter2 /root/home-dir abc"
    assert redact_secrets(text, env) == (
        "[MY_SERVICE_TOKEN redacted] [DB_PASSWORD redacted] /root/home-dir abc"
    )
