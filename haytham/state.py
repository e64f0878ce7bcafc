"""The shape of a session's pipeline state: one pydantic model, used by Burr's pydantic typing.

Every action declares the fields it reads and writes (``@action.pydantic``); Burr hands it a
model holding only those fields, so an undeclared read fails instead of passing unnoticed, and
merges back only the declared writes. Everything else (gates, status, projection, validators,
the UI) reads the same typed fields through :meth:`SessionState.of`.

Persistence stays plain JSON: each field has a Burr field serde that dumps it in JSON mode and
validates it back, so ``state.db`` rows hold no class paths, and rows written before the typed
state (raw values, no wrapper) load unchanged. Rows are read back by :func:`state_from_row`,
never by Burr's serde: data names no code to load (a field outside :class:`SessionState` or a
type tag is refused).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Literal

from burr.core import State, serde
from burr.core.application import PRIOR_STEP, SEQUENCE_ID
from burr.core.state import register_field_serde
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SerializeAsAny, TypeAdapter

from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput
from haytham.schemas.gate import GateRecord
from haytham.schemas.intake import IntakeRecord
from haytham.schemas.revision import Revision
from haytham.schemas.verification import Fingerprint, PhaseVerification, ReviewArtifact
from haytham.stages import BY_SLUG, Phase
from haytham.validate.model import Finding

GATE_PREFIX = "gate_"
"""Every gate's action name starts with it: ``gate_1`` … ``gate_4``."""


def gate_action(gate: int) -> str:
    """The graph action that waits for the reviewer at ``gate`` (``gate_2`` for 2)."""
    return f"{GATE_PREFIX}{gate}"


def gate_number(action: str | None) -> int | None:
    """The gate a graph action waits at (2 for ``gate_2``), ``None`` for any other action."""
    if action is None or not action.startswith(GATE_PREFIX):
        return None
    number = action.removeprefix(GATE_PREFIX)
    return int(number) if number.isdigit() else None


def is_gate(action: str | None) -> bool:
    """Whether ``action`` is a gate: a decision made there leaves the session at its gate
    while the next action still is one, and sends it on once it is not."""
    return gate_number(action) is not None


class RunStatus(StrEnum):
    """Where the run stands. Stored as its value, the strings sessions have always held."""

    RUNNING = "running"
    GATE_1 = "waiting_gate_1"
    GATE_2 = "waiting_gate_2"
    GATE_3 = "waiting_gate_3"
    GATE_4 = "waiting_gate_4"
    DONE = "done"
    REJECTED = "rejected"
    INTAKE = "waiting_intake"  # the founder's answers to the intake questions
    UNRELATED = "unrelated"  # intake found no startup idea in the text: the session ends

    @classmethod
    def waiting(cls, gate: int) -> RunStatus:
        """The status of a run that waits at ``gate``."""
        return cls(f"waiting_gate_{gate}")

    @property
    def gate(self) -> int | None:
        """The gate the run waits at, if it waits at one."""
        return list(RunStatus).index(self) if self.value.startswith("waiting_gate_") else None

    @property
    def finished(self) -> bool:
        """Whether the run is over (done, rejected, or not an idea)."""
        return self in (RunStatus.DONE, RunStatus.REJECTED, RunStatus.UNRELATED)


class StageMeta(BaseModel):
    """How a stage's last run went: what the mechanical checks left open, which anchor it ran
    against (its digest) and the earlier outputs it read (``inputs``: slug -> digest), and what
    its validators last checked (``checked``: set when it ran, renewed by a re-check). A check
    whose anchor or outputs have changed since is stale."""

    model_config = ConfigDict(extra="ignore")

    status: Literal["completed", "needs_attention"] = "completed"
    attempts: int = 1
    problems: list[str] = Field(default_factory=list)
    at: str | None = None
    quality_flags: dict[str, int] | None = None
    anchor: str | None = None
    inputs: dict[str, str] = Field(default_factory=dict)
    checked: Fingerprint | None = None


class LoggedReview(ReviewArtifact):
    """A review a stage consumed on its re-run, kept for the record (``reviews/NN-stage.json``)."""

    stage: str


class ReworkTracker(BaseModel):
    """The automatic rework of one phase: rounds used, the violations sent back last time (a
    repeat stops the loop) and the stage that was reworked last."""

    round: int = 0
    keys: list[str] = Field(default_factory=list)
    last_stage: str | None = None


def _stage_models(outputs: dict[str, StageOutput]) -> dict[str, StageOutput]:
    """Each output as its own stage's model (a typed payload)."""
    typed: dict[str, StageOutput] = {}
    for slug, out in outputs.items():
        if slug not in BY_SLUG:
            raise ValueError(f"no stage is called {slug!r}")
        model = BY_SLUG[slug].output_model
        typed[slug] = out if isinstance(out, model) else model.model_validate(out.model_dump())
    return typed


Outputs = Annotated[dict[str, SerializeAsAny[StageOutput]], AfterValidator(_stage_models)]
"""Stage outputs by slug. Part of the type, so Burr's per-action subset models keep it."""


