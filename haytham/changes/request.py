"""Change requests after the fact: the founder says in words what should change in a stage's
output; an agent proposes the revised output (and, as a second opinion, the invariants it
touches and any it would break); code computes the diff and the impact on the invariants
(:mod:`haytham.changes.impact`). A change that breaks an invariant, by code's check or the agent's word,
is refused. On accept the output is replaced (a :class:`Revision` on the record, with the
request and the computed impact) and every later stage re-runs through the normal runner,
verifiers and gates, so the cascade is checked like any run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, create_model

from haytham.agents.context import Context, build_stage_context
from haytham.changes.impact import compute_impact
from haytham.errors import GateError, InputError
from haytham.schemas.envelope import StageOutput
from haytham.schemas.revision import Change, Impact, Revision
from haytham.stages import ANCHOR_SOURCE, BY_SLUG, VERDICT_STAGE, StageSpec, StageView
from haytham.state import RunStatus, SessionState, StageMeta
from haytham.storage.protocol import now
from haytham.validate.claims import downgrade_unsourced

AGENT = "change-request"
CHANGE_HEADING = "## The founder's change request"
CURRENT_HEADING = "## The stage's current output (JSON)"


class Proposal(BaseModel):
    """What the agent proposes and code derived from it; nothing is changed until applied.

    ``invariants_touched`` and ``breaks`` are the agent's answer; ``impact`` is code's (with
    the agent's lists kept inside it), and :attr:`refused_for` is what stops the change."""

    stage: str
    request: str
    why: str
    invariants_touched: list[str]
    breaks: list[str]
    revised: dict[str, Any]  # the stage's whole output, as JSON
    changes: list[Change]
    impact: Impact = Field(default_factory=Impact)

    @property
    def refused_for(self) -> list[str]:
        """The invariants the change would break (code's check, then the agent's word)."""
        return list(dict.fromkeys([*self.impact.refused_for, *self.breaks]))


class ProposalAnswer(BaseModel):
    """The agent's structured answer to a change request, whatever the stage; the model the
    agent fills is built per stage by :func:`proposal_model` (``revised`` typed as the stage's
    own output model). The tool schema it is given is that model's, so this docstring is not
    part of it."""

    revised: StageOutput = Field(description="The stage's whole output, revised.")
    why: str = Field(description="Why these changes answer the request, in 1-3 sentences.")
    invariants_touched: list[str] = Field(
        default_factory=list, description="Ids (INV-n) of invariants the change touches."
    )
    breaks: list[str] = Field(
        default_factory=list,
        description="Ids (INV-n) of invariants the change would break; empty if none.",
    )


def proposal_model(spec: StageSpec) -> type[ProposalAnswer]:
    """The structured answer for ``spec``: its own output model, revised, plus the why."""
    return create_model(
        f"{spec.output_model.__name__}Change",
        __base__=ProposalAnswer,
        __doc__=None,
        revised=(spec.output_model, Field(description="The stage's whole output, revised.")),
    )


def revisable(state: SessionState, slug: str) -> StageSpec:
    """The stage a change request may revise, or one sentence why not."""
    spec = BY_SLUG.get(slug.strip().lower())
    if spec is None:
        raise InputError(f"Unknown stage {slug!r}; stages are: {', '.join(BY_SLUG)}.")
    gate_1 = state.gates.get(VERDICT_STAGE.phase.gate)
    if gate_1 is None or gate_1.status != "approved":
        raise GateError(
            "Change requests start after Gate 1 is approved; until then, request rework at "
            "the gate."
        )
    if spec is ANCHOR_SOURCE:
        raise InputError(
            f"{spec.slug} is the concept anchor's source; change the anchor at Gate 1 instead."
        )
    if spec.slug not in state.outputs:
        raise InputError(f"Stage {spec.slug} has not run yet; there is nothing to revise.")
    if state.status.gate is None and state.status is RunStatus.RUNNING:
        raise GateError("The session is running; wait for it to reach a gate, then ask again.")
    return spec


def change_context(spec: StageSpec, state: SessionState, request: str) -> Context:
    """The stage's own context (idea, anchor, earlier stages) plus its output and the request."""
    ctx = build_stage_context(
        spec,
        idea=state.idea,
        anchor_text=state.anchor_text,
        outputs={k: v for k, v in state.outputs.items() if BY_SLUG[k].number < spec.number},
        appetite=state.appetite,
    )
    current = state.outputs[spec.slug].model_dump_json(indent=1)
    ctx.add("current", CURRENT_HEADING, f"```json\n{current}\n```")
    ctx.add("request", CHANGE_HEADING, request)
    return ctx


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items() if v not in ("", [], None))
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return "" if value is None else str(value)


def _key(item: Any, n: int) -> str:
    if isinstance(item, dict):
        for name in ("id", "name", "need", "title", "risk"):
            if item.get(name):
                return str(item[name])
    return str(n)


