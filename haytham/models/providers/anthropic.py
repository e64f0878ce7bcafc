"""Anthropic's API: Claude with an API key (``haytham[anthropic]``)."""

from __future__ import annotations

from types import MappingProxyType

from strands.models import Model

from haytham.models.providers.spec import (
    MAX_OUTPUT_TOKENS,
    KeyField,
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
    installed,
    params_sampling,
    require,
)

INSTALL = "pip install 'haytham[anthropic]'"


def build(request: ModelRequest) -> Model:
    """Strands' ``AnthropicModel`` with the key from the settings and no SDK retries."""
    require("anthropic", "anthropic")
    from strands.models.anthropic import AnthropicModel

    return AnthropicModel(
        client_args={
            "api_key": request.settings.secret("anthropic_api_key"),
            "max_retries": 0,
            "timeout": request.timeout,
        },
        model_id=request.model_id,
        max_tokens=MAX_OUTPUT_TOKENS[request.tier],
    )


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when the SDK is installed and the key is set."""
    if not installed("anthropic"):
        return False, f"the anthropic extra is not installed: run {INSTALL}."
    if not settings.secret("anthropic_api_key"):
        return False, "ANTHROPIC_API_KEY is not set: export it (or put it in .env)."
    return True, "anthropic SDK installed and ANTHROPIC_API_KEY set."


def sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Temperature only: the API takes no seed."""
    return [*params_sampling(model, temperature, None), "no seed support"]


SPEC = ProviderSpec(
    name="anthropic",
    label="anthropic: Claude (API key)",
    default_models=MappingProxyType(
        {"light": "claude-haiku-4-5", "heavy": "claude-sonnet-4-6", "reasoning": "claude-opus-4-6"}
    ),
    context_window=200_000,
    build=build,
    status=status,
    variables=("ANTHROPIC_API_KEY",),
    install=INSTALL,
    secret_fields=("anthropic_api_key",),
    credential_patterns=(r"\bsk-ant-[A-Za-z0-9_\-]{16,}",),
    credential_hint="check ANTHROPIC_API_KEY",
    key=KeyField("anthropic_api_key", "ANTHROPIC_API_KEY", "Anthropic API key"),
    one_token=lambda model, settings: model.update_config(max_tokens=1),
    sampling=sampling,
    needs_key=True,
)
"""Claude on Anthropic's API."""
