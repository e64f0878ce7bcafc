"""How verification is configured: strategy per phase, swarm limits, tiers and agent names.

Built from the settings' ``verify`` section (:class:`haytham.config.VerifySettings`:
``HAYTHAM_VERIFY_WHY`` … ``HAYTHAM_VERIFY_STORIES`` = ``single`` | ``swarm`` | ``off``; defaults
single / swarm / single / swarm as in ADR-022 1e) by :meth:`VerifyConfig.from_settings`. The agent names
a configuration would use are checked when it is built: a verifier never shares a name (and so a
model conversation, a cassette line or an accounting row) with a producing agent (seed 004).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from haytham.config import STRATEGIES, TIERS, Settings, Strategy, VerifySettings
from haytham.errors import ConfigError
from haytham.stages import ANCHOR_AGENT, STAGES, Phase

_DEFAULTS = VerifySettings()  # the defaults are written once, in haytham.config
DEFAULT_STRATEGIES: Mapping[Phase, Strategy] = MappingProxyType(
    {phase: getattr(_DEFAULTS, phase.value.lower()) for phase in Phase}
)
DEFAULT_MAX_REWORK_ROUNDS = _DEFAULTS.max_rework_rounds

# Swarm roles: (node name used by handoff_to_agent, agent-name suffix, prompt file).
SPECIALISTS: tuple[str, ...] = (
    "invariant_checker",
    "genericization_detector",
    "consistency_validator",
)
COORDINATOR = "coordinator"
ROLES: tuple[str, ...] = (*SPECIALISTS, COORDINATOR)


def input_validator_agent(consumer: str) -> str:
    """The consuming stage's ``validate_input`` agent at a receiving-stage boundary."""
    return f"{consumer}-input-validator"


def reviser_agent(producer: str) -> str:
    """The producing stage's ``revise_rejected`` agent at a receiving-stage boundary."""
    return f"{producer}-reviser"


def producing_agents() -> frozenset[str]:
    """Agents a verifier may not be: the ten stages, the anchor extractor, the revisers, and
    the input validators (reviewers of another kind)."""
    slugs = {s.slug for s in STAGES}
    return frozenset(
        slugs
        | {ANCHOR_AGENT}
        | {reviser_agent(s) for s in slugs}
        | {input_validator_agent(s) for s in slugs}
    )


def verifier_row(phase: Phase) -> str:
    """The progress row (``stage`` of its events) of ``phase``'s verifier: ``verify-what``."""
    return f"verify-{phase.value.lower()}"


@dataclass(frozen=True)
class SwarmLimits:
    """Bounds of one verification swarm (Strands ``Swarm`` arguments).

    Strands compares both ``max_handoffs`` and ``max_iterations`` with the number of node runs;
    the normal chain is four runs, so six leaves room for one re-check and stops a ping-pong.
    Hitting a limit ends the swarm FAILED, which becomes an ``inconclusive`` verification.
    """

    max_handoffs: int = _DEFAULTS.swarm_max_handoffs
    max_iterations: int = _DEFAULTS.swarm_max_handoffs
    execution_timeout: float = _DEFAULTS.swarm_timeout
    node_timeout: float = _DEFAULTS.swarm_node_timeout
    turns_per_node: int = 2  # model calls per node run: the answer plus one repair

    def __post_init__(self) -> None:
        if self.max_handoffs < 1 or self.max_iterations < 1 or self.turns_per_node < 1:
            raise ConfigError("Swarm limits must be at least 1.")
        if self.execution_timeout <= 0 or self.node_timeout <= 0:
            raise ConfigError("Swarm timeouts must be positive.")


