"""The pipeline graph in the words of the pages (issue 28): Burr draws it with action names and
transition conditions (``idea_analysis``, ``route=market_context``, ``anchor=None``); here each
step is named as the Run page names it ("Stage 1 · Idea analysis", "Verifier (WHY)",
"Gate 1 · your decision"), and conditional edges stay dashed without the code's condition."""

from __future__ import annotations

import re

from frontend_streamlit.components.progress import describe
from haytham.stages import BY_SLUG
from haytham.state import gate_number

_NODE_LABEL = re.compile(r"^(\t(\w+) \[label=)(\"[^\"]*\"|\w+)", re.M)
_EDGE_LABEL = re.compile(r'label="[^"]*" (?=style=dashed\])')
_FIXED = {
    "start": "start",
    "end": "end",
    "intake": "Intake: is it an idea?",
    "input__answers": "your answers",
    "input__command": "your decision",
}


def step_name(action: str) -> str:
    """A graph action's name on the pages (the action itself when it is none of them)."""
    if action in _FIXED:
        return _FIXED[action]
    gate = gate_number(action)
    if gate is not None:
        return f"Gate {gate} · your decision"
    slug = action.replace("_", "-")
    spec = BY_SLUG.get(slug)
    if spec is not None:
        return f"Stage {spec.number} · {spec.title}"
    where = describe(slug)
    return where[1] if where is not None else action.replace("_", " ")


def readable_dot(dot: str) -> str:
    """``dot`` (Burr's drawing) with each node labelled by :func:`step_name` and the
    conditions' code removed from the dashed edges."""
    dot = _NODE_LABEL.sub(lambda m: f'{m[1]}"{step_name(m[2])}"', dot)
    return _EDGE_LABEL.sub("", dot)
