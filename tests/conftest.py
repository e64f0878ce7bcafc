"""Suite-wide defaults: pipeline tests skip the embedding checks (each would load the model and
embed every stage on a 2-core box); tests about embeddings turn them on explicitly."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _embeddings_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
