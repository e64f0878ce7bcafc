"""Intake in a real browser (issue 17): an off-topic text stops on New idea with the explanation
and example ideas; a thin idea's questions come as a form, and the answers reach idea.md and the
concept anchor's sources at Gate 1.

Replay provider (the Power of 8 recording plus a hand-written intake turn), intake on, free
localhost port, no network; Debian's Chromium. Screenshots ``intake-unrelated`` and
``intake-questions`` land in ``HAYTHAM_E2E_SHOTS`` when it names a folder.
"""

from __future__ import annotations

from pathlib import Path

from browser_helpers import BROWSER, Shots, browser_page, served
from test_intake import ANSWERS, OFF_TOPIC, QUOTE, THIN, UNRELATED, _cassette, _thin

from haytham.schemas.intake import CLARIFICATIONS_HEADING

pytestmark = BROWSER


def _start(page, server: str, text: str) -> None:
    page.goto(f"{server}/sessions")  # a page URL on a fresh server still gets the nav
    page.get_by_role("link", name="New idea").click()
    box = page.get_by_label("Your idea")
    box.fill(text)
    box.press("Control+Enter")
    page.get_by_role("button", name="Start").click()


def test_an_off_topic_text_stops_with_example_ideas(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    cassette = _cassette(tmp_path, UNRELATED)
    with (
        served(tmp_path, cassette, HAYTHAM_INTAKE="on") as server,
        browser_page(tmp_path) as page,
    ):
        _start(page, server, OFF_TOPIC)
        expect(page.get_by_text("This doesn't read as a startup idea")).to_be_visible()
        expect(page.get_by_text(UNRELATED["explanation"])).to_be_visible()
        for example in UNRELATED["examples"]:
            expect(page.get_by_text(example)).to_be_visible()
        Shots(page)("intake-unrelated")
        page.get_by_role("button", name="Use this idea").first.click()
        expect(page.get_by_label("Your idea")).to_have_value(UNRELATED["examples"][0])
        expect(page.get_by_text("This doesn't read as a startup idea")).to_have_count(0)
    sessions = [p for p in (tmp_path / "sessions").iterdir() if p.name[0] != "_"]
    assert len(sessions) == 1 and not (sessions[0] / "stages").exists()  # nothing ran


def test_a_misread_idea_can_be_analysed_anyway(tmp_path: Path) -> None:
    """A weak model calls a real idea unrelated: the founder overrides it in one click."""
    from browser_helpers import IDEA
    from playwright.sync_api import expect

    cassette = _cassette(tmp_path, UNRELATED)
    with (
        served(tmp_path, cassette, HAYTHAM_INTAKE="on") as server,
        browser_page(tmp_path) as page,
    ):
        _start(page, server, IDEA)
        expect(page.get_by_text("This doesn't read as a startup idea")).to_be_visible()
        page.get_by_role("button", name="It is an idea: analyse it anyway").click()
        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
    made = sorted(p for p in (tmp_path / "sessions").iterdir() if p.name[0] != "_")
    assert len(made) == 2  # the stopped session stays; the new one skipped intake and ran
    assert sum((p / "stages").exists() for p in made) == 1


def test_a_thin_idea_is_answered_through_the_form(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    cassette = _thin(tmp_path)
    with (
        served(tmp_path, cassette, HAYTHAM_INTAKE="on") as server,
        browser_page(tmp_path) as page,
    ):
        _start(page, server, THIN)
        expect(page.get_by_text("A few questions before the analysis starts")).to_be_visible()
        page.get_by_role("textbox", name="1. Which restaurants").fill(ANSWERS[0])
        page.get_by_role("textbox", name="3. What does the first version do").fill(ANSWERS[2])
        Shots(page)("intake-questions")
        page.get_by_role("button", name="Answer and continue").click()
        # a blank answer is named before anything is sent; the typed ones stay
        expect(page.get_by_text("Question 2 is blank: it will be skipped.")).to_be_visible()
        expect(page.get_by_role("textbox", name="1. Which restaurants")).to_have_value(ANSWERS[0])
        page.get_by_role("button", name="Continue with question 2 blank").click()
        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
        page.get_by_role("button", name="Review Gate 1").click()
        # the anchor's first invariant quotes the founder's answer, found in the idea
        expect(page.get_by_text(f"{QUOTE}” (found in your idea)")).to_be_visible()
    (session,) = [p for p in (tmp_path / "sessions").iterdir() if p.name[0] != "_"]
    idea = (session / "idea.md").read_text("utf-8")
    assert CLARIFICATIONS_HEADING in idea and ANSWERS[0] in idea and ANSWERS[2] in idea


def _in_view(page, locator) -> bool:  # noqa: ANN001
    box = locator.bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"]


def test_enter_keeps_every_answer_and_the_questions_are_in_view(tmp_path: Path) -> None:
    """Issue 28: at 1280×800 the questions replace the Start area without scrolling; Enter in
    an answer sends nothing (the next answers can still be typed), and every answer arrives."""
    from playwright.sync_api import expect

    cassette = _thin(tmp_path)
    typed = ["Family-run bistros.", "Diners wait outside in the rain.", "Texts them a table."]
    with (
        served(tmp_path, cassette, HAYTHAM_INTAKE="on") as server,
        browser_page(tmp_path) as page,
    ):
        page.set_viewport_size({"width": 1280, "height": 800})
        _start(page, server, THIN)
        expect(page.get_by_text("A few questions before the analysis starts")).to_be_visible()
        expect(page.get_by_role("button", name="Start", exact=True)).to_have_count(0)
        boxes = [page.get_by_role("textbox", name=f"{n}. ") for n in (1, 2, 3)]
        go_on = page.get_by_role("button", name="Answer and continue")
        for part in [*boxes, go_on]:
            assert _in_view(page, part), part
        Shots(page)("intake-questions-1280")
        for box, answer in zip(boxes, typed, strict=True):
            box.fill(answer)
            box.press("Enter")
            expect(box).to_have_value(answer)
        expect(page.get_by_text("A few questions before the analysis starts")).to_be_visible()
        for box, answer in zip(boxes, typed, strict=True):
            expect(box).to_have_value(answer)
        go_on.click()
        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
    (session,) = [p for p in (tmp_path / "sessions").iterdir() if p.name[0] != "_"]
    idea = (session / "idea.md").read_text("utf-8")
    assert all(answer in idea for answer in typed)
