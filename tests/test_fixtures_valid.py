"""The replay fixtures are honest test data: every cassette line is a valid, faithful answer.

Loads the Power of 8 cassettes, validates each tool input against its output class, runs the
stages' deterministic code (``finalize`` / ``check``) on a session built from the pipeline
cassette, and checks the properties the rest of the test suite relies on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from haytham.models.replay import Cassette
from haytham.schemas.anchor import REQUIRED_PROPERTIES, ConceptAnchor
from haytham.schemas.envelope import StageOutput
from haytham.stages import BY_SLUG, STAGES, StageView
from haytham.stages.story_generation import APPETITE_BOUNDS, dependency_order

FIXTURES = Path(__file__).parent / "fixtures"
IDEAS = FIXTURES / "ideas"
CASSETTES = FIXTURES / "cassettes" / "power_of_8"
PIPELINE = CASSETTES / "pipeline.jsonl"
OVER = CASSETTES / "stories_over_appetite.jsonl"
STILL_OVER = CASSETTES / "stories_still_over.jsonl"
REASK_HEADING = "## Problems with your previous answer"

PIPELINE_AGENTS = [
    "idea-analysis",
    "anchor-extraction",
    "market-context",
    "risk-assessment",
    "validation-summary",
    "mvp-scope",
    "capability-model",
    "system-traits",
    "build-buy-analysis",
    "architecture-decisions",
    "story-generation",
]
FRONTEND_FRAMEWORKS = ("react", "vue", "svelte", "angular", "next.js", "nuxt", "astro", "solid")

OUTPUT_CLASSES: dict[str, type[Any]] = {s.output_model.__name__: s.output_model for s in STAGES}
OUTPUT_CLASSES[ConceptAnchor.__name__] = ConceptAnchor


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def tool_item(line: dict[str, Any]) -> dict[str, Any]:
    tools = [item for item in line["response"] if "tool" in item]
    assert len(tools) == 1, f"{line['agent']}: expected exactly one tool item"
    return tools[0]


def parse(line: dict[str, Any]) -> Any:
    item = tool_item(line)
    model = OUTPUT_CLASSES.get(item["tool"])
    assert model is not None, f"unknown output class {item['tool']!r}"
    return model.model_validate(item["input"])


@pytest.fixture(scope="module")
def idea() -> str:
    return (IDEAS / "power_of_8.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def anchor() -> ConceptAnchor:
    (line,) = [x for x in read_lines(PIPELINE) if x["agent"] == "anchor-extraction"]
    return parse(line)


@pytest.fixture(scope="module")
def session(idea: str, anchor: ConceptAnchor) -> dict[str, StageOutput]:
    """Every stage's output, finalized in pipeline order as the runner would."""
    resolved = anchor.auto_resolve()  # as if the reviewer picked the first options
    outputs: dict[str, StageOutput] = {}
    for line in read_lines(PIPELINE):
        if line["agent"] == "anchor-extraction":
            continue
        spec = BY_SLUG[line["agent"]]
        view = StageView(idea=idea, outputs=dict(outputs), anchor=resolved)
        outputs[spec.slug] = spec.finalize(parse(line), view)
    return outputs


def view_of(idea: str, anchor: ConceptAnchor, outputs: dict[str, StageOutput]) -> StageView:
    return StageView(idea=idea, outputs=outputs, anchor=anchor.auto_resolve())


# -- shape -----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(CASSETTES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_line_loads_and_validates(path: Path) -> None:
    cassette = Cassette.load(path)  # the replay provider's own parser
    assert cassette.entries
    for line in read_lines(path):
        item = tool_item(line)
        expected = (
            "ConceptAnchor"
            if line["agent"] == "anchor-extraction"
            else (BY_SLUG[line["agent"]].output_model.__name__)
        )
        assert item["tool"] == expected
        parse(line)


def test_pipeline_has_one_line_per_agent_in_order() -> None:
    lines = read_lines(PIPELINE)
    assert [x["agent"] for x in lines] == PIPELINE_AGENTS
    assert all(x["turn"] == 1 and not x.get("when") for x in lines)


def test_pipeline_outputs_are_realistic(session: dict[str, StageOutput]) -> None:
    assert list(session) == [s.slug for s in STAGES]
    for slug, out in session.items():
        words = len(out.content.split())
        assert 150 <= words <= 400, f"{slug}: content has {words} words"


# -- anchor ----------------------------------------------------------------------------------
def test_anchor_is_small_and_flags_ambiguity(anchor: ConceptAnchor, idea: str) -> None:
    assert anchor.token_count() <= 500
    assert anchor.auto_resolve().token_count() <= 500
    ambiguous = anchor.open_ambiguities()
    assert ambiguous, "at least one invariant must be below 0.7"
    assert {i.property for i in ambiguous} == {"interaction_model", "session_medium"}
    assert {i.property for i in anchor.invariants} >= set(REQUIRED_PROPERTIES)
    for inv in anchor.invariants:
        assert inv.source in idea, f"{inv.property}: source is not an exact quote"
    assert anchor.invariant("access_model").confidence == 0.95
    assert anchor.invariant("group_structure").confidence == 0.95
    assert anchor.invariant("orchestrator_role").confidence == 0.9
    assert len(anchor.invariant("interaction_model").clarification_options) == 2
    assert len(anchor.invariant("session_medium").clarification_options) == 3
    assert len(anchor.identity) >= 2


