"""Model providers as specs: one module per provider, one table of them.

- :mod:`~haytham.models.providers.spec`: :class:`ProviderSpec` (everything about one provider)
  and :class:`ProviderSettings` (what the model layer reads from the settings);
- one module per provider (``local``, ``anthropic``, ``bedrock``, ``openai``, ``ollama``,
  ``llamacpp``, ``replay``), each defining its ``SPEC``;
- :mod:`~haytham.models.providers.table`: :data:`PROVIDER_TABLE`, the one list of them;
- :mod:`~haytham.models.providers.status`: :func:`provider_report` and :func:`check_provider`.

docs/providers.md says how to add a provider.
"""

from haytham.models.providers.local import LOCAL_MODEL_CAVEAT
from haytham.models.providers.spec import ProviderSpec, ProviderStatus, ProviderTable
from haytham.models.providers.status import check_provider, provider_report
from haytham.models.providers.table import PROVIDER_TABLE

__all__ = [
    "LOCAL_MODEL_CAVEAT",
    "PROVIDER_TABLE",
    "ProviderSpec",
    "ProviderStatus",
    "ProviderTable",
    "check_provider",
    "provider_report",
]
