"""Suite-wide defaults: pipeline tests skip the embedding checks (each would load the model and
embed every stage on a 2-core box); tests about embeddings turn them on explicitly. Intake is off
(the recorded replay cassettes have no intake turn); tests about intake turn it on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _intake_off_by_default() -> Iterator[None]:
    """Session-wide, so module-scoped fixtures that run sessions see it too."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HAYTHAM_INTAKE", "off")
        yield


@pytest.fixture(autouse=True)
def _embeddings_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
    monkeypatch.setenv("HAYTHAM_INTAKE", "off")
