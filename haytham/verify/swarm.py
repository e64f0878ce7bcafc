"""The swarm phase verifier (WHAT and STORIES by default, ADR-022 1e and A8).

Three specialists and a coordinator run as a Strands ``Swarm``: the InvariantChecker starts,
each specialist records its findings in the handoff ``context`` and hands on (normally
invariant_checker → genericization_detector → consistency_validator → coordinator), and the
Coordinator adjudicates every finding against the anchor into the final ``PhaseVerification``
through ``structured_output_model`` — a central adjudicator, not a vote merge.

Bounds: the swarm's ``max_handoffs`` / ``max_iterations`` / ``execution_timeout`` /
``node_timeout`` (:class:`~haytham.verify.config.SwarmLimits`), one model call per specialist
(its turn ends as soon as its handoff succeeds) and at most ``turns_per_node`` calls per node run.
The InvariantChecker also answers the carrier audit (:mod:`haytham.verify.audit`) in its handoff
``context`` (``carrier_audit``); code counts those rows (the coordinator's own rows fill only
pairs the checker left out). A swarm that ends FAILED, times out, or ends without the coordinator's verdict yields an
``inconclusive`` verification carrying the reason — never a silent pass.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from strands import Agent
from strands.hooks import (
    AfterModelCallEvent,
    AfterToolCallEvent,
    BeforeInvocationEvent,
    HookCallback,
    HookProvider,
    HookRegistry,
)
from strands.multiagent import Status, Swarm

from haytham.config import Settings
from haytham.errors import HaythamError
from haytham.models.accounting import ModelCall
from haytham.models.factory import ModelRuntime, build_model, context_window
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase
from haytham.state import SessionState
from haytham.storage.protocol import Session
from haytham.verify.audit import apply_audit, carrier_table, rows_from_handoff
from haytham.verify.config import COORDINATOR, ROLES, SPECIALISTS, SwarmLimits, VerifyConfig
from haytham.verify.verdict import finalize, inconclusive, system_prompt, verification_context

HANDOFF_TOOL = "handoff_to_agent"
DESCRIPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "invariant_checker": "Checks that every anchor invariant is honoured by the phase's stages.",
        "genericization_detector": "Finds distinctive identity features replaced by generic "
        "startup patterns.",
        "consistency_validator": "Finds contradictions between the phase's stages and with earlier "
        "approved stages.",
        COORDINATOR: "Adjudicates all findings against the anchor into the final PhaseVerification.",
    }
)


class _StopAfterHandoff(HookProvider):
    """End a node's turn once its handoff succeeded: one model call per specialist."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self._after_tool)

    @staticmethod
    def _after_tool(event: AfterToolCallEvent) -> None:
        result = event.result
        if (
            event.tool_use.get("name") == HANDOFF_TOOL
            and isinstance(result, dict)
            and result.get("status") == "success"
        ):
            event.agent.cancel(message="Handed off.", after_current_tools=True)


