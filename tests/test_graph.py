"""The pipeline graph is built from the stage specs, drawn by Burr, and the docs show it."""

from __future__ import annotations

from pathlib import Path

from haytham.pipeline.graph import edges, gate_name, graph_dot, pipeline_graph, verify_name
from haytham.schemas.intake import AGENT as INTAKE
from haytham.stages import ANCHOR_ACTION, ANCHOR_SOURCE, STAGES, Phase, next_action, phase_stages

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_stage_and_step_is_in_the_graph_once() -> None:
    names = {a.name for a in pipeline_graph().actions}
    steps = {"start", INTAKE, "end", ANCHOR_ACTION, *(s.action for s in STAGES)}
    steps |= {verify_name(p) for p in Phase} | {gate_name(p) for p in Phase}
    assert names == steps


def test_the_forward_path_follows_the_spec_order_through_verifiers_and_gates() -> None:
    plain = {e[0]: e[1] for e in edges() if len(e) == 2 or e[2].name == "default"}
    path, here = ["start"], "start"
    while here != "end":
        gate = next((p for p in Phase if gate_name(p) == here), None)
        here = next_action(gate) if gate is not None else plain.get(here)  # a gate: approved
        if here is None:  # intake: an idea goes on to stage 1
            here = next(e[1] for e in edges() if e[0] == INTAKE and e[1] == STAGES[0].action)
        path.append(here)
    expected = ["start", INTAKE]
    for phase in Phase:
        expected += [s.action for s in phase_stages(phase)]
        expected += [verify_name(phase), gate_name(phase)]
    assert path == [*expected, "end"]
    # the anchor is extracted once, after its source stage, while there is none yet
    (extract,) = [e for e in edges() if e[1] == ANCHOR_ACTION]
    assert extract[0] == ANCHOR_SOURCE.action and extract[2].name == "anchor=None"
    assert (ANCHOR_ACTION, plain[ANCHOR_SOURCE.action]) in {(e[0], e[1]) for e in edges()}


def test_a_gate_sends_back_only_to_its_own_phase() -> None:
    for phase in Phase:
        targets = {e[1] for e in edges() if e[0] == gate_name(phase)}
        own = {s.action for s in phase_stages(phase)}
        assert targets == own | {next_action(phase), "end", gate_name(phase)}


def test_the_docs_show_the_current_graph() -> None:
    """`make graph` redraws docs/pipeline-graph.{dot,svg} from the code."""
    assert (DOCS / "pipeline-graph.dot").read_text(encoding="utf-8") == graph_dot()
    assert (DOCS / "pipeline-graph.svg").is_file()


def test_intake_waits_on_itself_ends_an_unrelated_text_or_goes_to_stage_1() -> None:
    assert ("start", INTAKE) in edges()
    routes = {e[1]: e[2].name for e in edges() if e[0] == INTAKE}
    assert routes == {
        STAGES[0].action: f"route={STAGES[0].action}",
        INTAKE: f"route={INTAKE}",
        "end": "route=end",
    }
