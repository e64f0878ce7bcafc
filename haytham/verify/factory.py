"""``make_verifier``: the phase verifier one session uses, built from the environment.

The service calls ``make_verifier(settings, models, files)`` once per session per process
(:func:`haytham.app.make_service` wires it); the graph's ``verify_<phase>`` actions
call the result right before each gate. Contracts compose cheapest first (seed 004): if a
phase's mechanical checks failed (a stage check after its re-ask, a blocking validator finding),
the verifier is not run and the verdict is ``inconclusive`` with that reason; otherwise the
phase's strategy runs — one agent (``single``), the swarm (``swarm``) or nothing (``off``).

Each run is accounted under the row ``verify-<phase>`` in ``events.jsonl`` (``stage_started``,
every ``model_call`` with its agent, ``stage_completed`` with the verdict's status), and the
rework decisions the verify action takes are recorded there too (:meth:`record_rework`).
"""

from __future__ import annotations

import time

from haytham.agents.caller import ModelCaller
from haytham.config import Settings
from haytham.models.factory import ModelRuntime
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase
from haytham.state import SessionState
from haytham.storage.protocol import Session
from haytham.verify.config import VerifyConfig
from haytham.verify.rework import ReworkDecision
from haytham.verify.single import verify_single
from haytham.verify.swarm import verify_swarm
from haytham.verify.verdict import inconclusive, mechanical_failures, off


class PhaseVerifier:
    """Callable ``(phase, state) -> PhaseVerification`` for one session."""

    def __init__(
        self, settings: Settings, models: ModelRuntime, files: Session, config: VerifyConfig
    ) -> None:
        config.check_agents()
        self.settings = settings
        self.models = models
        self.files = files
        self.config = config
        self._caller = ModelCaller(settings, models, files)

    @property
    def max_rework_rounds(self) -> int:
        """How many automatic reworks a phase's verifier may ask for before the gate opens."""
        return self.config.max_rework_rounds

    def __call__(self, phase: Phase, state: SessionState) -> PhaseVerification:
        """Verify ``phase`` with its configured strategy (``off`` says so in the verification)."""
        strategy = self.config.strategy(phase)
        if strategy == "off":
            return off(
                phase, f"verification is off for {phase.value} (HAYTHAM_VERIFY_{phase.value}=off)"
            )
        row = self.config.row(phase)
        started = time.perf_counter()
        self.files.append_event("stage_started", row, rework=False, strategy=strategy)
        failures = mechanical_failures(phase, state)
        if failures:
            listed = "; ".join(f"{f['stage']}: {f['message']}" for f in failures[:5])
            verification = inconclusive(
                phase,
                strategy,
                f"not run: {len(failures)} check{'s' if len(failures) != 1 else ''} on this "
                f"phase's stages failed first, and the verifier reads only stages that pass "
                f"them: {listed}",
            )
        elif strategy == "single":
            verification = verify_single(
                self._caller.ask,
                phase,
                state,
                tier=self.config.tier,
                agent=self.config.single_agent(phase),
                row=row,
            )
        else:
            verification = verify_swarm(
                self.settings, self.models, self.files, phase, state, config=self.config
            )
        self.files.append_event(
            "stage_completed",
            row,
            status=verification.status,
            strategy=strategy,
            passed=verification.passed,
            blocking=len(verification.blocking()),
            reason=verification.reason,
            wall_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return verification

    def record_rework(self, phase: Phase, decision: ReworkDecision) -> None:
        """Append the verify action's rework decision to ``events.jsonl``."""
        if decision.outcome == "clear" and not decision.tracker.round:
            return  # nothing was reworked at this gate visit
        kind, data = decision.event()
        self.files.append_event(kind, self.config.row(phase), **data)


def make_verifier(
    settings: Settings,
    models: ModelRuntime,
    files: Session,
    config: VerifyConfig | None = None,
) -> PhaseVerifier:
    """The session's phase verifier; ``config`` defaults to the settings' ``verify`` section
    (:meth:`VerifyConfig.from_settings`).

    Raises:
        ConfigError: a strategy, tier or limit is invalid, or a verifier agent would reuse a
            producing agent's name.
    """
    return PhaseVerifier(settings, models, files, config or VerifyConfig.from_settings(settings))
