"""Settings: precedence (.env < environment < overrides), parsing, validation, no secrets stored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from haytham.config import DEFAULT_MODEL_IDS, LOCAL_MODEL_ID, Settings, load_settings, read_dotenv
from haytham.errors import ConfigError


def write_env(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".env"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_source() -> None:
    settings = load_settings(env={}, dotenv=None)
    assert settings.provider == "local"
    assert settings.model_id("heavy") == LOCAL_MODEL_ID
    assert settings.sessions_dir == Path("sessions")
    assert settings.cassette is None and settings.record_to is None
    assert (settings.max_retries, settings.retry_base_delay) == (3, 1.0)


def test_precedence_dotenv_then_env_then_overrides(tmp_path: Path) -> None:
    dotenv = write_env(
        tmp_path,
        "HAYTHAM_PROVIDER=openai\nHAYTHAM_MODEL_LIGHT=from-dotenv\nHAYTHAM_MAX_RETRIES=5\n"
        "HAYTHAM_MODEL_HEAVY=heavy-dotenv\n",
    )
    env = {"HAYTHAM_PROVIDER": "anthropic", "HAYTHAM_MODEL_LIGHT": "from-env"}
    settings = load_settings(env=env, dotenv=dotenv, provider="replay", model_light=None)
    assert settings.provider == "replay"  # override beats env and .env
    assert settings.model_light == "from-env"  # None override = not given; env beats .env
    assert settings.model_heavy == "heavy-dotenv"  # only in .env
    assert settings.max_retries == 5
    assert settings.model_id("light") == "from-env"
    assert settings.model_id("reasoning") == DEFAULT_MODEL_IDS["replay"]["reasoning"]


def test_env_values_are_typed_and_paths(tmp_path: Path) -> None:
    env = {
        "HAYTHAM_CONTEXT_WINDOW": "32768",
        "HAYTHAM_RETRY_DELAY": "0",
        "HAYTHAM_SESSIONS_DIR": str(tmp_path / "s"),
        "HAYTHAM_CASSETTE": "fixtures/run.jsonl",
        "OLLAMA_HOST": "http://box:11434",
        "HAYTHAM_LLAMACPP_URL": "http://box:8080",
        "OPENAI_BASE_URL": "http://box:1234/v1",
        "HAYTHAM_RECORD_TO": "out.jsonl",
    }
    settings = load_settings(env=env, dotenv=None)
    assert settings.context_window == 32768 and settings.retry_base_delay == 0.0
    assert settings.sessions_dir == tmp_path / "s"
    assert settings.cassette == Path("fixtures/run.jsonl")
    assert settings.record_to == Path("out.jsonl")
    assert settings.ollama_host == "http://box:11434"
    assert settings.llamacpp_base_url == "http://box:8080"
    assert settings.openai_base_url == "http://box:1234/v1"


def test_empty_env_value_means_unset(tmp_path: Path) -> None:
    dotenv = write_env(tmp_path, "HAYTHAM_PROVIDER=openai\n")
    assert load_settings(env={"HAYTHAM_PROVIDER": ""}, dotenv=dotenv).provider == "openai"


def test_api_keys_are_never_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    dotenv = write_env(tmp_path, "ANTHROPIC_API_KEY=sk-dotenv-secret\nHAYTHAM_PROVIDER=anthropic\n")
    env = {"OPENAI_API_KEY": "sk-env-secret"}
    settings = load_settings(env=env, dotenv=dotenv)
    dumped = settings.model_dump_json() + repr(settings)
    assert "secret" not in dumped
    assert not any("key" in field for field in Settings.model_fields)
    assert "ANTHROPIC_API_KEY" not in os.environ  # explicit env mapping: process env untouched


def test_dotenv_keys_reach_process_env_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "environ", dict(os.environ))  # what load_settings exports is undone
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ["OPENAI_API_KEY"] = "sk-real-env"
    dotenv = write_env(tmp_path, "ANTHROPIC_API_KEY=sk-dotenv-secret\nOPENAI_API_KEY=sk-other\n")
    settings = load_settings(dotenv=dotenv)
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-dotenv-secret"
    assert os.environ["OPENAI_API_KEY"] == "sk-real-env"  # env beats .env
    assert "secret" not in settings.model_dump_json()


def test_dotenv_switches_reach_the_modules_that_read_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haytham.validate import ValidatorSettings
    from haytham.verify.config import VerifyConfig

    monkeypatch.setattr(os, "environ", dict(os.environ))  # what load_settings exports is undone
    for var in ("HAYTHAM_BLOCKING_VALIDATORS", "HAYTHAM_MAX_REWORK_ROUNDS", "HAYTHAM_PROVIDER"):
        os.environ.pop(var, None)
    os.environ["HAYTHAM_EMBEDDINGS"] = "off"
    dotenv = write_env(
        tmp_path,
        "HAYTHAM_BLOCKING_VALIDATORS=appetite\nHAYTHAM_MAX_REWORK_ROUNDS=1\n"
        "HAYTHAM_EMBEDDINGS=on\nHAYTHAM_PROVIDER=replay\n",
    )
    load_settings(dotenv=dotenv)
    validators = ValidatorSettings.from_env()
    assert validators.blocking == {"appetite"}
    assert validators.embeddings is False  # the real environment beats .env
    assert VerifyConfig.from_env().max_rework_rounds == 1
    assert "HAYTHAM_PROVIDER" not in os.environ  # a Settings field stays in Settings


def test_dotenv_parsing(tmp_path: Path) -> None:
    path = write_env(
        tmp_path,
        "# comment\n\nexport A=1\nB = 'two words'\nC=\"quoted # not a comment\"\n"
        "D=plain # trailing comment\nnot a line\nE=\n",
    )
    assert read_dotenv(path) == {
        "A": "1",
        "B": "two words",
        "C": "quoted # not a comment",
        "D": "plain",
        "E": "",
    }
    assert read_dotenv(tmp_path / "missing.env") == {}


def test_invalid_values_raise_config_error_naming_the_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="HAYTHAM_MAX_RETRIES"):
        load_settings(env={"HAYTHAM_MAX_RETRIES": "many"}, dotenv=None)
    dotenv = write_env(tmp_path, "HAYTHAM_PROVIDER=gpt\n")
    with pytest.raises(ConfigError, match="unknown provider 'gpt'"):
        load_settings(env={}, dotenv=dotenv)
    with pytest.raises(ConfigError, match="provider option"):
        load_settings(env={}, dotenv=None, provider="nope")
    with pytest.raises(TypeError):
        load_settings(env={}, dotenv=None, api_key="x")


def test_model_id_per_provider_and_bad_tier() -> None:
    settings = Settings(provider="anthropic", model_reasoning="claude-custom")
    assert settings.model_id("light") == DEFAULT_MODEL_IDS["anthropic"]["light"]
    assert settings.model_id("reasoning") == "claude-custom"
    for provider, tiers in DEFAULT_MODEL_IDS.items():
        assert set(tiers) == {"light", "heavy", "reasoning"}, provider
    with pytest.raises(ConfigError, match="tier"):
        settings.model_id("huge")


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(ValidationError):
        settings.provider = "openai"  # type: ignore[misc]
