"""The single-agent phase verifier (WHY and HOW by default): one structured call.

Its answer includes the carrier audit (:mod:`haytham.verify.audit`); code turns the audit rows
into findings before the verdict is finalized."""

from __future__ import annotations

from haytham.agents.caller import Asker
from haytham.errors import ContractViolation, HaythamError
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase
from haytham.state import SessionState
from haytham.verify.audit import apply_audit, carrier_table
from haytham.verify.verdict import finalize, inconclusive, system_prompt, verification_context


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
