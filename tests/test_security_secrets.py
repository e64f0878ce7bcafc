"""API keys never reach session files, events, exports, tracking data or logs (issue 8).

A whole session runs with fake keys in the environment; then every byte written under the test
folder (sessions, ``sessions/_tracking``, exports, the SQLite state) and everything printed or
logged is searched for them. A provider error that echoes a key is redacted before it is
recorded.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import traceback
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from faults import FakeHTTPError, Fault, FaultPlan, FaultyModel, read_events
from pipeline_helpers import POWER8_IDEA, POWER8_RUN, replay_cli_args
from strands.models import Model
from strands.types.exceptions import ContextWindowOverflowException

import haytham.models.factory as factory
from haytham.cli import main
from haytham.config import Settings
from haytham.errors import ProviderError
from haytham.models.accounting import AccountedModel
from haytham.safety.redact import redact, redact_json, remember_settings
from haytham.stages import Phase
from haytham.storage.folder import SessionStore
from haytham.verify.verdict import inconclusive

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
            "connection_reset",
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


# -- issue 15: credentials echoed by provider errors ------------------------------------------
BEARER = "sk-proj-" + secrets.token_hex(16)  # in no environment variable: caught by its shape
X_API_KEY = "xk-" + secrets.token_hex(12)
KEY_ONLY_BASIC = base64.b64encode(b":only-a-key-1").decode()  # Basic with an empty user


class _Raising(FaultyModel):
    """The real provider model, except that every call raises ``make()`` (what a provider SDK
    raises, possibly chained to the SDK's own error)."""

    def __init__(self, inner: Model, agent: str, make: Callable[[], Exception]) -> None:
        super().__init__(inner, agent, FaultPlan())
        self.make = make

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise self.make()
        yield  # an async generator, like every Strands model


def _provider_raises(monkeypatch, agent: str, make: Callable[[], Exception]) -> None:
    real = factory._provider_model

    def wrapped(settings: Any, tier: str, name: str, *args: Any, **kwargs: Any) -> Model:
        inner = real(settings, tier, name, *args, **kwargs)
        return _Raising(inner, name, make) if name == agent else inner

    monkeypatch.setattr(factory, "_provider_model", wrapped)


def _overflow_echoing_headers() -> Exception:
    """What Strands' OpenAI/Anthropic models raise on an overflow: the SDK's 400, re-raised as
    ``ContextWindowOverflowException(str(error)) from error``; both echo the request headers."""
    sdk = FakeHTTPError(
        400,
        "Error code: 400 - context_length_exceeded; request headers "
        f"{{'Authorization': 'Bearer {BEARER}', 'x-api-key': '{X_API_KEY}'}}",
    )
    try:
        raise sdk
    except FakeHTTPError as error:
        try:
            raise ContextWindowOverflowException(
                f"{error} (sent Authorization: Bearer {BEARER}; x-api-key: {X_API_KEY})"
            ) from error
        except ContextWindowOverflowException as overflow:
            return overflow


def _overflow_echoed_by_its_cause_only() -> Exception:
    """A generic overflow sentence raised from an SDK error that echoes the headers."""
    try:
        raise FakeHTTPError(400, f"too long; sent x-api-key: {X_API_KEY}")
    except FakeHTTPError as error:
        try:
            raise ContextWindowOverflowException("Input is too long for requested model") from error
        except ContextWindowOverflowException as overflow:
            return overflow


def _everything(tmp_path: Path, skip: Path | None = None) -> str:
    """Every byte under ``tmp_path`` (sessions, sessions/_tracking, state.db …) as text."""
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace")
        for p in sorted(tmp_path.rglob("*"))
        if p.is_file() and p != skip
    )