def test_stages_report_only_real_invariants(
    session: dict[str, StageOutput], anchor: ConceptAnchor
) -> None:
    names = {i.property for i in anchor.invariants}
    for slug, out in session.items():
        report = out.anchor_compliance
        assert set(report.invariants_preserved) <= names, slug
        assert not report.invariants_overridden, slug
        assert not report.identity_features_genericized, slug
        if slug != "idea-analysis":  # the anchor is extracted after stage 1
            assert set(report.invariants_preserved) == names, slug


def test_no_claim_pretends_to_come_from_search(session: dict[str, StageOutput]) -> None:
    # The cassette run has no search backend, so no claim may cite web_search.
    assert all(c.source != "web_search" for out in session.values() for c in out.claims)


# -- deterministic stage code ----------------------------------------------------------------
def test_mechanical_checks_pass(
    session: dict[str, StageOutput], idea: str, anchor: ConceptAnchor
) -> None:
    view = view_of(idea, anchor, session)
    for spec in STAGES:
        assert spec.check(session[spec.slug], view) == [], spec.slug


def test_verdict_is_go(session: dict[str, StageOutput]) -> None:
    assert session["risk-assessment"].payload.risk_level != "high"
    summary = session["validation-summary"].payload
    assert summary.verdict == "GO", summary.verdict_reason
    assert summary.risk_level == session["risk-assessment"].payload.risk_level


def test_scope_and_traits_are_faithful(session: dict[str, StageOutput]) -> None:
    scope = session["mvp-scope"].payload
    assert scope.appetite == "small"
    traits = session["system-traits"].payload
    assert traits.realtime.value is True
    assert traits.auth.value == "invite_only"
    assert traits.communication.value == "video"
    in_scope = scope.scope_ids()
    for cap in session["capability-model"].payload.functional:
        assert set(cap.serves_scope) <= in_scope, cap.id


def test_references_resolve(session: dict[str, StageOutput]) -> None:
    caps = session["capability-model"].payload.ids()
    for item in session["build-buy-analysis"].payload.items:
        assert set(item.capabilities) <= caps, item.need
        assert "open_registration" not in item.requires
    decisions = session["architecture-decisions"].payload
    assert decisions.coverage is not None
    assert decisions.coverage.uncovered == []
    assert len(decisions.coverage.covered) == len(session["capability-model"].payload.functional)
    dec_ids = {d.id for d in decisions.decisions}
    for d in decisions.decisions:
        assert set(d.serves) <= caps, d.id
    for story in session["story-generation"].payload.stories:
        assert set(story.implements) <= caps | dec_ids, story.id


def test_stories_fit_the_appetite(session: dict[str, StageOutput]) -> None:
    stories = session["story-generation"].payload
    assert stories.appetite == "small"
    assert len(stories.stories) <= APPETITE_BOUNDS["small"] == 8
    assert stories.cycles == []
    ids = {s.id for s in stories.stories}
    assert all(set(s.depends_on) <= ids for s in stories.stories)
    assert sorted(stories.order) == sorted(ids)
    frameworks = {
        fw
        for s in stories.stories
        if s.layer == "frontend" or s.component == "web-app"
        for tech in s.technologies
        for fw in FRONTEND_FRAMEWORKS
        if fw in tech.lower()
    }
    assert frameworks == {"react"}


# -- over-appetite re-ask cassettes ----------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "first", "second", "second_ok"),
    [(OVER, 12, 8, True), (STILL_OVER, 12, 11, False)],
    ids=["over_appetite", "still_over"],
)
def test_reask_cassettes(
    path: Path,
    first: int,
    second: int,
    second_ok: bool,
    session: dict[str, StageOutput],
    idea: str,
    anchor: ConceptAnchor,
) -> None:
    lines = read_lines(path)
    assert [x["agent"] for x in lines] == ["story-generation", "story-generation"]
    assert [x.get("when", []) for x in lines] == [[], ["Problems with your previous answer"]]

    cassette = Cassette.load(path)
    plain = cassette.match("story-generation", 1, "Write the stories.", "")
    reask = cassette.match("story-generation", 1, f"{REASK_HEADING}\n- too many", "")
    assert plain is not None and reask is not None

    spec = BY_SLUG["story-generation"]
    view = view_of(idea, anchor, session)
    counts, problems = [], []
    for entry in (plain, reask):
        data = next(item["input"] for item in entry.response if "tool" in item)
        out = spec.finalize(spec.output_model.model_validate(data), view)
        counts.append(len(out.payload.stories))
        problems.append(spec.check(out, view))
        assert out.payload.cycles == []
        known = session["capability-model"].payload.ids() | {
            d.id for d in session["architecture-decisions"].payload.decisions
        }
        assert all(set(s.implements) <= known for s in out.payload.stories)
    assert counts == [first, second]
    assert problems[0] and "exceed the appetite bound of 8" in problems[0][0]
    assert (problems[1] == []) is second_ok


def test_dependency_order_is_acyclic_in_every_story_answer() -> None:
    for path in (PIPELINE, OVER, STILL_OVER):
        for line in read_lines(path):
            if line["agent"] != "story-generation":
                continue
            stories = parse(line).payload.stories
            assert dependency_order(stories)[1] == [], path.name


# -- idea fixtures ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(IDEAS.glob("*.md")), ids=lambda p: p.stem)
def test_idea_fixtures_are_short_and_plain(path: Path) -> None:
    words = len(path.read_text(encoding="utf-8").split())
    low, high = (60, 120) if path.stem == "power_of_8" else (40, 120)
    assert low <= words <= high, f"{path.name}: {words} words"
