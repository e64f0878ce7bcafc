"""Adding a provider touches its module and the table only: a fake provider, defined here and
put in a table of its own (no global registration), is accepted by the settings, listed by the
status report, built by the model factory and known to redaction."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, ClassVar

import pytest
from strands.models import Model

from haytham.config import TIERS, Settings
from haytham.errors import ConfigError
from haytham.evals.budget import price_of
from haytham.evals.judge import apply_determinism
from haytham.models.accounting import AccountedModel
from haytham.models.factory import ModelRuntime, build_model, context_window
from haytham.models.providers import PROVIDER_TABLE, provider_report
from haytham.models.providers.spec import (
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    ProviderTable,
    StatusCheck,
    with_provider,
)
from haytham.safety.redact import redact, remember_settings


class FakeModel(Model):  # type: ignore[misc]
    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.config: dict[str, Any] = {}

    def update_config(self, **config: Any) -> None:
        self.config.update(config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        yield {"messageStart": {"role": "assistant"}}

    async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError
        yield


def fake_status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    return True, "the fake provider always answers (its key is fk-live-0123456789abcdef)."


def fake_sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    model.update_config(temperature=temperature)
    return [f"temperature={temperature}"]


FAKE = ProviderSpec(
    name="fake",
    label="fake: a provider defined in a test",
    default_models=MappingProxyType(dict.fromkeys(TIERS, "fake-1")),
    context_window=4096,
    build=FakeModel,
    status=fake_status,
    variables=("FAKE_API_KEY",),
    credential_patterns=(r"\bfk-live-[0-9a-f]{16}\b",),
    credential_hint="check FAKE_API_KEY",
    sampling=fake_sampling,
    free=True,
)
TABLE: ProviderTable = with_provider(PROVIDER_TABLE, FAKE)


class FakeSettings(Settings):
    """The settings with the fake provider's table: a subclass, nothing global changes."""

    providers: ClassVar[ProviderTable] = TABLE


def test_the_settings_accept_a_provider_of_their_table_only() -> None:
    settings = FakeSettings(provider="Fake")
    assert settings.provider == "fake" and settings.spec is FAKE
    assert settings.model_id("heavy") == "fake-1"
    assert context_window(settings) == 4096
    with pytest.raises(ValueError, match="use one of local, anthropic"):
        Settings(provider="fake")  # the product's own table does not know it
    assert "fake" not in PROVIDER_TABLE


def test_the_status_report_lists_it_with_its_variables() -> None:
    report = provider_report(FakeSettings(provider="fake"), env={})
    assert [s.name for s in report] == [*PROVIDER_TABLE, "fake"]
    fake = report[-1]
    assert fake.usable and fake.env_vars == ["FAKE_API_KEY"]
    assert "fk-live-" not in fake.reason  # reasons are redacted by the key's shape


def test_the_factory_builds_it_through_its_spec() -> None:
    settings = FakeSettings(provider="fake", model_heavy="fake-2")
    with ModelRuntime(settings) as runtime:
        model = build_model(settings, "heavy", "critic", runtime=runtime)
    assert isinstance(model, AccountedModel) and isinstance(model.inner, FakeModel)
    request = model.inner.request
    assert (request.model_id, request.window, request.agent) == ("fake-2", 4096, "critic")
    assert model.credential_hint == "check FAKE_API_KEY"
    assert apply_determinism(model.inner, "fake", "fake-2", 7, TABLE) == "temperature=0.0"
    assert price_of("fake", "fake-2", TABLE) == (0.0, 0.0)


def test_an_unusable_fake_is_refused_in_one_sentence() -> None:
    refusing = ProviderSpec(
        name="fake",
        label="fake",
        default_models=MappingProxyType(dict.fromkeys(TIERS, "fake-1")),
        context_window=4096,
        build=FakeModel,
        status=lambda settings, check: (False, "FAKE_API_KEY is not set."),
    )

    class Refusing(Settings):
        providers: ClassVar[ProviderTable] = with_provider(PROVIDER_TABLE, refusing)

    with pytest.raises(ConfigError, match="Provider 'fake' cannot be used: FAKE_API_KEY"):
        build_model(Refusing(provider="fake"), "heavy", "critic")


def test_redaction_knows_its_credential_shape() -> None:
    remember_settings(FakeSettings(provider="fake"))
    text = redact("rejected key fk-live-0123456789abcdef for the fake", {})
    assert "fk-live-0123456789abcdef" not in text and "rejected key" in text
    assert redact("the fk-live plan", {}) == "the fk-live plan"  # the word alone survives
