"""A running Ollama server (``OLLAMA_HOST``; ``haytham[ollama]``)."""

from __future__ import annotations

from types import MappingProxyType

from strands.models import Model

from haytham.models.providers.spec import (
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
    UrlField,
    installed,
    merge_config,
    require,
)

INSTALL = "pip install 'haytham[ollama]'"
DEFAULT_HOST = "http://localhost:11434"


def build(request: ModelRequest) -> Model:
    """Strands' ``OllamaModel`` with the context window as ``num_ctx``."""
    require("ollama", "ollama")
    from strands.models.ollama import OllamaModel

    return OllamaModel(
        request.settings.ollama_host or DEFAULT_HOST,
        ollama_client_args={"timeout": request.timeout},
        model_id=request.model_id,
        options={"num_ctx": request.window},
    )


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when the client is installed (the server is checked by the first call)."""
    if installed("ollama"):
        host = settings.ollama_host or DEFAULT_HOST
        return True, f"ollama client installed; server expected at {host}."
    return False, f"the ollama extra is not installed: run {INSTALL}."


def one_token(model: Model, settings: ProviderSettings) -> None:
    """``num_predict`` in the model's options."""
    merge_config(model, "options", {"num_predict": 1})


def sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Temperature, and the seed in the model's options."""
    merge_config(model, "options", {"seed": seed})
    model.update_config(temperature=temperature)
    return [f"temperature={temperature}", f"seed={seed}"]


SPEC = ProviderSpec(
    name="ollama",
    label="ollama: a running Ollama server",
    default_models=MappingProxyType(
        {"light": "llama3.2:3b", "heavy": "qwen3:8b", "reasoning": "qwen3:14b"}
    ),
    context_window=8192,
    build=build,
    status=status,
    variables=("OLLAMA_HOST",),
    install=INSTALL,
    url_fields=("ollama_host",),
    url=UrlField("ollama_host", "Ollama host", DEFAULT_HOST),
    endpoint=lambda settings: settings.ollama_host or DEFAULT_HOST,
    one_token=one_token,
    sampling=sampling,
    free=True,
)
"""A running Ollama server."""
