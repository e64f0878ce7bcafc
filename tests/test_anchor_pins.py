"""Pins wherever a trait family exists (issue 26, point 1): ask once, then ask the founder."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_cli_args

from haytham.cli import main
from haytham.schemas.anchor import AMBIGUITY_THRESHOLD, ConceptAnchor
from haytham.schemas.pins import PIN_AGENT, TraitPins, apply_pins, ask_founder, unpinned
from haytham.schemas.traits import FAMILY_OF_KIND, TRAIT_VALUES, VALUE_WORDS


def _anchor_line() -> dict:
    return next(
        json.loads(ln)
        for ln in (POWER8 / "pipeline.jsonl").read_text().splitlines()
        if ln.strip() and json.loads(ln)["agent"] == "anchor-extraction"
    )


def _run(tmp_path: Path, pin_answer: dict | None, capsys) -> tuple[dict, list[dict], list[str]]:
    """Run to Gate 1 with the access invariant's pin left out by the extractor and
    ``pin_answer`` as the recorded answer of the one extra pin call."""
    line = _anchor_line()
    line["response"][1]["input"]["invariants"][0]["trait"] = None  # access_model, kind access
    lines = [json.dumps(line)]
    if pin_answer is not None:
        lines.append(
            json.dumps(
                {
                    "agent": PIN_AGENT,
                    "turn": 1,
                    "when": ["INV-1 access_model"],
                    "response": [{"tool": "TraitPins", "input": pin_answer}],
                    "note": "fixture: the pin the extractor left out",
                }
            )
        )
    replacement = tmp_path / "anchor.jsonl"
    replacement.write_text("\n".join(lines) + "\n")
    cassette = cassette_with(tmp_path, replacement, drop_agents={"anchor-extraction"})
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    args = replay_cli_args(tmp_path, cassette)
    assert main(["run", "--idea-file", str(idea), "--session-id", "pins", "--quiet", *args]) == 0
    capsys.readouterr()
    folder = tmp_path / "sessions" / "pins"
    saved = json.loads((folder / "concept_anchor.json").read_text())
    events = [json.loads(ln) for ln in (folder / "events.jsonl").read_text().splitlines()]
    return saved, events, args


def test_the_vocabulary_is_one_table_and_every_family_has_plain_words() -> None:
    assert FAMILY_OF_KIND["access"] == "auth" and FAMILY_OF_KIND["cadence"] == "cadence"
    assert "approval" in TRAIT_VALUES["auth"]
    assert {"barter", "donation"} <= set(TRAIT_VALUES["payments"])
    for family in FAMILY_OF_KIND.values():
        assert set(VALUE_WORDS[family]) == set(TRAIT_VALUES[family])


def test_a_missing_pin_is_asked_for_once_and_the_answer_pins_it(tmp_path: Path, capsys) -> None:
    saved, events, _ = _run(
        tmp_path, {"pins": [{"invariant": "INV-1", "value": "invite-only"}]}, capsys
    )
    access = saved["invariants"][0]
    assert access["trait"] == "auth=invite_only"
    assert access["confidence"] >= AMBIGUITY_THRESHOLD  # no question for the founder
    calls = [e for e in events if e["type"] == "model_call" and e["stage"] == "anchor-extraction"]
    assert len(calls) == 2  # the extraction and exactly one pin call
    (pins,) = [e for e in events if e["type"] == "anchor_pins"]
    assert pins["data"]["asked"] == ["INV-1"] and pins["data"]["founder"] == []


def test_a_pin_still_missing_becomes_a_gate_1_question_whose_choice_pins_it(
    tmp_path: Path, capsys
) -> None:
    saved, _, args = _run(tmp_path, {"pins": [{"invariant": "INV-1", "value": None}]}, capsys)
    access = saved["invariants"][0]
    assert access["trait"] is None and access["confidence"] < AMBIGUITY_THRESHOLD
    assert access["ambiguity"].startswith("Which of these does your idea mean?")
    assert access["clarification_options"] == list(VALUE_WORDS["auth"].values())
    invited = VALUE_WORDS["auth"]["invite_only"]
    assert access["option_traits"][invited] == "auth=invite_only"
    # approval waits for the founder's answer
    assert main(["approve", "pins", "--gate", "1", "--quiet", *args]) == 2
    assert "access_model" in capsys.readouterr().err
    assert main(["clarify", "pins", "--invariant", "access_model", "--choice", invited, *args]) == 0
    after = json.loads((tmp_path / "sessions/pins/concept_anchor.json").read_text())
    assert after["invariants"][0]["trait"] == "auth=invite_only"
    assert after["invariants"][0]["value"] == invited


def test_a_failed_pin_call_loses_nothing_the_founder_is_asked(tmp_path: Path, capsys) -> None:
    saved, events, _ = _run(tmp_path, None, capsys)  # no recorded answer: the call fails
    assert saved["invariants"][0]["confidence"] < AMBIGUITY_THRESHOLD
    assert any(e["type"] == "anchor_pins_failed" for e in events)


def _anchor(**access: object) -> ConceptAnchor:
    inv = {"property": "access_model", "kind": "access", "value": "members only"}
    return ConceptAnchor.model_validate(
        {
            "intent": {"goal": "g"},
            "invariants": [
                {**inv, "source": "members", "confidence": 0.9, **access},
                {
                    "property": "size",
                    "kind": "structure",
                    "value": "8",
                    "source": "8",
                    "confidence": 0.9,
                },
            ],
        }
    )


def test_pins_outside_the_family_or_for_other_invariants_are_ignored() -> None:
    anchor = _anchor()
    assert [i.id for i in unpinned(anchor)] == ["INV-1"]  # structure has no family
    answer = TraitPins.model_validate(
        {"pins": [{"invariant": "INV-1", "value": "video"}, {"invariant": "INV-2", "value": "x"}]}
    )
    assert apply_pins(anchor, answer).invariants[0].trait is None
    pinned = apply_pins(
        anchor, TraitPins(pins=[{"invariant": "access_model", "value": "auth=approval"}])
    )
    assert pinned.invariants[0].trait == "auth=approval" and not unpinned(pinned)


def test_an_ambiguous_invariant_keeps_its_options_and_they_gain_pins() -> None:
    anchor = _anchor(
        confidence=0.5, clarification_options=["Only members I add", "Anyone with the link"]
    )
    answer = TraitPins.model_validate(
        {
            "pins": [
                {
                    "invariant": "INV-1",
                    "options": {
                        "Only members I add": "invite_only",
                        "Anyone with the link": "none",
                    },
                }
            ]
        }
    )
    asked = ask_founder(apply_pins(anchor, answer))
    inv = asked.invariants[0]
    assert inv.clarification_options == ["Only members I add", "Anyone with the link"]
    assert inv.resolved("Only members I add", by_user=True).trait == "auth=invite_only"
    # the question survives a reload with all of the family's options
    full = ask_founder(_anchor())
    again = ConceptAnchor.model_validate(full.model_dump(mode="json"))
    assert len(again.invariants[0].clarification_options) == len(VALUE_WORDS["auth"])
    assert again.invariants[0].option_traits == full.invariants[0].option_traits
