"""Team mode in the app: without an identity provider or a trusted network it refuses to work;
on a trusted network each browser session records a name, and the access file's roles apply to
it (the sign-in through a real provider is tests/test_browser_signin.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from team_helpers import database
from test_ui_support import app, shows, use_replay

from haytham.app import make_service
from haytham.config import load_settings
from haytham.people.access import person

pytestmark = pytest.mark.team


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    use_replay(tmp_path, monkeypatch)
    with database() as url:
        monkeypatch.setenv("HAYTHAM_DATABASE_URL", url)
        monkeypatch.setenv("HAYTHAM_INTAKE", "off")
        monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
        yield tmp_path


def test_team_mode_without_identity_refuses_in_one_sentence(team, monkeypatch) -> None:
    monkeypatch.delenv("HAYTHAM_TRUSTED_NETWORK", raising=False)
    at = app()
    assert not at.exception
    assert shows(at, "Team mode needs sign-in: configure an identity provider")
    assert not at.text_area  # no page drew: no idea box, nothing to read


def test_a_trusted_network_records_each_browser_sessions_name(team, monkeypatch) -> None:
    (team / "access.toml").write_text('founders = ["*"]\n')
    monkeypatch.setenv("HAYTHAM_TRUSTED_NETWORK", "on")
    monkeypatch.setenv("HAYTHAM_ACCESS_FILE", str(team / "access.toml"))
    with make_service(load_settings(), tracking=False) as base:
        tess = base.acting_as(person("tess"))
        mine = tess.create_session(
            "A marketplace where universities sell used lab equipment to each other, with shipping."
        )
        other = base.acting_as(person("uma")).create_session(
            "A shared calendar for community choirs that book rehearsal rooms in churches and schools."
        )
    at = app(page="views/sessions.py")
    assert not at.exception
    at.text_input(key="trusted_user_name").set_value("tess").run()
    at.switch_page("views/sessions.py").run()
    listed = set(at.dataframe[0].value["session"])
    assert mine in listed and other not in listed
    at.query_params["session"] = other
    at.switch_page("views/run.py").run()
    assert shows(at, "tess may not open this session")  # (Markdown-escaped punctuation)
    assert not at.title  # nothing of the session drew
