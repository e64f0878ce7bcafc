"""Model provider page (issue 17): choose a provider and models per tier, test the connection
(a one-token call through the model factory), use the choice for new sessions; keys typed in
the browser stay in memory, keys on the server show as "set"; every bad input is one sentence.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from fake_openai import fake_openai
from streamlit.testing.v1 import AppTest
from test_ui_support import CASSETTE, POWER8_IDEA, app, at_gate, poll, service, shows, texts

from haytham.models.connection import AGENT

PAGE = "views/providers.py"
SERVER_KEY = "sk-server-env-secret-0123456789"
TYPED_KEY = "sk-typed-in-the-browser-9876543210"


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The replay provider with the Power of 8 cassette plus one line for the connection
    check's one-token call (agent ``connection-check``, turn 1)."""
    folder = tmp_path / "cassette"
    folder.mkdir()
    for f in sorted(CASSETTE.glob("*.jsonl")) if CASSETTE.is_dir() else [CASSETTE]:
        (folder / f.name).write_text(f.read_text("utf-8"), "utf-8")
    check = {"agent": AGENT, "turn": 1, "response": [{"text": "ok"}], "note": "connection"}
    (folder / "connection.jsonl").write_text(json.dumps(check) + "\n", "utf-8")
    root = tmp_path / "sessions"
    monkeypatch.setenv("HAYTHAM_PROVIDER", "replay")
    monkeypatch.setenv("HAYTHAM_CASSETTE", str(folder))
    monkeypatch.setenv("HAYTHAM_SESSIONS_DIR", str(root))
    monkeypatch.setenv("HAYTHAM_RETRY_DELAY", "0")
    monkeypatch.setenv("HAYTHAM_INTAKE", "off")  # the cassette has no intake turn
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    return root


def page() -> AppTest:
    return app(page=PAGE)


def plain(markdown: str) -> str:
    """A message without the Markdown escapes ``md`` adds."""
    return re.sub(r"\\(.)", r"\1", markdown)


def everything(at: AppTest) -> str:
    """All the page shows, widget values included."""
    values = [str(w.value) for w in at.text_input] + [str(w.value) for w in at.selectbox]
    return "\n".join(texts(at) + values + [str(w.placeholder) for w in at.text_input])


def test_choosing_a_provider_shows_its_default_models_and_the_server_keys_as_set(
    sessions: Path,
) -> None:
    at = page()
    assert not at.exception
    assert at.title[0].value == "Model provider"
    assert shows(at, "run on:** `replay`") and shows(at, "(the server's settings)")
    assert shows(at, "never written to disk, to session files, events or logs")

    at.selectbox(key="provider_name").select("openai").run()
    tiers = [at.text_input(key=f"provider_model_openai_{t}").value for t in ("light", "heavy")]
    assert tiers == ["gpt-5-mini", "gpt-5.1"]
    assert shows(at, "`OPENAI_API_KEY` on the server: **set**")
    assert at.text_input(key="provider_key_openai").value in ("", None)
    assert SERVER_KEY not in everything(at)

    at.selectbox(key="provider_name").select("anthropic").run()
    assert at.text_input(key="provider_model_anthropic_heavy").value == "claude-sonnet-4-6"
    assert shows(at, "`ANTHROPIC_API_KEY` on the server: **not set**")
    at.selectbox(key="provider_name").select("local").run()
    assert at.text_input(key="provider_model_local_light").value == "gemma-3-270m-q4_k_m"
    assert not at.exception


def test_connection_check_names_the_model_and_its_latency(sessions: Path) -> None:
    at = page()
    at.text_input(key="provider_model_replay_heavy").input("replay-heavy-2")
    at.button(key="provider_test").click().run()
    assert not at.exception and not at.error, texts(at)
    [ok] = at.success
    assert "Connected: `replay-heavy-2` on `replay` answered in" in ok.value
    assert ok.value.rstrip().endswith(" s.")


def test_a_failed_connection_is_the_providers_error_in_one_redacted_sentence(
    sessions: Path,
) -> None:
    with fake_openai() as server:
        at = page()
        at.selectbox(key="provider_name").select("openai").run()
        at.text_input(key="provider_url_openai").input(server.url)
        at.text_input(key="provider_key_openai").input(TYPED_KEY)
        at.button(key="provider_test").click().run()
        assert server.authorizations == [f"Bearer {TYPED_KEY}"]  # the typed key was used
        [body] = server.bodies  # one call, to the heavy model, capped at one token
        assert body["model"] == "gpt-5.1" and body["max_tokens"] == 1
    assert not at.exception
    [error] = at.error
    text = plain(error.value)
    assert "credentials rejected (HTTP 401)" in text
    assert "Incorrect API key provided" in text  # the provider's own words…
    assert TYPED_KEY not in text and "[OPENAI_API_KEY redacted]" in text
    assert text.count(". ") == 0 and text.endswith(".")  # …in one sentence
    assert not at.success
    # nothing lost: the form still holds what was typed
    assert at.text_input(key="provider_url_openai").value == server.url


