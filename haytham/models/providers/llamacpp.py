"""A running llama-server of your own (``HAYTHAM_LLAMACPP_URL``)."""

from __future__ import annotations

from types import MappingProxyType

from strands.models import Model

from haytham.models.providers.spec import (
    TIERS,
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
    UrlField,
    params_cap,
    params_sampling,
)

DEFAULT_URL = "http://localhost:8080"


def build(request: ModelRequest) -> Model:
    """Strands' ``LlamaCppModel`` on the configured server."""
    from strands.models.llamacpp import LlamaCppModel

    return LlamaCppModel(
        base_url=request.settings.llamacpp_base_url or DEFAULT_URL,
        timeout=request.timeout,
        model_id=request.model_id,
        context_window_limit=request.window,
    )


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when its URL is set (the server is checked by the first call)."""
    if settings.llamacpp_base_url:
        return True, f"llama.cpp server expected at {settings.llamacpp_base_url}."
    return False, (
        "HAYTHAM_LLAMACPP_URL is not set: point it at a running llama-server "
        "(e.g. http://localhost:8080)."
    )


def sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Temperature and seed in the request's params."""
    return params_sampling(model, temperature, seed)


SPEC = ProviderSpec(
    name="llamacpp",
    label="llamacpp: a running llama-server",
    default_models=MappingProxyType(dict.fromkeys(TIERS, "default")),
    context_window=8192,
    build=build,
    status=status,
    variables=("HAYTHAM_LLAMACPP_URL",),
    url_fields=("llamacpp_base_url",),
    url=UrlField(
        "llamacpp_base_url",
        "llama-server URL",
        required="Give the llama-server URL, e.g. http://localhost:8080.",
    ),
    endpoint=lambda settings: settings.llamacpp_base_url or DEFAULT_URL,
    one_token=lambda model, settings: params_cap(model),
    sampling=sampling,
    free=True,
)
"""A llama-server of your own."""
