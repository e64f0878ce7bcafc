"""The single-agent phase verifier (WHY and HOW by default): one structured call.

Its answer includes the carrier audit (:mod:`haytham.verify.audit`); code turns the audit rows
into findings before the verdict is finalized."""

from __future__ import annotations

from typing import Protocol, TypeVar

from pydantic import BaseModel

from haytham.agents.context import Context
from haytham.errors import ContractViolation, HaythamError
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase
from haytham.state import SessionState
from haytham.verify.audit import apply_audit, carrier_table
from haytham.verify.verdict import finalize, inconclusive, system_prompt, verification_context

T = TypeVar("T", bound=BaseModel)


class Asker(Protocol):
    """``StageRunner.ask``: one structured answer from a fresh agent, or a typed error."""

    def __call__(
        self,
        stage: str,
        tier: str,
        system: str,
        ctx: Context,
        model_cls: type[T],
        *,
        account_as: str | None = None,
    ) -> T:
        """Ask the agent ``stage`` for one answer of ``model_cls``."""
        ...


def verify_single(
    ask: Asker, phase: Phase, state: SessionState, *, agent: str, tier: str, row: str
) -> PhaseVerification:
    """Ask ``agent`` for the phase's verdict; any failure is an ``inconclusive`` verdict."""
    ctx = verification_context(phase, state)
    try:
        raw = ask(
            agent, tier, system_prompt("single.md", phase), ctx, PhaseVerification, account_as=row
        )
    except ContractViolation as exc:
        return inconclusive(
            phase,
            "single",
            f"the verifier's answer broke its contract after one repair ({exc.mismatch}): {exc}",
        )
    except HaythamError as exc:
        return inconclusive(phase, "single", f"the verifier could not run: {exc}")
    audited = apply_audit(raw, carrier_table(phase, state), state.anchor)
    return finalize(audited, phase, "single")