@dataclass(frozen=True)
class VerifyConfig:
    """Everything :func:`~haytham.verify.factory.make_verifier` needs besides the session."""

    strategies: Mapping[Phase, Strategy] = field(default_factory=lambda: dict(DEFAULT_STRATEGIES))
    tier: str = "heavy"
    limits: SwarmLimits = field(default_factory=SwarmLimits)
    max_rework_rounds: int = DEFAULT_MAX_REWORK_ROUNDS
    prefix: str = "verifier"
    rename: Mapping[str, str] = field(default_factory=dict)  # default agent name -> name used

    def __post_init__(self) -> None:
        for phase in Phase:
            if self.strategy(phase) not in STRATEGIES:
                raise ConfigError(
                    f"Verifier strategy for {phase} must be one of "
                    f"{', '.join(STRATEGIES)}, not {self.strategy(phase)!r}."
                )
        if self.tier not in TIERS:
            raise ConfigError(f"HAYTHAM_VERIFY_TIER must be one of {', '.join(TIERS)}.")
        if self.max_rework_rounds < 0:
            raise ConfigError("HAYTHAM_MAX_REWORK_ROUNDS must be 0 or more.")
        self.check_agents()

    def strategy(self, phase: Phase) -> Strategy:
        """How ``phase`` is verified: ``single``, ``swarm`` or ``off`` (ADR-022's default when unset)."""
        return self.strategies.get(phase, DEFAULT_STRATEGIES[phase])

    # -- agent names ------------------------------------------------------------------------
    def _name(self, default: str) -> str:
        return self.rename.get(default, default)

    def single_agent(self, phase: Phase) -> str:
        """The agent name of ``phase``'s single verifier."""
        return self._name(f"{self.prefix}-{phase.value.lower()}")

    def swarm_agent(self, phase: Phase, role: str) -> str:
        """The agent name of ``role`` in ``phase``'s swarm."""
        return self._name(f"{self.prefix}-{phase.value.lower()}-{role.replace('_', '-')}")

    def row(self, phase: Phase) -> str:
        """The accounting row (``stage`` of its events) every call of this phase's verifier uses."""
        return verifier_row(phase)

    def agents(self, phase: Phase) -> tuple[str, ...]:
        """The agent names this phase's verifier uses under the configured strategy."""
        strategy = self.strategy(phase)
        if strategy == "single":
            return (self.single_agent(phase),)
        if strategy == "swarm":
            return tuple(self.swarm_agent(phase, r) for r in ROLES)
        return ()

    def check_agents(self) -> None:
        """Raise :class:`ConfigError` if a verifier would reuse a producing agent or a sibling."""
        producers = producing_agents()
        seen: dict[str, Phase] = {}
        for phase in Phase:
            for name in self.agents(phase):
                if not name.strip():
                    raise ConfigError(f"The {phase} verifier has an empty agent name.")
                if name in producers:
                    raise ConfigError(
                        f"The {phase} verifier is configured as agent {name!r}, which produces "
                        "pipeline output; a verifier is never the producing agent. Rename it."
                    )
                if name in seen:
                    raise ConfigError(
                        f"Agent name {name!r} is used twice (by the {seen[name]} "
                        f"and {phase} verifiers); each verifier agent is distinct."
                    )
                seen[name] = phase

    # -- settings -------------------------------------------------------------------------
    @classmethod
    def from_settings(cls, settings: Settings | VerifySettings) -> VerifyConfig:
        """Build from the settings' ``verify`` section (``HAYTHAM_VERIFY_<PHASE>``,
        ``HAYTHAM_VERIFY_TIER``, ``HAYTHAM_MAX_REWORK_ROUNDS``, ``HAYTHAM_SWARM_MAX_HANDOFFS`` /
        ``_TIMEOUT`` / ``_NODE_TIMEOUT``), already parsed and checked by
        :func:`~haytham.config.load_settings`."""
        v = settings.verify if isinstance(settings, Settings) else settings
        return cls(
            strategies={phase: getattr(v, phase.value.lower()) for phase in Phase},
            tier=v.tier,
            limits=SwarmLimits(
                max_handoffs=v.swarm_max_handoffs,
                max_iterations=v.swarm_max_handoffs,
                execution_timeout=v.swarm_timeout,
                node_timeout=v.swarm_node_timeout,
            ),
            max_rework_rounds=v.max_rework_rounds,
        )
