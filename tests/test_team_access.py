"""Identities in the team deployment, against a real PostgreSQL: the decision record is
append-only in the shared store and outlives a deleted session, the CLI acts as the user of an
issued token (and is refused without one), and a worker runs a queued session as the system,
recording who queued it. Skipped, with the reason, where no PostgreSQL answers."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_helpers import IDEA
from team_helpers import Workers, database, team_env, team_settings

from haytham.errors import AccessDenied, SessionNotFound
from haytham.people.access import person

pytestmark = pytest.mark.team
TOKEN = "ada-cli-token-1"
POLICY = f"""
admins = ["ann@example.org"]
founders = ["ada@example.org", "bob@example.org"]
four_eyes = true
[cohorts.spring]
founders = ["ada@example.org"]
reviewers = ["rita@example.org"]
[tokens]
"{hashlib.sha256(TOKEN.encode()).hexdigest()}" = "ada@example.org"
"""


@pytest.fixture
def db():
    with database() as url:
        yield url


def _service(url: str, tmp_path: Path, **env: str):
    from haytham.app import make_service

    (tmp_path / "access.toml").write_text(POLICY)
    extra = {"HAYTHAM_ACCESS_FILE": str(tmp_path / "access.toml"), "HAYTHAM_TRUSTED_NETWORK": "off"}
    return make_service(team_settings(url, tmp_path, **extra, **env), tracking=False)


def test_the_shared_record_is_append_only_and_outlives_the_session(db, tmp_path) -> None:
    import psycopg

    base = _service(db, tmp_path)
    ada, ann = base.acting_as(person("ada@example.org")), base.acting_as(person("ann@example.org"))
    sid = ada.create_session(IDEA)
    with pytest.raises(AccessDenied, match="not one of theirs"):
        base.acting_as(person("bob@example.org")).status(sid)
    ada.delete_session(sid)
    with psycopg.connect(db) as conn, conn.cursor() as cur:
        cur.execute("UPDATE haytham_audit SET actor = 'mallory'")
        cur.execute("DELETE FROM haytham_audit")
    record = ann.decisions(sid)
    assert [(d.action, d.actor) for d in record] == [
        ("create", "ada@example.org"),
        ("delete", "ada@example.org"),
    ]
    assert [d.session_id for d in ann.decisions(user="ada@example.org")] == [sid, sid]
    with pytest.raises(SessionNotFound):
        ada.decisions(sid)  # the session is gone: its record is for admins
    base.close()


def test_the_cli_acts_as_the_tokens_user_and_a_worker_records_who_queued(db, tmp_path) -> None:
    base = _service(db, tmp_path)
    (tmp_path / "access.toml").write_text(POLICY)
    env = team_env(
        db,
        tmp_path,
        HAYTHAM_ACCESS_FILE=str(tmp_path / "access.toml"),
        HAYTHAM_TRUSTED_NETWORK="off",
    )
    haytham = [sys.executable, "-m", "haytham.cli"]
    refused = subprocess.run(
        [*haytham, "sessions"], env=env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 4, refused.stderr
    assert refused.stderr.strip() == (
        "error: In team mode the CLI acts as a named user: set HAYTHAM_TOKEN to the token "
        "your operator issued you (see docs/deploy.md)."
    )
    as_ada = env | {"HAYTHAM_TOKEN": TOKEN}
    with Workers(db, tmp_path, HAYTHAM_ACCESS_FILE=str(tmp_path / "access.toml")) as workers:
        workers.start(1)
        made = subprocess.run(
            [*haytham, "run", "--idea", IDEA, "--session-id", "ada-one", "--quiet"],
            env=as_ada,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert made.returncode == 0, made.stderr + workers.logs()
        deadline = time.monotonic() + 120
        while base.acting_as(person("ann@example.org")).status("ada-one")["gate"] != 1:
            assert time.monotonic() < deadline, workers.logs()
            time.sleep(0.2)
    events = base.store.open("ada-one").events()
    started = [e["data"] for e in events if e["type"] == "job_started"]
    assert started and started[0]["queued_by"] == "ada@example.org"
    ann = base.acting_as(person("ann@example.org"))
    assert [(d.action, d.actor) for d in ann.decisions("ada-one")] == [
        ("create", "ada@example.org")
    ]
    # her own approval under four eyes is refused by the CLI in one sentence, nothing changed
    approve = subprocess.run(
        [*haytham, "approve", "ada-one", "--gate", "1"],
        env=as_ada,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert approve.returncode == 4 and "four-eyes rule" in approve.stderr
    assert base.acting_as(person("ann@example.org")).status("ada-one")["gate"] == 1
    base.close()


def test_the_one_query_session_list_holds_only_what_the_caller_may_open(db, tmp_path) -> None:
    """The Sessions page's one-query list (``session_rows``) in the shared store: a founder's
    rows are their own, the reviewer sees the cohort's founder, the admin everyone."""
    base = _service(db, tmp_path)
    ada, bob = (base.acting_as(person(f"{n}@example.org")) for n in ("ada", "bob"))
    mine, theirs = ada.create_session(IDEA), bob.create_session(IDEA)

    def listed(who: str) -> set[str]:
        return {r["session"] for r in base.acting_as(person(who)).session_rows() or []}

    assert listed("ada@example.org") == {mine}
    assert listed("bob@example.org") == {theirs}
    assert listed("rita@example.org") == {mine}  # her cohort: ada
    assert listed("ann@example.org") == {mine, theirs}