class _TurnBudget(HookProvider):
    """At most ``turns`` model calls per node run (the answer plus repairs)."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.used = 0

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self._reset)
        registry.add_callback(AfterModelCallEvent, self._count)

    def _reset(self, event: BeforeInvocationEvent) -> None:
        self.used = 0

    def _count(self, event: AfterModelCallEvent) -> None:
        self.used += 1
        if self.used >= self.turns:
            event.agent.cancel(after_current_tools=True)


@dataclass
class _Calls:
    """Accounting sink for one swarm run: events plus the failures, for the reason."""

    files: Session
    row: str
    count: int = 0
    errors: list[str] = field(default_factory=list)

    def __call__(self, call: ModelCall) -> None:
        self.count += 1
        self.files.append_event("model_call", self.row, **call.model_dump(mode="json"))
        if not call.ok:
            self.errors.append(f"{call.agent}: {call.error}")


def build_swarm(
    settings: Settings, models: ModelRuntime, phase: Phase, config: VerifyConfig, sink: _Calls
) -> Swarm:
    """The phase's verifier swarm: its specialists and the coordinator whose structured
    answer is the verification, each with the turn budget of ``config.limits``."""
    limits = config.limits
    agents: dict[str, Agent] = {}
    for role in ROLES:
        model = build_model(
            settings, config.tier, config.swarm_agent(phase, role), on_call=sink, runtime=models
        )
        hooks: list[HookProvider | HookCallback[Any]] = [_TurnBudget(limits.turns_per_node)]
        if role in SPECIALISTS:
            hooks.append(_StopAfterHandoff())
        agents[role] = Agent(
            model=model,
            name=role,
            description=DESCRIPTIONS[role],
            system_prompt=system_prompt(f"{role}.md", phase),
            callback_handler=None,
            retry_strategy=None,
            hooks=hooks,
            structured_output_model=PhaseVerification if role == COORDINATOR else None,
        )
    return Swarm(
        nodes=list(agents.values()),
        entry_point=agents[SPECIALISTS[0]],
        max_handoffs=limits.max_handoffs,
        max_iterations=limits.max_iterations,
        execution_timeout=limits.execution_timeout,
        node_timeout=limits.node_timeout,
        id=f"verify-{phase.value.lower()}",
    )


def verify_swarm(
    settings: Settings,
    models: ModelRuntime,
    files: Session,
    phase: Phase,
    state: SessionState,
    *,
    config: VerifyConfig,
) -> PhaseVerification:
    """Run the phase's verification swarm; its coordinator's verdict, or ``inconclusive``."""
    row = config.row(phase)
    ctx = verification_context(phase, state)
    try:
        ctx.check_fits(row, system_prompt(f"{COORDINATOR}.md", phase), context_window(settings))
        sink = _Calls(files, row)
        swarm = build_swarm(settings, models, phase, config, sink)
    except HaythamError as exc:
        return inconclusive(phase, "swarm", f"the swarm could not start: {exc}")
    started = time.perf_counter()
    try:
        result = swarm(ctx.text())
    except Exception as exc:  # noqa: BLE001 - any failure must become a visible verdict
        return inconclusive(phase, "swarm", f"the swarm raised {type(exc).__name__}: {exc}")
    elapsed = time.perf_counter() - started
    history = [n.node_id for n in result.node_history]
    current = swarm.state.current_node.node_id if swarm.state.current_node else None
    files.append_event(
        "swarm_run",
        row,
        status=result.status.value,
        history=history,
        model_calls=sink.count,
        wall_ms=round(elapsed * 1000, 1),
        errors=sink.errors,
    )
    if result.status != Status.COMPLETED:
        reason = failure_reason(history, current, config.limits, elapsed, sink.errors)
        return inconclusive(phase, "swarm", reason)
    node = result.results.get(COORDINATOR)
    verdict = getattr(node.result, "structured_output", None) if node is not None else None
    if not history or history[-1] != COORDINATOR:
        last = history[-1] if history else "no agent"
        return inconclusive(
            phase,
            "swarm",
            f"the swarm ended at {last} without the coordinator's verdict ({' → '.join(history)})",
        )
    if not isinstance(verdict, PhaseVerification):
        return inconclusive(
            phase,
            "swarm",
            "the coordinator gave no valid PhaseVerification "
            f"within {config.limits.turns_per_node} model calls",
        )
    checker = rows_from_handoff(swarm.shared_context.context.get(SPECIALISTS[0]))
    audited = apply_audit(verdict, carrier_table(phase, state), state.anchor, extra=checker)
    final = finalize(audited, phase, "swarm")
    path = f"swarm path {' → '.join(history)}, {sink.count} model calls"
    return final.model_copy(update={"reason": "; ".join(filter(None, [final.reason, path]))})


def failure_reason(
    history: list[str], current: str | None, limits: SwarmLimits, elapsed: float, errors: list[str]
) -> str:
    """Why a swarm ended FAILED, reconstructed from its limits (Strands only logs it)."""
    path = " → ".join(history) or "no completed node"
    if len(history) >= limits.max_handoffs:
        return (
            f"the swarm exceeded its handoff limit (max_handoffs={limits.max_handoffs}) "
            f"without a verdict: {path}"
        )
    if len(history) >= limits.max_iterations:
        return (
            f"the swarm exceeded its iteration limit (max_iterations="
            f"{limits.max_iterations}) without a verdict: {path}"
        )
    if elapsed > limits.execution_timeout:
        return f"the swarm timed out (execution_timeout={limits.execution_timeout:g}s) after {path}"
    if errors:
        return f"a model call failed in the swarm ({errors[-1]}) after {path}"
    return (
        f"the swarm node {current or '?'} failed or timed out (node_timeout="
        f"{limits.node_timeout:g}s; no valid answer within {limits.turns_per_node} model "
        f"calls) after {path}"
    )
