"""New idea page: provider shown, examples, character count, inline errors, nothing created."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_ui_support import POWER8_IDEA, app, at_gate, poll, shows, texts, ui_env, use_replay

from haytham.idea.checks import MAX_CHARS
from haytham.models.providers import LOCAL_MODEL_CAVEAT

RAW_TAG = re.compile(r"(?<!\\)<(script|img|b>)")


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_replay(tmp_path, monkeypatch)


def test_provider_models_and_examples(sessions: Path) -> None:
    at = app()
    assert shows(at, "**Provider:** `replay`")
    assert not shows(at, LOCAL_MODEL_CAVEAT)
    examples = [b for b in at.button if (b.key or "").startswith("example_")]
    assert len(examples) == 1  # the one idea the replay cassette covers (issue 28)
    examples[0].click().run()
    assert at.text_area(key="idea_text").value.startswith("I'm a psychologist")
    assert shows(at, "words (at least 10)")
    assert not at.text_area(key="idea_text").proto.max_chars  # a browser drops longer pastes


def test_local_provider_shows_the_caveat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ui_env(monkeypatch, tmp_path / "sessions", provider="local")
    at = app()
    assert any(w.value == LOCAL_MODEL_CAVEAT for w in at.warning)
    assert not at.exception


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The idea is empty"),
        ("an app for dogs", "write at least 10"),
    ],
)
def test_bad_input_is_an_inline_message_and_creates_nothing(
    sessions: Path, text: str, message: str
) -> None:
    at = app()
    at.text_area(key="idea_text").input(text)
    at.button(key="start").click().run()
    assert not at.exception
    assert at.title[0].value == "New idea"
    assert any(message in e.value for e in at.error), texts(at)
    assert not sessions.exists() or not [p for p in sessions.iterdir() if p.name != "_tracking"]


def test_a_paste_over_the_limit_is_kept_and_the_limit_is_said(sessions: Path) -> None:
    at = app()
    long = "word " * (MAX_CHARS // 5 + 100)
    at.text_area(key="idea_text").input(long)
    at.run()
    assert at.text_area(key="idea_text").value == long  # nothing was cut or lost
    assert any("the limit is 20,000" in w.value for w in at.warning)
    at.button(key="start").click().run()
    assert any("the limit is 20,000" in e.value for e in at.error)
    assert not sessions.exists() or not [p for p in sessions.iterdir() if p.name != "_tracking"]


def test_html_in_an_idea_shows_as_text(sessions: Path) -> None:
    idea = "<b>bold</b> <script>alert('x')</script> <img src=x onerror=alert(1)>\n" + POWER8_IDEA
    at = app()
    at.text_area(key="idea_text").input(idea)
    at.button(key="start").click().run()
    poll(at, at_gate(1))
    for page in ("views/run.py", "views/gate_1.py", "views/sessions.py"):
        at.switch_page(page).run()
        assert not at.exception
        for element in at.markdown:
            assert not element.proto.allow_html, element.value
        for value in texts(at):
            assert not RAW_TAG.search(value), value  # every "<" of the idea is escaped
    at.switch_page("views/run.py").run()
    assert shows(at, r"\<script\>")
