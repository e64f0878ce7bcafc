"""The one table of providers: adding a provider adds its module's ``SPEC`` here."""

from __future__ import annotations

from haytham.models.providers import anthropic, bedrock, llamacpp, local, ollama, openai, replay
from haytham.models.providers.spec import ProviderTable, provider_table

PROVIDER_TABLE: ProviderTable = provider_table(
    local.SPEC,
    anthropic.SPEC,
    bedrock.SPEC,
    openai.SPEC,
    ollama.SPEC,
    llamacpp.SPEC,
    replay.SPEC,
)
"""Every provider, in the order ``haytham providers`` and the provider page list them."""