class SessionState(BaseModel):
    """A session's whole pipeline state (what Burr persists after every step)."""

    model_config = ConfigDict(extra="ignore", validate_default=False)

    session_id: str | None = None
    idea: str = ""
    appetite: str | None = None
    status: RunStatus = RunStatus.RUNNING
    route: str | None = Field(default=None, description="The action a decision routes to.")
    anchor: ConceptAnchor | None = None
    anchor_text: str = ""
    outputs: Outputs = Field(default_factory=dict)
    stage_meta: dict[str, StageMeta] = Field(default_factory=dict)
    validations: dict[str, list[Finding]] = Field(default_factory=dict)
    divergence: dict[str, dict[str, float]] = Field(default_factory=dict)
    gates: dict[int, GateRecord] = Field(default_factory=dict)
    verifications: dict[str, PhaseVerification] = Field(default_factory=dict)
    reviews: dict[str, ReviewArtifact] = Field(default_factory=dict)
    review_log: list[LoggedReview] = Field(default_factory=list)
    rework: dict[str, ReworkTracker] = Field(default_factory=dict)
    revisions: list[Revision] = Field(default_factory=list)  # applied change requests
    intake: IntakeRecord | None = None  # the intake's classification, questions and answers

    @classmethod
    def of(cls, data: SessionState | State | Mapping[str, Any]) -> SessionState:
        """The typed state from Burr's state, a persisted row or a snapshot's ``state``."""
        if isinstance(data, SessionState):
            return data
        items = data.get_all() if isinstance(data, State) else data
        return cls.model_validate({k: v for k, v in items.items() if not k.startswith("__")})

    def fields(self) -> dict[str, Any]:
        """The field values as Burr's state holds them (typed, not dumped)."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def dump(self) -> dict[str, Any]:
        """Plain JSON (``state.json``, exports)."""
        return self.model_dump(mode="json")


def gate_of(gates: Mapping[int, GateRecord], phase: Phase) -> GateRecord:
    """The gate record of ``phase`` (a pending one before the gate first opens)."""
    return gates.get(phase.gate) or GateRecord(gate=phase.gate, phase=phase.value)


def payload_of(outputs: Mapping[str, StageOutput], slug: str) -> Any:
    """The payload of stage ``slug``'s output, ``None`` before it has run."""
    out = outputs.get(slug)
    return None if out is None else out.payload


BURR_FIELDS = (PRIOR_STEP, SEQUENCE_ID)
"""Burr's own bookkeeping in a saved state: the step it stands at and its sequence number."""
RETIRED_FIELDS = frozenset({"constraints"})
"""Fields rows of earlier versions hold and nothing reads any more: dropped, never loaded."""


class UnknownStateData(ValueError):
    """A saved state holds something outside the product's own types (a field it does not know,
    or a type tag naming code to load); it is refused, never loaded. The message is the reason,
    ending as a sentence ends."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}, so nothing in it was loaded.")
        self.reason = reason


def _shown(key: object) -> str:
    text = str(key)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _field_loader(name: str) -> tuple[Any, Any]:
    """The dump and load of one field: plain JSON under a ``{"json": ...}`` wrapper, validated
    against the field's own type (a row from before the typed state holds the raw value)."""
    adapter: TypeAdapter[Any] = TypeAdapter(SessionState.model_fields[name].annotation or Any)

    def dump(value: Any, **_: Any) -> dict[str, Any]:
        return {"json": adapter.dump_python(value, mode="json")}

    def load(value: Any, **_: Any) -> Any:
        return adapter.validate_python(_unwrapped(name, value))

    return dump, load


def _unwrapped(name: str, value: Any) -> Any:
    """A field's value without its ``{"json": ...}`` wrapper; refused if it is a type tag."""
    inner = value["json"] if isinstance(value, dict) and value.keys() == {"json"} else value
    if isinstance(inner, dict) and (serde.KEY in inner or "__pydantic_class" in inner):
        raise UnknownStateData(
            f"its field {name!r} names a type to load ({_shown(inner.get(serde.KEY))})"
        )
    return inner


_SERDES = MappingProxyType({name: _field_loader(name) for name in SessionState.model_fields})


def check_row(data: Mapping[str, Any]) -> None:
    """Refuse a persisted row holding anything but :class:`SessionState`'s fields (each as
    plain data, no type tag) and Burr's bookkeeping as plain values, without validating the
    fields themselves (:func:`state_from_row` does both).

    Raises:
        UnknownStateData: with the reason, in words.
    """
    if not isinstance(data, Mapping):
        raise UnknownStateData("the saved state is not a JSON object")
    for key, raw in data.items():
        if key in BURR_FIELDS:
            if raw is not None and (isinstance(raw, bool) or not isinstance(raw, str | int)):
                raise UnknownStateData(f"Burr's field {key!r} holds something other than a value")
        elif key in _SERDES:
            _unwrapped(key, raw)
        elif key not in RETIRED_FIELDS:
            raise UnknownStateData(f"it holds a field Haytham does not know ({_shown(key)})")


def state_from_row(data: Mapping[str, Any]) -> State:
    """Burr's state from a persisted row (a folder's ``state.db``, the shared database, an
    imported bundle), read by the product's own types and nothing else.

    Burr's generic serde resolves a class path found in the data (it would import any module
    a row names); here every field is validated against :class:`SessionState`'s type for it,
    Burr's bookkeeping must be plain numbers or strings, and anything else is refused
    (:func:`check_row`).

    Raises:
        UnknownStateData: a field outside :class:`SessionState`, or a type tag.
        ValueError: a known field does not validate (pydantic's ``ValidationError``).
    """
    check_row(data)
    return State(
        {
            k: v if k in BURR_FIELDS else _SERDES[k][1](v)
            for k, v in data.items()
            if k not in RETIRED_FIELDS
        }
    )


def _register_serdes() -> None:
    """JSON in ``state.db`` for every field (what Burr writes); loading never goes through
    Burr's serde: :func:`state_from_row` reads every row."""
    for name, (dump, load) in _SERDES.items():
        register_field_serde(name, dump, load)


_register_serdes()
