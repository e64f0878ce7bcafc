"""API keys never reach session files, events, exports, tracking data or logs (issue 8).

A whole session runs with fake keys in the environment; then every byte written under the test
folder (sessions, ``sessions/_tracking``, exports, the SQLite state) and everything printed or
logged is searched for them. A provider error that echoes a key is redacted before it is
recorded.
"""

from __future__ import annotations

import base64
import logging
import secrets
from pathlib import Path

import pytest
from faults import Fault, FaultPlan, read_events
from pipeline_helpers import POWER8_IDEA, POWER8_RUN, replay_cli_args

from haytham.cli import main
from haytham.redact import redact

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
    opts = replay_cli_args(tmp_path)
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
    assert redact(text, env) == (
        "[MY_SERVICE_TOKEN redacted] [DB_PASSWORD redacted] /root/home-dir abc"
    )


BASIC = base64.b64encode(b"founder:hunter2-secret-pass").decode()


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("headers {'Authorization': 'Bearer sk-live-0123456789abcdef'}", "sk-live-0123456789abc"),
        ('"authorization": "Token abcdef0123456789"', "abcdef0123456789"),
        ("x-api-key: ak-9876543210zyx", "ak-9876543210zyx"),
        ('{"api-key": "abc123def456"}', "abc123def456"),
        ("GET https://llm.example/v1?api_key=qk-55555555&x=1", "qk-55555555"),
        ("POST http://founder:hunter2-secret-pass@llm.example/v1", "hunter2-secret-pass"),
        (f"sent Authorization: Basic {BASIC}", BASIC),
        (f"retry with Basic {BASIC} failed", BASIC),
        ("a bare Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
    ],
)
def test_credential_shapes_are_redacted_whatever_their_value(text: str, secret: str) -> None:
    out = redact(text, {})
    assert secret not in out and "[redacted]" in out


@pytest.mark.parametrize(
    "text",
    [
        "Basic plan, Basic planning and a bearer of news",
        "the key insight: authorization comes later",
        "Bearer tokenization is a word",
        "https://example.com/docs?page=2",
    ],
)
def test_ordinary_text_is_not_mangled(text: str) -> None:
    assert redact(text, {}) == text


def test_a_configured_base_url_hides_its_password_in_plain_and_basic_form() -> None:
    env = {"OPENAI_BASE_URL": "http://me:pw-12345678@llm.example/v1"}
    basic = base64.b64encode(b"me:pw-12345678").decode()
    out = redact(f"failed: pw-12345678 and {basic}", env)
    assert "pw-12345678" not in out and basic not in out
