"""The reviewer's commands at a gate, as one typed union parsed once where the service gets them.

The CLI and the pages may send a plain mapping (``{"kind": "override", "reason": "…"}``);
:func:`parse_command` turns it into one of the command models below or refuses it with one
sentence (:class:`~haytham.errors.InputError`). Below the service boundary (the gate action,
:func:`haytham.pipeline.gates.apply_command` and its handlers) only the typed command travels.

The shape is checked here (which command, which fields, their types); what depends on the
session (is the gate open, is a reason given, does the stage belong to this gate) is checked by
the gate's handlers, with the same sentences as before the commands were typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from haytham.errors import InputError


class _Command(BaseModel):
    """What every gate command may carry: who gave it and whether it was automatic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by: str | None = None  # who; the service fills in its caller when the command does not say
    auto: bool = False  # given by --auto-approve, not by the reviewer (logged as automatic)

    def given(self) -> dict[str, Any]:
        """The fields the caller set (``kind`` left out): what the event log and the decision
        record keep, exactly as given."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"kind"})


class Approve(_Command):
    """Approve the gate; ``override_stale`` is the reason to approve while its checks are stale."""

    kind: Literal["approve"] = "approve"
    note: str = ""
    override_stale: str = ""


class Reject(_Command):
    """Reject the idea at this gate: the session ends."""

    kind: Literal["reject"] = "reject"
    note: str = ""


class Rework(_Command):
    """Send one of this gate's stages back with the reviewer's feedback."""

    kind: Literal["rework"] = "rework"
    stage: str = ""
    feedback: str = ""


class Override(_Command):
    """Override one open blocking item (``target``: its id) or, without a target, all of them."""

    kind: Literal["override"] = "override"
    reason: str = ""
    target: str | None = None


class Clarify(_Command):
    """Resolve one ambiguous invariant of the concept anchor (Gate 1)."""

    kind: Literal["clarify"] = "clarify"
    invariant: str = ""
    choice: str = ""


class ClarifyAll(_Command):
    """Resolve several ambiguous invariants at once (``choices``: property -> choice)."""

    kind: Literal["clarify_all"] = "clarify_all"
    choices: dict[str, str] = Field(default_factory=dict)


class Edit(_Command):
    """Give an invariant of the concept anchor a new value (Gate 1)."""

    kind: Literal["edit"] = "edit"
    invariant: str = ""
    value: str = ""


class RemoveNonGoal(_Command):
    """Remove one non-goal from the concept anchor (Gate 1)."""

    kind: Literal["remove_non_goal"] = "remove_non_goal"
    text: str = ""


GateCommand = Annotated[
    Approve | Reject | Rework | Override | Clarify | ClarifyAll | Edit | RemoveNonGoal,
    Field(discriminator="kind"),
]
"""A reviewer's command at a gate (or --auto-approve's)."""

COMMANDS: tuple[str, ...] = tuple(
    member.model_fields["kind"].default for member in get_args(get_args(GateCommand)[0])
)
"""The command names, in the order the refusal of an unknown one lists them."""

_ADAPTER: TypeAdapter[GateCommand] = TypeAdapter(GateCommand)


def parse_command(raw: GateCommand | Mapping[str, Any]) -> GateCommand:
    """``raw`` as a typed command (a typed one passes through), or one sentence saying what is
    wrong with it."""
    if isinstance(raw, _Command):
        return raw
    if not isinstance(raw, Mapping):
        raise InputError(
            f"A gate command is a mapping with a kind, not {type(raw).__name__}; "
            f"use one of {', '.join(COMMANDS)}."
        )
    kind = raw.get("kind")
    if kind not in COMMANDS:
        raise InputError(f"Unknown gate command {kind!r}; use one of {', '.join(COMMANDS)}.")
    try:
        return _ADAPTER.validate_python(dict(raw))
    except ValidationError as exc:
        problem = exc.errors()[0]
        field = ".".join(str(p) for p in problem["loc"][1:]) or "the command"
        if problem["type"] == "extra_forbidden":
            raise InputError(f"The {kind} command has no field {field!r}.") from None
        raise InputError(
            f"The {kind} command's {field} is not valid: {problem['msg'][:1].lower()}"
            f"{problem['msg'][1:]}."
        ) from None
