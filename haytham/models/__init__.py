"""The model layer: build Strands models per provider and tier, with accounting, retries, replay.

Public entry points (import from the submodules, or from here):

- :func:`~haytham.models.factory.build_model`, :class:`~haytham.models.factory.ModelRuntime`,
  :func:`~haytham.models.factory.context_window`, :func:`~haytham.models.accounting.estimate_tokens`
- :class:`~haytham.models.accounting.ModelCall`, :data:`~haytham.models.accounting.CallSink`
- :func:`~haytham.models.providers.provider_report`, :func:`~haytham.models.providers.check_provider`,
  :data:`~haytham.models.providers.LOCAL_MODEL_CAVEAT`
"""

from haytham.models.accounting import CallSink, ModelCall, estimate_tokens
from haytham.models.factory import ModelRuntime, build_model, context_window
from haytham.models.providers import (
    LOCAL_MODEL_CAVEAT,
    ProviderStatus,
    check_provider,
    provider_report,
)

__all__ = [
    "LOCAL_MODEL_CAVEAT",
    "CallSink",
    "ModelCall",
    "ModelRuntime",
    "ProviderStatus",
    "build_model",
    "check_provider",
    "context_window",
    "estimate_tokens",
    "provider_report",
]
