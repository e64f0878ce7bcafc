"""Replay: answers recorded turns from a cassette (tests, demos, the bundled evaluations)."""

from __future__ import annotations

from types import MappingProxyType

from strands.models import Model

from haytham.errors import ConfigError
from haytham.models.providers.spec import (
    TIERS,
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
)
from haytham.models.replay import Cassette, ReplayModel


def build(request: ModelRequest) -> Model:
    """A :class:`~haytham.models.replay.ReplayModel` on the runtime's loaded cassette."""
    cassette = request.settings.cassette
    if cassette is None:
        raise ConfigError("The replay provider needs a cassette: set HAYTHAM_CASSETTE.")
    replay = ReplayModel(
        request.runtime.cassette(cassette),
        request.agent,
        model_id=request.model_id,
        latency=request.settings.replay_latency,
    )
    replay.update_config(context_window_limit=request.window)
    return replay


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when the cassette exists (and, thorough, loads)."""
    cassette = settings.cassette
    if cassette is None:
        return False, "HAYTHAM_CASSETTE is not set: point it at a cassette file or folder."
    if not (cassette.is_file() or (cassette.is_dir() and any(cassette.glob("*.jsonl")))):
        return False, f"the cassette {cassette} does not exist or holds no *.jsonl files."
    if check.thorough:  # before a session is created: a cassette that cannot load refuses now
        try:
            Cassette.load(cassette)
        except ConfigError as exc:
            return False, str(exc)
    return True, f"replaying recorded turns from {cassette}."


SPEC = ProviderSpec(
    name="replay",
    label="replay: the server's recorded cassette (offline)",
    default_models=MappingProxyType(dict.fromkeys(TIERS, "replay")),
    context_window=128_000,
    build=build,
    status=status,
    variables=("HAYTHAM_CASSETTE",),
    deterministic=True,
    free=True,
    records=False,
)
"""Recorded turns."""
