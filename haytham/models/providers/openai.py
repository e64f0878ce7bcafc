"""OpenAI's API, or any OpenAI-compatible server (``OPENAI_BASE_URL``; ``haytham[openai]``)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from strands.models import Model

from haytham.models.providers.spec import (
    KeyField,
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
    UrlField,
    installed,
    merge_config,
    params_cap,
    params_sampling,
    require,
)

INSTALL = "pip install 'haytham[openai]'"
NO_TEMPERATURE = ("gpt-5", "o1", "o3", "o4")
"""Model id prefixes of OpenAI's reasoning models, which refuse a temperature."""


def build(request: ModelRequest) -> Model:
    """Strands' ``OpenAIModel`` (a compatible server may need no key) with no SDK retries."""
    require("openai", "openai")
    from strands.models.openai import OpenAIModel

    settings = request.settings
    client_args: dict[str, Any] = {
        "api_key": settings.secret("openai_api_key") or "not-needed",
        "max_retries": 0,
        "timeout": request.timeout,
    }
    if settings.openai_base_url:
        client_args["base_url"] = settings.openai_base_url
    return OpenAIModel(client_args=client_args, model_id=request.model_id)


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when the SDK is installed and a key or a compatible server is set."""
    base_url = settings.openai_base_url
    if not installed("openai"):
        return False, f"the openai extra is not installed: run {INSTALL}."
    if not settings.secret("openai_api_key") and not base_url:
        return False, (
            "OPENAI_API_KEY is not set: export it, or set OPENAI_BASE_URL for a compatible server."
        )
    return True, f"openai SDK installed; endpoint {base_url or 'api.openai.com'}."


def one_token(model: Model, settings: ProviderSettings) -> None:
    """OpenAI's own API takes max_completion_tokens (its reasoning models refuse max_tokens);
    compatible servers take max_tokens."""
    params_cap(model, "max_tokens" if settings.openai_base_url else "max_completion_tokens")


def sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Temperature (except for the reasoning models) and seed in the request's params."""
    if not model_id.startswith(NO_TEMPERATURE):
        return params_sampling(model, temperature, seed)
    merge_config(model, "params", {"seed": seed})
    return [f"{model_id} accepts no temperature", f"seed={seed}"]


SPEC = ProviderSpec(
    name="openai",
    label="openai: OpenAI, or any OpenAI-compatible server (base URL)",
    default_models=MappingProxyType(
        {"light": "gpt-5-mini", "heavy": "gpt-5.1", "reasoning": "gpt-5.1"}
    ),
    context_window=128_000,
    build=build,
    status=status,
    variables=("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    install=INSTALL,
    secret_fields=("openai_api_key",),
    url_fields=("openai_base_url",),
    credential_patterns=(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}",),
    credential_hint="check OPENAI_API_KEY (or OPENAI_BASE_URL)",
    key=KeyField("openai_api_key", "OPENAI_API_KEY", "API key"),
    url=UrlField("openai_base_url", "Base URL (leave empty for api.openai.com)"),
    endpoint=lambda settings: settings.openai_base_url or None,
    one_token=one_token,
    sampling=sampling,
    needs_key=True,
)
"""OpenAI, or an OpenAI-compatible server."""
