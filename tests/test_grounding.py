"""Anchor grounding: an invariant's source quote must be in the idea, or Gate 1 asks about it."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_cli_args

from haytham.cli import main
from haytham.schemas.anchor import AMBIGUITY_THRESHOLD, ConceptAnchor
from haytham.validate.grounding import LEAVE_OPEN, ground_anchor, is_grounded

IDEA = (
    "I direct a community choir of 45 amateur singers. I want to share part tracks so each "
    "singer can practise their own part alone, whenever suits them. Only members I add should "
    "be able to get in; it's not for the public."
)


def _anchor(quote: str, confidence: float = 0.9, **feature: str) -> ConceptAnchor:
    return ConceptAnchor.model_validate(
        {
            "intent": {"goal": "Part practice for a choir"},
            "invariants": [
                {
                    "property": "access_model",
                    "value": "members the director adds",
                    "source": quote,
                    "confidence": confidence,
                }
            ],
            "identity": [{"feature": "Solo part practice", **feature}],
        }
    )


def test_an_exact_quote_differing_in_case_and_punctuation_is_grounded() -> None:
    assert is_grounded("ONLY members I add should be able to get in!", IDEA)
    anchor = ground_anchor(_anchor("only members i add, should be able to get in"), IDEA)
    inv = anchor.invariants[0]
    assert inv.grounded is True and inv.confidence == 0.9 and not inv.is_ambiguous


def test_a_close_paraphrase_is_grounded() -> None:
    assert is_grounded("each singer practises their own part alone", IDEA)
    assert is_grounded("only the members the director adds can get in, not the public", IDEA)


def test_an_invented_quote_is_capped_below_the_threshold_with_options() -> None:
    anchor = ground_anchor(_anchor("live video rehearsals over Zoom", confidence=0.95), IDEA)
    inv = anchor.invariants[0]
    assert inv.grounded is False
    assert inv.confidence < AMBIGUITY_THRESHOLD and inv.is_ambiguous
    assert "not found in your idea" in (inv.ambiguity or "")
    assert inv.clarification_options == ["members the director adds", LEAVE_OPEN]
    assert [i.property for i in anchor.open_ambiguities()] == ["access_model"]
    # the founder's choice settles it, and the flag stays for the record
    chosen = anchor.clarify("access_model", "1").invariants[0]
    assert chosen.user_clarified and chosen.value == "members the director adds"
    assert chosen.grounded is False and not chosen.is_ambiguous


def test_an_ungrounded_entry_that_is_already_ambiguous_keeps_its_own_options() -> None:
    anchor = ConceptAnchor.model_validate(
        {
            "intent": {"goal": "g"},
            "invariants": [
                {
                    "property": "session_medium",
                    "value": "video",
                    "source": "video/audio chat",
                    "confidence": 0.5,
                    "ambiguity": "medium unclear",
                    "clarification_options": ["Video", "Text"],
                }
            ],
        }
    )
    inv = ground_anchor(anchor, IDEA).invariants[0]
    assert inv.grounded is False
    assert inv.ambiguity == "medium unclear" and inv.clarification_options == ["Video", "Text"]


def test_an_identity_feature_is_checked_only_through_its_source_quote() -> None:
    invented = ground_anchor(_anchor("only members I add", source="a weekly live concert"), IDEA)
    assert invented.identity[0].grounded is False
    assert "[not found in the idea]" in invented.render()
    quoted = ground_anchor(_anchor("only members I add", source="practise their own part"), IDEA)
    assert quoted.identity[0].grounded is True
    described = ground_anchor(_anchor("only members I add"), IDEA)
    assert described.identity[0].grounded is None


def test_a_spaceless_cjk_quote_is_compared_by_characters() -> None:
    idea = "一位心理学家想为他的现有患者开发一个私密应用程序，八名患者在线聚会。"
    assert is_grounded("现有患者开发一个私密应用", idea)
    assert not is_grounded("公开注册的视频课程平台", idea)


def test_an_invented_anchor_entry_forces_a_clarification_at_gate_1(tmp_path: Path, capsys) -> None:
    line = next(
        json.loads(ln)
        for ln in (POWER8 / "pipeline.jsonl").read_text().splitlines()
        if ln.strip() and json.loads(ln)["agent"] == "anchor-extraction"
    )
    anchor = line["response"][1]["input"]
    anchor["invariants"][0]["source"] = "open public sign-up through the app store"
    anchor["invariants"][0]["confidence"] = 0.95
    replacement = tmp_path / "anchor.jsonl"
    replacement.write_text(json.dumps(line) + "\n")
    cassette = cassette_with(tmp_path, replacement, drop_agents={"anchor-extraction"})
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    args = replay_cli_args(tmp_path, cassette)
    assert (
        main(["run", "--idea-file", str(idea), "--session-id", "grounding", "--quiet", *args]) == 0
    )
    capsys.readouterr()
    # approving is refused while the ungrounded invariant is open
    assert main(["approve", "grounding", "--gate", "1", "--quiet", *args]) == 2
    assert "access_model" in capsys.readouterr().err
    saved = json.loads((tmp_path / "sessions/grounding/concept_anchor.json").read_text())
    access = next(i for i in saved["invariants"] if i["property"] == "access_model")
    assert access["grounded"] is False and access["confidence"] < AMBIGUITY_THRESHOLD
    others = [i for i in saved["invariants"] if i["property"] != "access_model"]
    assert all(i["grounded"] is True for i in others)