def test_an_unreachable_server_is_one_sentence(sessions: Path) -> None:
    at = page()
    at.selectbox(key="provider_name").select("llamacpp").run()
    at.text_input(key="provider_url_llamacpp").input("http://127.0.0.1:9")
    at.button(key="provider_test").click().run()
    assert not at.exception
    [error] = at.error
    shown = plain(error.value).replace("\u200b", "")
    assert "nothing answers at http://127.0.0.1:9 (connection refused)" in shown  # issue 28


@pytest.mark.parametrize(
    ("provider", "field", "value", "sentence"),
    [
        ("replay", "provider_model_replay_heavy", "two words", "The heavy model id has spaces"),
        ("openai", "provider_url_openai", "ftp://example.com", "must start with http"),
        ("openai", "provider_url_openai", "http://a.example/" + "v" * 600, "over 500 char"),
        ("openai", "provider_url_openai", "http://me:pw@example.com/v1", "user or password"),
        ("openai", "provider_key_openai", "sk-with a space-123", "spaces or line breaks"),
        ("openai", "provider_key_openai", "short", "under 8 characters"),
        ("anthropic", "provider_key_anthropic", "", "Paste an API key for anthropic"),
        ("llamacpp", "provider_url_llamacpp", "", "Give the llama-server URL"),
        ("bedrock", "provider_region_bedrock", "us west", "The AWS region is a name"),
    ],
)
def test_bad_input_is_one_sentence_and_nothing_is_lost_or_applied(
    sessions: Path, provider: str, field: str, value: str, sentence: str
) -> None:
    at = page()
    at.selectbox(key="provider_name").select(provider).run()
    at.text_input(key=field).input(value)
    at.run()
    for button in ("provider_test", "provider_apply"):
        at.button(key=button).click().run()
        assert not at.exception
        [error] = at.error
        assert sentence in plain(error.value), error.value
        assert at.text_input(key=field).value == value  # kept as typed
        assert at.selectbox(key="provider_name").value == provider
    assert shows(at, "(the server's settings)")  # nothing was applied
    assert "provider_choice" not in at.session_state


def test_applied_choice_runs_new_sessions_while_existing_ones_keep_theirs(
    sessions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
    earlier = "earlier"
    with service() as svc:  # a session that exists before the choice, on the server's settings
        svc.create_session(POWER8_IDEA, session_id=earlier)
        svc.run(earlier, until=2, auto_approve=True)

    at = page()
    chosen = {"light": "light-2", "heavy": "heavy-2", "reasoning": "reasoning-2"}
    for tier, model in chosen.items():
        at.text_input(key=f"provider_model_replay_{tier}").input(model)
    at.button(key="provider_apply").click().run()
    assert not at.exception
    assert shows(at, "New sessions you start from this browser session run on `replay`")
    assert shows(at, "heavy `heavy-2`") and shows(at, "(chosen on this page)")

    at.switch_page("views/new_idea.py").run()
    assert shows(at, "**Provider:** `replay` · **models:** light `light-2`, heavy `heavy-2`")
    at.text_area(key="idea_text").input(POWER8_IDEA)
    at.button(key="start").click().run()
    assert at.title[0].value == "Run", texts(at)
    at.switch_page("views/run.py")  # AppTest reruns the page it was last switched to
    poll(at, at_gate(1))
    new = at.session_state["selected_session"]
    calls = _calls(sessions, new)
    assert calls and {c["model_id"] for c in calls} <= set(chosen.values())

    # the earlier session, continued from this browser session, keeps the server's settings
    before = len(_calls(sessions, earlier))
    at.switch_page("views/gate_2.py")
    at.query_params["session"] = earlier
    at.run()
    at.button(key="approve_2").click().run()
    assert at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, at_gate(3))
    assert {c["model_id"] for c in _calls(sessions, earlier)[before:]} == {"replay"}

    # back to the server's settings: the next session runs on them again
    at.switch_page(PAGE).run()
    at.button(key="provider_reset").click().run()
    assert shows(at, "run on the server's settings again")
    at.switch_page("views/new_idea.py").run()
    assert shows(at, "light `replay`, heavy `replay`")
    assert at.session_state["provider_started"][new].model_heavy == "heavy-2"  # kept


def _calls(sessions: Path, sid: str) -> list[dict]:
    lines = (sessions / sid / "events.jsonl").read_text("utf-8").splitlines()
    events = [json.loads(x) for x in lines if x.strip()]
    return [e["data"] for e in events if e.get("type") == "model_call"]


def test_two_keys_never_share_a_service_and_no_key_is_in_a_cache_key() -> None:
    from pydantic import SecretStr

    from frontend_streamlit.components.context import _cache_key
    from haytham.config import Settings

    one, other = (
        Settings(provider="openai", openai_api_key=SecretStr(key))
        for key in (TYPED_KEY, TYPED_KEY + "2")
    )
    assert _cache_key(one) != _cache_key(other)
    assert _cache_key(one) == _cache_key(
        Settings(provider="openai", openai_api_key=SecretStr(TYPED_KEY))
    )
    for conf in (one, other):
        assert TYPED_KEY not in _cache_key(conf)
        plain_digest = hashlib.sha256(json.dumps(sorted(conf.credentials().items())).encode())
        assert plain_digest.hexdigest() not in _cache_key(conf)  # keyed: confirms no guess