def _log_text(caplog) -> str:
    return caplog.text + "\n".join(r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_a_context_overflow_echoing_auth_headers_leaks_them_nowhere(
    tmp_path, monkeypatch, capsys, caplog, debug
):
    monkeypatch.setenv("HAYTHAM_RETRY_DELAY", "0")
    caplog.set_level(logging.DEBUG)
    _provider_raises(monkeypatch, "idea-analysis", _overflow_echoing_headers)
    opts = replay_cli_args(tmp_path)
    flags = ["--debug"] if debug else []
    assert main([*flags, "run", "--idea", POWER8_IDEA, "--session-id", "ovf", *opts]) == 1
    run = capsys.readouterr()
    assert "ContextWindowOverflowException" in run.err and "[redacted]" in run.err
    (failed,) = read_events(tmp_path / "sessions" / "ovf", "stage_failed")
    assert "context_length_exceeded" in failed["data"]["error"]["message"]
    assert (tmp_path / "sessions" / "_tracking" / "haytham" / "ovf" / "log.jsonl").exists()
    assert main([*flags, "status", "ovf", *opts]) == 0
    assert main([*flags, "status", "ovf", "--json", *opts]) == 0
    status = capsys.readouterr()
    assert "context_length_exceeded" in status.out  # the failure is reported, redacted
    seen = "\n".join([_everything(tmp_path), run.out, run.err, status.out, status.err])
    seen += _log_text(caplog)
    for secret in (BEARER, X_API_KEY, BEARER[8:20], X_API_KEY[3:15]):
        assert secret not in seen


def test_a_base_url_password_and_its_basic_header_leak_nowhere(
    tmp_path, monkeypatch, capsys, caplog
):
    """The base URL is configured in ``.env`` only (so in no environment variable): its
    password is known through the settings; the error echoes it as a Basic header, as bare
    base64 and as the bare password."""
    password = "secretpass-" + secrets.token_hex(6)
    basic = base64.b64encode(f"founder:{password}".encode()).decode()
    project = tmp_path / "project"
    project.mkdir()
    dotenv = project / ".env"
    dotenv.write_text(f"OPENAI_BASE_URL=http://founder:{password}@llm.internal:8000/v1\n")
    monkeypatch.chdir(project)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("HAYTHAM_RETRY_DELAY", "0")
    caplog.set_level(logging.DEBUG)
    _provider_raises(
        monkeypatch,
        "idea-analysis",
        lambda: FakeHTTPError(
            401,
            f"401 Unauthorized: POST http://llm.internal:8000/v1 with Authorization: Basic "
            f"{basic}; credentials {basic} (password {password}) rejected",
        ),
    )
    opts = replay_cli_args(tmp_path)
    assert main(["providers", *opts]) == 0  # before any run made the password known
    providers = capsys.readouterr()
    assert "llm.internal:8000" in providers.out  # the endpoint is shown, without its userinfo
    assert main(["run", "--idea", POWER8_IDEA, "--session-id", "basic", *opts]) == 1
    run = capsys.readouterr()
    assert "credentials rejected (HTTP 401)" in run.err
    assert "[openai_base_url credentials redacted]" in run.err
    assert main(["status", "basic", *opts]) == 0
    after = capsys.readouterr()
    seen = "\n".join(
        [_everything(tmp_path, skip=dotenv), providers.out, run.out, run.err, after.out, after.err]
    )
    seen += _log_text(caplog)
    for secret in (password, basic, basic[:16]):
        assert secret not in seen


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(_overflow_echoing_headers, id="context-overflow"),
        pytest.param(_overflow_echoed_by_its_cause_only, id="context-overflow-cause"),
        pytest.param(
            lambda: FakeHTTPError(401, f"401 Unauthorized (Authorization: Bearer {BEARER})"),
            id="provider-error",
        ),
        pytest.param(
            lambda: ProviderError(f"echoed x-api-key: {X_API_KEY}"),
            id="haytham-error",
        ),
    ],
)
def test_a_model_error_echoing_a_credential_is_raised_redacted_and_unchained(error) -> None:
    """Whatever the provider raised, the error leaving the model layer (what tracebacks, logs
    and Burr's tracking print) shows no credential, in its text or its chain."""

    class Failing(FaultyModel):
        async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
            raise error()
            yield

    model = AccountedModel(
        Failing(SimpleNamespace(get_config=dict), "a", FaultPlan()),
        provider="openai",
        model_id="m",
        tier="heavy",
        agent="a",
        max_retries=0,
    )

    async def call() -> None:
        async for _ in model.stream([{"role": "user", "content": [{"text": "hi"}]}]):
            pass

    with pytest.raises(Exception) as raised:
        asyncio.run(call())
    shown = "".join(traceback.format_exception(raised.value))
    assert str(raised.value) in shown
    assert BEARER not in shown and X_API_KEY not in shown


