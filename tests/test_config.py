"""Settings: precedence (.env < environment < overrides), one parsing of on/off, one sentence for
an unusable value, nested sections, `.env` read without touching ``os.environ``, secrets never
serialised."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from haytham.config import (
    DEFAULT_MODEL_IDS,
    LOCAL_MODEL_ID,
    VARIABLES,
    Settings,
    ValidatorSettings,
    VerifySettings,
    load_settings,
    parse_on_off,
    read_dotenv,
)
from haytham.errors import ConfigError
from haytham.safety.redact import redact
from haytham.stages import Phase


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


def test_api_keys_are_held_as_secrets_and_never_serialised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    dotenv = write_env(tmp_path, "ANTHROPIC_API_KEY=sk-dotenv-secret\nHAYTHAM_PROVIDER=anthropic\n")
    env = {"OPENAI_API_KEY": "sk-env-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret-value"}
    settings = load_settings(env=env, dotenv=dotenv)
    assert settings.secret("anthropic_api_key") == "sk-dotenv-secret"
    assert settings.secret("openai_api_key") == "sk-env-secret"
    assert settings.secret("aws_secret_access_key") == "aws-secret-value"
    shown = (
        settings.model_dump_json()
        + json.dumps(settings.model_dump(mode="json"))
        + repr(settings)
        + str(settings)
    )
    assert "secret" not in shown and "api_key" not in shown
    secret_fields = {n for n, f in Settings.model_fields.items() if f.exclude}
    assert {"anthropic_api_key", "openai_api_key", "aws_secret_access_key"} <= secret_fields
    assert not secret_fields & set(settings.model_dump())
    # what the UI caches and rebuilds from is the JSON: no credentials in it
    assert Settings.model_validate_json(settings.model_dump_json()).secret("openai_api_key") is None
    assert "ANTHROPIC_API_KEY" not in os.environ  # explicit env mapping: process env untouched


def test_dotenv_is_read_without_touching_os_environ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("HAYTHAM_BLOCKING_VALIDATORS", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-env")
    dotenv = write_env(
        tmp_path,
        "ANTHROPIC_API_KEY=sk-dotenv-secret\nOPENAI_API_KEY=sk-other\n"
        "HAYTHAM_BLOCKING_VALIDATORS=appetite\nAWS_ACCESS_KEY_ID=AKIADOTENV\n",
    )
    before = dict(os.environ)
    settings = load_settings(dotenv=dotenv)
    assert dict(os.environ) == before  # nothing exported
    assert settings.secret("anthropic_api_key") == "sk-dotenv-secret"
    assert settings.secret("openai_api_key") == "sk-real-env"  # env beats .env
    assert settings.secret("aws_access_key_id") == "AKIADOTENV"
    assert settings.validators.blocking == {"appetite"}
    # a credential known only from .env is still redacted wherever it is echoed
    assert "sk-dotenv-secret" not in redact("rejected key sk-dotenv-secret", {})


def test_nested_values_from_dotenv_environment_and_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haytham.verify.config import VerifyConfig

    for var in ("HAYTHAM_BLOCKING_VALIDATORS", "HAYTHAM_MAX_REWORK_ROUNDS", "HAYTHAM_PROVIDER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
    monkeypatch.setenv("HAYTHAM_VERIFY_HOW", "swarm")
    dotenv = write_env(
        tmp_path,
        "HAYTHAM_BLOCKING_VALIDATORS=appetite\nHAYTHAM_MAX_REWORK_ROUNDS=1\n"
        "HAYTHAM_EMBEDDINGS=on\nHAYTHAM_PROVIDER=replay\nHAYTHAM_VERIFY_HOW=off\n"
        "HAYTHAM_VERIFY_WHY=off\nHAYTHAM_SWARM_TIMEOUT=30\nHAYTHAM_REPORTS_DIR=out/reports\n"
        "HAYTHAM_INPUT_VALIDATION=no\n",
    )
    settings = load_settings(dotenv=dotenv, verify={"why": "single"})
    assert settings.provider == "replay"
    assert settings.validators.blocking == {"appetite"}
    assert settings.validators.embeddings is False  # the real environment beats .env
    assert settings.verify.how == "swarm"  # …in a section too
    assert settings.verify.why == "single"  # an override beats both
    assert settings.verify.input_validation is False
    assert settings.evals.reports_dir == Path("out/reports")
    config = VerifyConfig.from_settings(settings)
    assert config.max_rework_rounds == 1 and config.limits.execution_timeout == 30.0
    assert config.strategy(Phase.HOW) == "swarm" and config.strategy(Phase.WHY) == "single"
    assert "HAYTHAM_BLOCKING_VALIDATORS" not in os.environ  # read, never exported


ON_OFF_FIELDS = sorted(
    (section, name)
    for section, model in (("verify", VerifySettings), ("validators", ValidatorSettings))
    for name, info in model.model_fields.items()
    if any(getattr(m, "func", None) is parse_on_off for m in info.metadata)
)


def test_every_switch_shares_one_on_off_parsing() -> None:
    assert ON_OFF_FIELDS == [("validators", "embeddings"), ("verify", "input_validation")]
    words = {True: ("on", "ON", "true", "True", "1", "yes", " Yes "), False: OFF_SPELLINGS}
    for section, name in ON_OFF_FIELDS:
        var = next(v for v, path in VARIABLES.items() if path == f"{section}.{name}")
        for expected, spellings in words.items():
            for word in spellings:
                settings = load_settings(env={var: word}, dotenv=None)
                assert getattr(getattr(settings, section), name) is expected, (var, word)


OFF_SPELLINGS = ("off", "OFF", "false", "FALSE", "0", "no", "No")


@pytest.mark.parametrize(
    ("var", "value", "accepted"),
    [
        ("HAYTHAM_EMBEDDINGS", "maybe", "on, off, true, false, 1, 0, yes, no"),
        ("HAYTHAM_INPUT_VALIDATION", "disabled", "on, off, true, false, 1, 0, yes, no"),
        ("HAYTHAM_VERIFY_WHY", "vote", "'single', 'swarm' or 'off'"),
        ("HAYTHAM_VERIFY_TIER", "huge", "'light', 'heavy' or 'reasoning'"),
        ("HAYTHAM_PROVIDER", "gpt", "local, anthropic"),
        ("HAYTHAM_MAX_REWORK_ROUNDS", "two", "valid integer"),
        ("HAYTHAM_SWARM_TIMEOUT", "soon", "valid number"),
        ("HAYTHAM_MAX_RETRIES", "-1", "0 or more"),
        ("HAYTHAM_BLOCKING_VALIDATORS", "trait_propagaton", "trait_propagation, invariant"),
    ],
)
def test_an_unusable_value_is_one_sentence_naming_the_variable(
    var: str, value: str, accepted: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={var: value}, dotenv=None)
    message = str(info.value)
    assert message.startswith(f"Invalid value {value!r} for {var} in the environment: ")
    assert accepted in message
    assert message.endswith(".") and ". " not in message.rstrip(".")


def test_every_documented_variable_is_read() -> None:
    root = Path(__file__).resolve().parent.parent
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in [root / "README.md", *root.glob("docs/*.md")]
    )
    documented = set(re.findall(r"\b(HAYTHAM_[A-Z_]*[A-Z])\b", text))
    # prefixes written as "HAYTHAM_SWARM_*", "HAYTHAM_VALIDATORS_<FIELD>"…
    fragments = {"HAYTHAM_VERIFY", "HAYTHAM_SWARM", "HAYTHAM_MODEL", "HAYTHAM_VALIDATORS"}
    not_settings = {"HAYTHAM_E2E_SHOTS"}  # a test's screenshot folder
    missing = sorted(documented - fragments - not_settings - set(VARIABLES))
    assert missing == []
    for var in ("OPENAI_BASE_URL", "OLLAMA_HOST", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        assert var in VARIABLES


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
    with pytest.raises(ConfigError, match="HAYTHAM_MAX_RETRIES in the environment"):
        load_settings(env={"HAYTHAM_MAX_RETRIES": "many"}, dotenv=None)
    dotenv = write_env(tmp_path, "HAYTHAM_PROVIDER=gpt\nHAYTHAM_VERIFY_STORIES=all\n")
    with pytest.raises(ConfigError, match=r"'gpt' for HAYTHAM_PROVIDER in .*\.env: use one of"):
        load_settings(env={}, dotenv=dotenv)
    with pytest.raises(ConfigError, match="HAYTHAM_VERIFY_STORIES in .*\\.env"):
        load_settings(env={"HAYTHAM_PROVIDER": "replay"}, dotenv=dotenv)
    with pytest.raises(ConfigError, match="provider option"):
        load_settings(env={}, dotenv=None, provider="nope")
    with pytest.raises(ConfigError, match="the verify why setting"):
        load_settings(env={}, dotenv=None, verify={"why": "vote"})
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


def test_the_evals_cli_takes_its_values_from_the_settings(tmp_path: Path) -> None:
    import argparse
    import io

    from haytham.evals.cli import BUNDLED, build_config, configure

    parser = argparse.ArgumentParser()
    configure(parser)
    env = {"HAYTHAM_EMBEDDINGS": "no", "HAYTHAM_REPORTS_DIR": str(tmp_path / "reports")}
    unset = load_settings(env=env, dotenv=None)
    notice = io.StringIO()
    config = build_config(parser.parse_args([]), err=notice, settings=unset)
    assert "No model provider is configured" in notice.getvalue()  # replays the bundled ones
    assert (config.settings.provider, config.settings.cassette) == ("replay", BUNDLED)
    assert config.embeddings is False and config.reports_dir == tmp_path / "reports"
    chosen = {**env, "HAYTHAM_PROVIDER": "replay", "HAYTHAM_CASSETTE": str(BUNDLED)}
    notice = io.StringIO()
    args = parser.parse_args(["--reports-dir", str(tmp_path / "x")])
    config = build_config(args, err=notice, settings=load_settings(env=chosen, dotenv=None))
    assert notice.getvalue() == "" and config.mode == "live"  # HAYTHAM_PROVIDER chose one
    assert config.reports_dir == tmp_path / "x"  # the flag beats HAYTHAM_REPORTS_DIR
