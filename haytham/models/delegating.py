"""Base for model wrappers (accounting, recording): everything but the call goes to ``inner``."""

from __future__ import annotations

from typing import Any

from strands.models import Model


class DelegatingModel(Model):
    """Forwards configuration, capabilities and token counting to the wrapped model."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    @property
    def config(self) -> Any:
        """The inner model's config (Strands reads ``model.config["model_id"]`` for tracing)."""
        return self.inner.get_config()

    @property
    def _supports_structured_output(self) -> bool:  # type: ignore[override]  # Strands' Model has a plain attribute
        return bool(getattr(self.inner, "_supports_structured_output", False))

    @property
    def stateful(self) -> bool:
        """Whether the wrapped model keeps conversation state between calls."""
        return self.inner.stateful

    def update_config(self, **model_config: Any) -> None:
        """Pass configuration through to the wrapped model."""
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        """The wrapped model's configuration."""
        return self.inner.get_config()

    async def count_tokens(self, *args: Any, **kwargs: Any) -> int:
        """The wrapped model's token count for a request."""
        return await self.inner.count_tokens(*args, **kwargs)