def _shape_id(value: str) -> str:
    """The test id without the random secrets, the same in every process (pytest-xdist)."""
    return value.replace(BEARER, "<bearer>").replace(X_API_KEY, "<x-api-key>")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Authorization: Bearer {BEARER}", BEARER),
        (f"Bearer {BEARER}", BEARER),
        (f"proxy-authorization: basic {BASIC}", BASIC),
        (f"x-api-key: {X_API_KEY}", X_API_KEY),
        (f"X-Api-Key={X_API_KEY}", X_API_KEY),
        (f"api-key: {X_API_KEY}", X_API_KEY),
        (f"[(b'x-api-key', b'{X_API_KEY}')]", X_API_KEY),
        (f"('authorization', 'Token {X_API_KEY}')", X_API_KEY),
        ("http://user:secretpass@llm.example:8000/v1", "secretpass"),
        (f"https://{X_API_KEY}@git.example/repo.git", X_API_KEY),
        (f"GET /v1/models?key={X_API_KEY}", X_API_KEY),
        (f"GET /v1/models?a=1&api_key={X_API_KEY}&b=2", X_API_KEY),
        (f"wss://llm.example/stream?token={X_API_KEY}", X_API_KEY),
        (f"/cb?access_token={X_API_KEY}#top", X_API_KEY),
        (f"Basic {KEY_ONLY_BASIC}", KEY_ONLY_BASIC),
    ],
    ids=_shape_id,
)
def test_each_credential_shape_is_redacted(text: str, secret: str) -> None:
    out = redact(text, {})
    assert secret not in out and "[redacted]" in out


def test_url_userinfo_keeps_scheme_and_host() -> None:
    assert redact("POST http://user:secretpass@llm.example/v1 failed", {}) == (
        "POST http://[redacted]@llm.example/v1 failed"
    )


@pytest.mark.parametrize(
    "text",
    [
        "Pick the Basic plan; a bearer of news said Basic English is fine.",
        "Basic planning: a Bearer bond, the Bearer of bad news",
        "the api key rotation and the token budget; authorization is later",
        "write to a@example.com or see https://medium.com/@founder and ?page=2&sort=key",
        "basic authentication, bearer authentication and x-api-key headers are supported",
        "Basic Income Guarantee and Basic Unit",
    ],
)
def test_ordinary_words_near_credential_names_survive(text: str) -> None:
    assert redact(text, {}) == text


def test_settings_base_urls_are_known_even_without_an_environment_variable() -> None:
    settings = Settings(
        provider="replay",
        llamacpp_base_url="http://svc:pa%40ss-word-77@127.0.0.1:8080",  # "pa@ss-word-77"
    )
    basic = base64.b64encode(b"svc:pa@ss-word-77").decode()
    text = f"bad password pa@ss-word-77, pa%40ss-word-77 and credentials {basic}"
    assert "pa@ss-word-77" in redact(text, {})  # unknown before the settings are seen
    remember_settings(settings)
    out = redact(text, {})
    assert "ss-word-77" not in out and basic not in out
    assert "[llamacpp_base_url credentials redacted]" in out


def test_an_event_line_hides_a_header_split_across_key_and_value(tmp_path) -> None:
    files = SessionStore(tmp_path).create("hdr")
    files.append_event(
        "model_call",
        "idea-analysis",
        headers={"Authorization": "Token abcdefgh", "X-Api-Key": "shortkey"},
        raw_headers=[["authorization", "Token hgfedcba"]],  # httpx's pairs: caught on the line
        note='quoted "Authorization: \\"tok-1\\"" stays valid JSON',
    )
    raw = (tmp_path / "hdr" / "events.jsonl").read_text("utf-8")
    assert "abcdefgh" not in raw and "shortkey" not in raw and "hgfedcba" not in raw
    (event,) = read_events(tmp_path / "hdr", "model_call")
    assert event["data"]["headers"] == {"Authorization": "[redacted]", "X-Api-Key": "[redacted]"}


def test_an_event_line_is_redacted_as_json_text_and_stays_json() -> None:
    assert redact_json('{"h": {"Authorization":"Bearer abcdefgh"}}') == (
        '{"h": {"Authorization":"Bearer [redacted]"}}'
    )
    line = json.dumps({"note": 'x-api-key: "k\\" and Authorization=\\"tok-123456\\"'})
    assert json.loads(redact_json(line))  # a JSON escape is never cut in half


def test_an_inconclusive_verdict_reason_is_redacted() -> None:
    verdict = inconclusive(Phase.WHY, "single", f"the verifier could not run: Bearer {BEARER}")
    assert BEARER not in verdict.reason and "Bearer [redacted]" in verdict.reason
