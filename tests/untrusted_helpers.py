"""A session whose every string field carries an image, a link and HTML (issue 29).

:func:`poison_session` rewrites a session's latest state so that every string its types allow
(ids, enums and other constrained strings keep their value: the types refuse anything else)
ends with :data:`PAYLOAD`, saves it as the next step and re-projects the session's files, so the
UI, the exports and the PDFs all read the poisoned text.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from haytham.pipeline.projection import Projector
from haytham.runs.session_state import load_state_seq, save_state
from haytham.state import SessionState
from haytham.storage.protocol import Session

EVIL = "evil.example"
PAYLOAD = (
    f" ![i](http://{EVIL}/img.png) [link](http://{EVIL}/l) <img src='http://{EVIL}/h.png'>"
    f" <a href='http://{EVIL}/a'>a</a> <script>fetch('http://{EVIL}/s')</script>"
    f" http://{EVIL}/bare"
)


def _poison_strings(value: Any) -> Any:
    if isinstance(value, str):
        return value + PAYLOAD
    if isinstance(value, list):
        return [_poison_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: _poison_strings(v) for k, v in value.items()}
    return value


def _at(data: Any, loc: tuple[Any, ...]) -> tuple[Any, Any] | None:
    """The container holding ``loc``'s last step, and that step (``None`` if it is not there)."""
    for step in loc[:-1]:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return None
    return (data, loc[-1]) if loc else None


def poisoned(adapter: TypeAdapter, original: Any) -> Any:
    """``original`` (plain JSON) with every string the type accepts carrying the payload."""
    data = _poison_strings(original)
    for _ in range(200):
        try:
            return adapter.validate_python(data)
        except ValidationError as exc:
            reverted = False
            for error in exc.errors():
                loc = tuple(error["loc"])
                while loc:
                    here, there = _at(data, loc), _at(original, loc)
                    if here is not None and there is not None:
                        try:
                            here[0][here[1]] = there[0][there[1]]
                            reverted = True
                            break
                        except (KeyError, IndexError, TypeError):
                            pass
                    loc = loc[:-1]  # a union's branch name, or a step that is not data
            if not reverted:
                return adapter.validate_python(original)
    return adapter.validate_python(original)


def poison_state(state: SessionState) -> SessionState:
    """``state`` with the payload in every string field its types allow."""
    dumped = state.dump()
    update: dict[str, Any] = {}
    for name, info in SessionState.model_fields.items():
        if name in ("session_id", "status", "route"):
            continue
        if name == "outputs":
            update[name] = {
                slug: poisoned(TypeAdapter(type(out)), dumped["outputs"][slug])
                for slug, out in state.outputs.items()
            }
        else:
            update[name] = poisoned(TypeAdapter(info.annotation), dumped[name])
    return SessionState.model_validate({**state.fields(), **update})


def poison_session(files: Session) -> SessionState:
    """Save the poisoned state as the session's next step and re-project its files."""
    state, seq = load_state_seq(files)
    row = files.state_rows(latest=True)[0]
    bad = poison_state(state)
    save_state(files, seq + 1, row.position, bad, row.status)
    Projector(files).project(bad, position=row.position, sequence_id=seq + 1)
    files.append_event("note", None, message=f"imported text{PAYLOAD}")
    return bad
