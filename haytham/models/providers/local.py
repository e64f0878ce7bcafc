"""The bundled local model: Gemma 3 270M served by llama-server (``haytham[local]``)."""

from __future__ import annotations

from types import MappingProxyType

from strands.models import Model

from haytham.models.llama_server import LOCAL_INSTALL, local_extra_problem
from haytham.models.local import LocalModel
from haytham.models.providers.spec import (
    TIERS,
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
    params_cap,
    params_sampling,
)

LOCAL_MODEL_ID = "gemma-3-270m-q4_k_m"
"""Model id reported for the bundled local model (the GGUF served by llama-server)."""

LOCAL_MODEL_CAVEAT = (
    "The bundled local model (Gemma 3 270M, a tiny base model) is only for trying the flow "
    "offline; for real results use a real provider: set HAYTHAM_PROVIDER=anthropic with "
    "ANTHROPIC_API_KEY (or bedrock, openai, ollama; see docs/providers.md)."
)
"""Shown wherever results from the local model are displayed."""


def build(request: ModelRequest) -> Model:
    """A :class:`~haytham.models.local.LocalModel` on the runtime's shared llama-server."""
    return LocalModel(
        request.runtime.local_url,
        model_id=request.model_id,
        # a 2-core CPU shared with other work can take minutes per stage; a shorter read
        # timeout only makes the accounting layer retry the whole generation from scratch
        timeout=max(request.timeout, 600.0),
        context_window=request.window,
        output_model=request.output_model,
        on_text=request.on_text,
    )


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when the local extra (runtime and weights) is installed."""
    problem = local_extra_problem()
    if problem:
        return False, f"{problem}."
    return True, "bundled Gemma 3 270M served by llama-server; no keys needed (demo quality only)."


def sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Temperature and seed in the request's params."""
    return params_sampling(model, temperature, seed)


SPEC = ProviderSpec(
    name="local",
    label="local: the bundled Gemma 3 270M (demo quality, offline)",
    default_models=MappingProxyType(dict.fromkeys(TIERS, LOCAL_MODEL_ID)),
    context_window=16384,
    build=build,
    status=status,
    install=LOCAL_INSTALL,
    one_token=lambda model, settings: params_cap(model),
    sampling=sampling,
    caveat=LOCAL_MODEL_CAVEAT,
    free=True,
)
"""The bundled local model."""