def diff(before: StageOutput, after: StageOutput) -> list[Change]:
    """The payload fields and items that differ (items matched by id, else name or title)."""
    old, new = before.model_dump(mode="json")["payload"], after.model_dump(mode="json")["payload"]
    changes: list[Change] = []
    for field in dict.fromkeys([*old, *new]):
        a, b = old.get(field), new.get(field)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            was = {_key(x, n): x for n, x in enumerate(a)}
            now_ = {_key(x, n): x for n, x in enumerate(b)}
            for key in dict.fromkeys([*was, *now_]):
                where = f"{field}[{key}]" if any(isinstance(x, dict) for x in a + b) else field
                if key not in now_:
                    changes.append(Change(kind="removed", where=where, before=_text(was[key])))
                elif key not in was:
                    changes.append(Change(kind="added", where=where, after=_text(now_[key])))
                elif was[key] != now_[key]:
                    changes.append(
                        Change(
                            kind="changed",
                            where=where,
                            before=_text(was[key]),
                            after=_text(now_[key]),
                        )
                    )
        else:
            changes.append(Change(kind="changed", where=field, before=_text(a), after=_text(b)))
    return changes


def propose(
    spec: StageSpec,
    state: SessionState,
    request: str,
    answer: ProposalAnswer,
    tool_calls: Sequence[Mapping[str, Any]] = (),
) -> Proposal:
    """The proposal from the agent's answer: the revised output completed by the stage's own
    code (ids, derived fields), invariant references mapped to the anchor's ids, ``web_search``
    labels no logged search (``tool_calls``) backs stored as unsourced, and code's impact."""
    view = StageView(
        idea=state.idea, outputs=state.outputs, anchor=state.anchor, appetite=state.appetite
    )
    revised, _ = spec.complete(answer.revised, view)
    revised, _ = downgrade_unsourced(revised, spec.slug, tool_calls)
    anchor = state.anchor

    def ids(refs: list[str]) -> list[str]:
        found = [anchor.resolve_ref(r) if anchor else None for r in refs]
        return list(dict.fromkeys(i.id for i in found if i is not None))

    touched = ids(answer.invariants_touched)
    breaks = ids(answer.breaks)
    before = state.outputs[spec.slug]
    return Proposal(
        stage=spec.slug,
        request=request,
        why=answer.why,
        invariants_touched=touched,
        breaks=breaks,
        revised=revised.model_dump(mode="json"),
        changes=diff(before, revised),
        impact=compute_impact(
            spec.slug, before, revised, anchor, agent_touched=touched, agent_breaks=breaks
        ),
    )


def recomputed(state: SessionState, proposal: Proposal) -> Proposal:
    """``proposal`` with its impact computed again against the session as it is now (a proposal
    comes back from a page or a terminal; what code found then is not taken on trust)."""
    spec = BY_SLUG[proposal.stage]
    revised = spec.output_model.model_validate(proposal.revised)
    impact = compute_impact(
        spec.slug,
        state.outputs.get(spec.slug),
        revised,
        state.anchor,
        agent_touched=proposal.invariants_touched,
        agent_breaks=proposal.breaks,
    )
    return proposal.model_copy(update={"impact": impact})


def refusal(proposal: Proposal) -> str | None:
    """One sentence why ``proposal`` cannot be applied (it breaks an invariant), or None."""
    broken = proposal.refused_for
    if not broken:
        return None
    by_code = [i for i in broken if i in proposal.impact.broken]
    why = (
        "found by code's check of the items that deliver it"
        if len(by_code) == len(broken)
        else "by the agent's answer"
        if not by_code
        else "found by code's check, and by the agent's answer"
    )
    return (
        f"This change would break {', '.join(broken)}; nothing was applied ({why}). "
        "Change the concept anchor first (clear-from the first stage after it and edit it at "
        "Gate 1), or ask for a change that keeps it."
    )


def revised_state(state: SessionState, proposal: Proposal, cleared: SessionState) -> SessionState:
    """``cleared`` (the session without the revised stage and everything after it) with the
    revised output in place and the revision on the record; the run goes on after it."""
    spec = BY_SLUG[proposal.stage]
    output = spec.output_model.model_validate(proposal.revised)
    revision = Revision(
        stage=spec.slug,
        request=proposal.request,
        why=proposal.why,
        invariants_touched=proposal.impact.touched,
        changes=proposal.changes,
        impact=proposal.impact,
        at=now(),
    )
    meta = StageMeta(
        status="completed", at=now(), anchor=state.anchor.digest() if state.anchor else None
    )
    return cleared.model_copy(
        update={
            "outputs": {**cleared.outputs, spec.slug: output},
            "stage_meta": {**cleared.stage_meta, spec.slug: meta},
            "revisions": [*state.revisions, revision],
            "route": None,
        }
    )
