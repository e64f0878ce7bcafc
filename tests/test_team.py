"""The team deployment against a real PostgreSQL: the shared store, the job queue, two app
instances and workers that survive each other (docs/deploy.md).

Skipped, with the reason, where no PostgreSQL answers (``make services`` starts one).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import CHROMIUM, IDEA, Shots, browser_page, served
from team_helpers import Workers, database, team_env, team_settings

from haytham.stages import get_stage

pytestmark = pytest.mark.team
in_browser = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium (make browser installs it)",
)


@pytest.fixture
def db():
    with database() as url:
        yield url


def _service(url: str, tmp_path: Path, **env: str):
    from haytham.app import make_service

    return make_service(team_settings(url, tmp_path, **env), tracking=False)


def _completed(svc, sid: str) -> list[str]:
    """The stages (and the anchor, the input checks) completed, in order; a phase verifier may
    run again by design (the re-check after a Gate 1 clarification), so it is not counted."""
    return [
        str(e["stage"])
        for e in svc.store.open(sid).events()
        if e["type"] == "stage_completed" and not str(e["stage"]).startswith("verify-")
    ]


def _jobs(url: str, session_id: str) -> list[dict]:
    """The session's jobs in the queue, oldest first (their arguments as ``data``)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT status, args FROM procrastinate_jobs WHERE lock = %s ORDER BY id",
            (session_id,),
        ).fetchall()
    return [{"status": st, "data": args} for st, args in rows]


def _mid_stage(svc, runs, workers: Workers, sid: str, done: int = 0) -> int:
    """Wait until ``done`` steps of ``sid`` completed and the next one runs; the pid of the
    worker holding the session."""
    deadline = time.monotonic() + 60
    while len(_completed(svc, sid)) < done or runs.current_stage(sid) is None:
        assert time.monotonic() < deadline, workers.logs()
        time.sleep(0.05)
    found = re.search(r"\bpid (\d+)", svc.store.open(sid)._holder() or "")
    assert found is not None
    return int(found[1])


@contextlib.contextmanager
def _two_workers_mid_stage(db: str, tmp_path: Path, done: int = 0) -> Iterator[tuple]:
    """Two workers (replay, 1 s a call) running one new session, caught mid-stage after
    ``done`` steps: (service, runs, workers, session id, pid of the worker running it)."""
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    with Workers(db, tmp_path, HAYTHAM_REPLAY_LATENCY="1") as workers:
        workers.start(2)
        sid = svc.create_session(IDEA)
        runs.run(sid)
        yield svc, runs, workers, sid, _mid_stage(svc, runs, workers, sid, done=done)


def _one_sentence(text: str) -> bool:
    return "\n" not in text and "Traceback" not in text and text.rstrip().endswith(".")


# -- the shared store --------------------------------------------------------------------------
def test_the_shared_store_keeps_the_folder_contract(db, tmp_path) -> None:
    from haytham.errors import InputError, SessionLocked, SessionNotFound

    svc = _service(db, tmp_path)
    files = svc.store.create("team-a")
    files.write_json("stages/01_idea/output.json", {"x": 1})
    files.write_text("verifications/why.json", "{}\n")
    files.write_text("verifications/deep/what.json", "{}\n")
    assert files.read_json("stages/01_idea/output.json") == {"x": 1}
    assert files.exists("stages/01_idea") and not files.exists("stages/01_ide")
    assert files.list("verifications") == ["verifications/why.json"]
    files.remove("verifications")
    assert files.list("verifications") == [] and files.exists("stages/01_idea/output.json")
    files.append_event("session_created", None, provider="replay")
    assert [e["type"] for e in files.events()] == ["session_created"]
    with pytest.raises(InputError, match="already exists"):
        svc.store.create("team-a")
    with pytest.raises(InputError):
        files.write_text("../outside.json", "{}")

    other = _service(db, tmp_path)  # another process's view: one writer at a time
    with files.lock():
        assert other.store.open("team-a").is_busy()
        with pytest.raises(SessionLocked) as refused, other.store.open("team-a").lock():
            pass
        assert _one_sentence(str(refused.value)) and "busy in another process" in str(refused.value)
    assert not other.store.open("team-a").is_busy()

    svc.delete_session("team-a")
    with pytest.raises(SessionNotFound):
        other.store.open("team-a")
    assert other.list_sessions() == []


def test_a_session_is_free_the_moment_its_lock_is_left(db, tmp_path, monkeypatch) -> None:
    """The lock is released on its connection before the connection goes back to the pool,
    whose reset (the other way to release it) runs later in a pool thread: here it never runs,
    and another process still sees the session free at once."""
    svc = _service(db, tmp_path)
    files = svc.store.create("quick")
    kept = []
    monkeypatch.setattr(files.db, "give_back", kept.append)  # a pool that has not reset yet
    with files.lock():
        assert _service(db, tmp_path).store.open("quick").is_busy()
    assert kept and not _service(db, tmp_path).store.open("quick").is_busy()
    for conn in kept:
        conn.close()


def test_a_dead_holders_lock_is_released_by_the_server(db, tmp_path) -> None:
    svc = _service(db, tmp_path)
    svc.store.create("held")
    code = (
        "import sys, time\n"
        "sys.path.insert(0, 'tests')\n"
        "from team_helpers import team_settings\n"
        "from haytham.storage.backends import open_store\n"
        "from pathlib import Path\n"
        f"store = open_store(team_settings({db!r}, Path({str(tmp_path)!r})))\n"
        "with store.open('held').lock():\n"
        "    print('locked', flush=True)\n"
        "    time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], cwd=Path(__file__).parent.parent, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        assert svc.store.open("held").is_busy()
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        deadline = time.monotonic() + 10
        while svc.store.open("held").is_busy() and time.monotonic() < deadline:
            time.sleep(0.1)
        with svc.store.open("held").lock():  # free again: nobody is left holding it
            pass
    finally:
        holder.kill()


def test_export_from_the_shared_store_and_import_into_the_folder_round_trips_exactly(
    db, tmp_path
) -> None:
    from haytham.app import make_service
    from haytham.config import load_settings

    shared = _service(db, tmp_path)
    sid = shared.create_session(IDEA)
    shared.run(sid, auto_approve=True, until=3)  # two gates decided, stops at Gate 3
    bundle_path = tmp_path / "session.json"
    bundle_path.write_text(shared.export(sid, "session"), encoding="utf-8")

    folder_settings = load_settings(
        env={"HAYTHAM_EMBEDDINGS": "off", "HAYTHAM_INTAKE": "off"},
        dotenv=None,
        provider="replay",
        cassette=shared.settings.cassette,
        sessions_dir=tmp_path / "folder",
    )
    embedded = make_service(folder_settings, tracking=False)
    assert embedded.import_session(bundle_path) == sid
    again = json.loads(embedded.export(sid, "session"))
    assert again == json.loads(bundle_path.read_text(encoding="utf-8"))
    for fmt in ("json", "markdown"):
        assert embedded.export(sid, fmt) == shared.export(sid, fmt)
    assert embedded.status(sid)["status"] == shared.status(sid)["status"] == "waiting_gate_3"

    # the imported session goes on in the folder store, from where it stood
    embedded.run(sid, auto_approve=True)
    assert embedded.status(sid)["status"] == "done"
    assert sorted(_completed(embedded, sid)) == sorted(set(_completed(embedded, sid)))

    # and back: the folder's session into a second shared database is the same session
    with database() as second:
        other = _service(second, tmp_path)
        (tmp_path / "done.json").write_text(embedded.export(sid, "session"), encoding="utf-8")
        other.import_session(tmp_path / "done.json")
        assert json.loads(other.export(sid, "session")) == json.loads(
            embedded.export(sid, "session")
        )


def test_import_refuses_what_is_not_a_session_export_and_writes_nothing(db, tmp_path) -> None:
    from haytham.errors import InputError

    svc = _service(db, tmp_path)
    bad = tmp_path / "bad.json"
    for text in ("not json", '{"format": "other"}', '{"format": "haytham-session", "version": 1}'):
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as refused:
            svc.import_session(bad)
        assert _one_sentence(str(refused.value))
    assert svc.list_sessions() == []


def test_a_shared_database_row_naming_a_module_is_refused_and_imports_nothing(
    db, tmp_path, monkeypatch
) -> None:
    """A row of the shared ``burr_state`` naming a class path: status, export and resume refuse
    it in one sentence and the module (which writes a marker when imported) never loads."""
    import psycopg

    from haytham.errors import SessionCorrupt

    mods, flag = tmp_path / "mods", tmp_path / "imported.txt"
    mods.mkdir()
    (mods / "haytham_team_marker.py").write_text(
        f"from pathlib import Path\nPath({str(flag)!r}).write_text('imported')\n", "utf-8"
    )
    monkeypatch.syspath_prepend(str(mods))
    svc = _service(db, tmp_path)
    sid = svc.create_session(IDEA)
    svc.run(sid, until=1)
    tag = {"__burr_serde__": "pydantic", "__pydantic_class": "haytham_team_marker.M"}
    with psycopg.connect(db) as conn, conn.cursor() as cur:
        cur.execute(
            "UPDATE burr_state SET state = state::jsonb || %s::jsonb WHERE app_id = %s "
            "AND sequence_id = (SELECT max(sequence_id) FROM burr_state WHERE app_id = %s)",
            (json.dumps({"extra": tag}), sid, sid),
        )
    for attempt in (lambda: svc.status(sid), lambda: svc.export(sid, "json")):
        with pytest.raises(SessionCorrupt) as refused:
            attempt()
        assert _one_sentence(str(refused.value)) and "does not know" in str(refused.value)
    with pytest.raises(SessionCorrupt):
        svc.run(sid, auto_approve=True)
    assert not flag.exists()


# -- the queue ---------------------------------------------------------------------------------
def test_a_worker_killed_mid_stage_is_replaced_and_no_completed_stage_runs_again(
    db, tmp_path
) -> None:
    with _two_workers_mid_stage(db, tmp_path, done=2) as (svc, runs, workers, sid, pid):
        assert pid in [p.pid for p in workers.procs]  # stage 1 and the anchor are done
        os.kill(pid, signal.SIGKILL)
        killed_at = len(_completed(svc, sid))

        job = runs.wait(sid, timeout=120)
        assert job is not None and job.state == "finished", workers.logs()
    done = _completed(svc, sid)
    assert svc.status(sid)["status"] == "waiting_gate_1"
    assert len(done) == len(set(done)), f"a completed stage ran again: {done}"
    assert len(done) > killed_at  # the other worker finished the rest
    assert "lost its worker" in workers.logs()


def test_a_second_run_of_a_waiting_session_is_refused_in_one_sentence(db, tmp_path) -> None:
    from haytham.app import make_runs
    from haytham.errors import SessionLocked

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    sid = svc.create_session(IDEA)
    first = runs.run(sid)  # no worker yet: it waits in the queue
    assert first.state == "queued" and runs.is_running(sid) and runs.running() == [sid]
    with pytest.raises(SessionLocked) as refused:
        runs.run(sid)
    assert _one_sentence(str(refused.value))
    assert runs.live_workers() == 0  # the Run page says to start one
    with Workers(db, tmp_path) as workers:
        workers.start(1)
        # the count is cached for a heartbeat (what a Run page costs): it turns within seconds
        deadline = time.monotonic() + 30
        while runs.live_workers() != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert runs.live_workers() == 1
        job = runs.wait(sid, timeout=60)
    assert job is not None and job.state == "finished"
    assert runs.running() == []


def test_provider_slots_bound_the_calls_in_flight_across_processes(db, tmp_path) -> None:
    import asyncio

    from haytham.models.limits import SharedCallSlots
    from haytham.storage.postgres import Database

    slots = [SharedCallSlots(2, Database(db)) for _ in range(3)]  # three "workers"
    inside, peak, guard = [0], [0], threading.Lock()

    async def call(n: int) -> None:
        async with slots[n % 3].held("replay"):
            with guard:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            await asyncio.sleep(0.2)
            with guard:
                inside[0] -= 1

    def worker(n: int) -> None:
        asyncio.run(call(n))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert peak[0] == 2


def test_two_reviewers_approving_one_gate_at_once_one_wins(db, tmp_path) -> None:
    from haytham.errors import HaythamError

    first, second = _service(db, tmp_path), _service(db, tmp_path)  # two app instances
    sid = first.create_session(IDEA)
    first.run(sid)
    state = first.load_state(sid)
    assert state.anchor is not None
    for inv in state.anchor.open_ambiguities():
        first.clarify(sid, inv.property, "1")
    start = threading.Barrier(2)
    results: dict[str, object] = {}

    def approve(name: str, svc) -> None:
        start.wait()
        try:
            results[name] = svc.approve(sid, 1, f"by {name}", continue_run=False)
        except HaythamError as exc:
            results[name] = exc

    threads = [threading.Thread(target=approve, args=p) for p in (("a", first), ("b", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    errors = [r for r in results.values() if isinstance(r, HaythamError)]
    assert len(results) == 2 and len(errors) == 1, results
    assert _one_sentence(str(errors[0]))
    gate = first.load_state(sid).gates[1]
    assert gate.status == "approved"
    approvals = [e for e in first.store.open(sid).events() if e["type"] == "gate_command"]
    assert [e["data"]["command"] for e in approvals].count("approve") == 1


# -- two app instances -------------------------------------------------------------------------
def _start_in_browser(page, server: str) -> str:
    from playwright.sync_api import expect

    page.goto(server)  # the main page is New idea
    box = page.get_by_label("Your idea")
    box.fill(IDEA)
    box.press("Control+Enter")
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_role("heading", name="Run")).to_be_visible()
    deadline = time.monotonic() + 30
    while "session=" not in page.url:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return page.url.split("session=", 1)[1].split("&", 1)[0]


@in_browser
def test_twenty_sessions_started_through_two_app_instances_reach_gate_1(db, tmp_path) -> None:
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    env = team_env(db, tmp_path)
    del env["HAYTHAM_SESSIONS_DIR"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    extra = {k: v for k, v in env.items() if k.startswith("HAYTHAM_")}
    with (
        Workers(db, tmp_path) as workers,
        served(tmp_path / "a", **extra) as one,
        served(tmp_path / "b", **extra) as two,
        browser_page(tmp_path) as page,
    ):
        workers.start(2, concurrency=2)
        started = [_start_in_browser(page, (one, two)[n % 2]) for n in range(20)]
        assert len(set(started)) == 20
        deadline = time.monotonic() + 180
        for sid in started:
            job = runs.wait(sid, timeout=max(1.0, deadline - time.monotonic()))
            assert job is not None and job.state == "finished", (sid, job, workers.logs())
        assert {svc.status(sid)["status"] for sid in started} == {"waiting_gate_1"}
        assert sorted(svc.list_sessions()) == sorted(started)


def _progress_text(page, server: str, sid: str) -> str:
    """The Run page's progress lines as a reviewer reads them (steps done, the stage running
    now, the calls so far), elapsed seconds left out: they tick between two page loads."""
    from playwright.sync_api import expect

    page.goto(f"{server}/run?session={sid}")
    expect(page.get_by_text("now:").first).to_be_visible()
    expect(page.get_by_text("steps done").first).to_be_visible()  # the bar's text
    expect(page.get_by_text("model calls finished")).to_be_visible()
    text = page.locator("[data-testid='stMain']").inner_text()
    keep = ("steps done", "Running", "model calls finished")
    lines = [line for line in text.splitlines() if any(k in line for k in keep)]
    return re.sub(r"\d+(\.\d+)? ?(s|min)\b", "…", "\n".join(lines))


@in_browser
def test_two_app_instances_show_the_same_live_progress(db, tmp_path) -> None:
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    extra = {k: v for k, v in team_env(db, tmp_path).items() if k.startswith("HAYTHAM_")} | {
        "HAYTHAM_REPLAY_LATENCY": "1"
    }
    extra.pop("HAYTHAM_SESSIONS_DIR")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        Workers(db, tmp_path, HAYTHAM_REPLAY_LATENCY="1") as workers,
        served(tmp_path / "a", **extra) as one,
        served(tmp_path / "b", **extra) as two,
        browser_page(tmp_path) as page,
    ):
        workers.start(1)
        sid = svc.create_session(IDEA)
        runs.run(sid)
        _mid_stage(svc, runs, workers, sid, done=2)
        worker = workers.procs[0]
        worker.send_signal(signal.SIGSTOP)  # freeze the run mid-stage (shorter than a stall)
        time.sleep(0.2)
        now = runs.current_stage(sid)
        assert now is not None
        try:
            seen = [_progress_text(page, server, sid) for server in (one, two)]
            page.wait_for_timeout(1000)  # the stage table draws last
            Shots(page)("team-0-live-progress")  # instance two, the run frozen mid-stage
        finally:
            worker.send_signal(signal.SIGCONT)
        assert seen[0] == seen[1], seen
        assert f"Running · … · now: {get_stage(now.stage).title}" in seen[0], seen[0]
        job = runs.wait(sid, timeout=120)
        assert job is not None and job.state == "finished"


def test_validate_export_and_status_work_on_the_shared_store_from_the_cli(db, tmp_path) -> None:
    svc = _service(db, tmp_path)
    sid = svc.create_session(IDEA)
    svc.run(sid)
    haytham = str(Path(sys.executable).parent / "haytham")
    env = team_env(db, tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [haytham, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    checked = cli("validate", sid, "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["findings"] is not None
    status = cli("status", sid, "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["status"] == "waiting_gate_1"
    assert cli("export", sid).stdout == svc.export(sid, "markdown")
    with Workers(db, tmp_path) as workers:  # the CLI's runs and decisions go to the queue
        workers.start(1)
        started = cli("run", "--idea", IDEA)
        assert started.returncode == 0, started.stderr + workers.logs()
        assert "waiting at Gate 1" in started.stdout and "queued for a worker" in started.stderr
        assert "idea-analysis" in started.stderr and "market-context" in started.stderr
        new = started.stdout.split("session: ", 1)[1].split()[0]
        for inv in svc.load_state(new).anchor.open_ambiguities():
            assert cli("clarify", new, "--invariant", inv.property, "--choice", "1").returncode == 0
        approved = cli("approve", new, "--gate", "1")
        assert approved.returncode == 0, approved.stderr
        assert "waiting at Gate 2" in approved.stdout and "mvp-scope" in approved.stderr
    ran = [e["data"].get("label") for e in _jobs(db, new)]
    assert ran == ["run", "approve (CLI)"]
    missing = cli("validate", "no-such-session")
    assert missing.returncode != 0 and _one_sentence(missing.stderr.strip().splitlines()[-1])
    assert "Traceback" not in missing.stderr


def test_doctor_reports_the_shared_database(db, tmp_path) -> None:
    from haytham.doctor import run_checks

    settings = team_settings(db, tmp_path)
    _service(db, tmp_path).create_session(IDEA)
    found = {c.name: c for c in run_checks(settings)}["sessions dir"]
    assert found.ok and "shared database" in found.detail and "1 sessions" in found.detail
    gone = team_settings(db.rsplit("/", 1)[0] + "/haytham_no_such_db", tmp_path)
    missing = {c.name: c for c in run_checks(gone)}["sessions dir"]
    assert not missing.ok and "Could not use the shared database" in missing.detail
    assert "haytham:haytham@" not in missing.detail  # the URL's password is never shown


@in_browser
def test_a_reviewer_on_the_other_instance_decides_gate_1_and_a_worker_runs_on(db, tmp_path) -> None:
    from playwright.sync_api import expect

    svc = _service(db, tmp_path)
    extra = {k: v for k, v in team_env(db, tmp_path).items() if k.startswith("HAYTHAM_")}
    extra.pop("HAYTHAM_SESSIONS_DIR")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        Workers(db, tmp_path) as workers,
        served(tmp_path / "a", **extra) as one,
        served(tmp_path / "b", **extra) as two,
        browser_page(tmp_path) as page,
    ):
        shot = Shots(page)
        workers.start(1)
        sid = _start_in_browser(page, one)  # a founder on instance one
        expect(page.get_by_text("Waiting at Gate 1: review")).to_be_visible()
        shot("team-1-instance-one-gate-1")

        page.goto(f"{two}/gate_1?session={sid}")  # a reviewer on instance two
        page.get_by_text("Synchronous live sessions - all eight present at once").click()
        page.get_by_text("Video/audio call (like Zoom)").click()
        page.get_by_role("button", name="Confirm clarifications").click()
        expect(page.get_by_text("Clarified 2 invariant(s)").first).to_be_visible()
        shot("team-2-instance-two-gate-1-clarified")
        page.get_by_role("button", name="Approve Gate 1").click()
        expect(page.get_by_role("heading", name="Run")).to_be_visible()
        expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()  # a worker ran it

        page.goto(f"{one}/run?session={sid}")  # and the founder's instance shows the same
        expect(page.get_by_text("Waiting at Gate 2: review")).to_be_visible()
        expect(page.get_by_text("7 / 11 steps done")).to_be_visible()
        shot("team-3-instance-one-gate-2")
        assert "Traceback" not in workers.logs()
    approvals = [e["data"] for e in svc.store.open(sid).events() if e["type"] == "gate_command"]
    assert [a["command"] for a in approvals].count("approve") == 1
    assert svc.status(sid)["status"] == "waiting_gate_2"


def test_more_threads_than_pooled_connections_wait_their_turn_on_kept_connections(
    db, tmp_path
) -> None:
    from haytham.storage.postgres import POOL_MAX, Database

    shared = Database(db)
    errors: list[Exception] = []
    backends: set[int] = set()

    def one(cur) -> int:
        cur.execute("SELECT pg_backend_pid(), pg_sleep(0.01)")
        return int(cur.fetchone()[0])

    def queries() -> None:
        try:
            for _ in range(5):
                backends.add(shared.run(one))
        except Exception as exc:  # noqa: BLE001 - the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=queries) for _ in range(POOL_MAX * 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    shared.close()
    assert errors == []
    # 60 statements on at most POOL_MAX server connections: connections are kept, not one each
    assert 1 <= len(backends) <= POOL_MAX, backends


def test_a_paused_worker_keeps_its_job_and_no_live_run_starts_twice(db, tmp_path) -> None:
    with _two_workers_mid_stage(db, tmp_path) as (svc, runs, workers, sid, pid):
        paused = next(p for p in workers.procs if p.pid == pid)
        paused.send_signal(signal.SIGSTOP)  # silent past the stalled timeout, lock still held
        time.sleep(16)
        paused.send_signal(signal.SIGCONT)
        job = runs.wait(sid, timeout=120)
        assert job is not None and job.state == "finished", workers.logs()
    done = _completed(svc, sid)
    assert len(done) == len(set(done)), done
    assert "lost its worker" not in workers.logs()
    assert [j["status"] for j in _jobs(db, sid)] == ["succeeded"]


def _job_spans(url: str) -> list[tuple[float, float]]:
    """Each finished job's (started, ended) times, from procrastinate's events."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT max(at) FILTER (WHERE type = 'started'), "
            "max(at) FILTER (WHERE type = 'succeeded') "
            "FROM procrastinate_events GROUP BY job_id ORDER BY job_id"
        ).fetchall()
    return [(a.timestamp(), b.timestamp()) for a, b in rows if a and b]


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_worker_runs_at_most_its_concurrency_of_sessions_at_once(
    db, tmp_path, concurrency
) -> None:
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    sids = [svc.create_session(IDEA) for _ in range(3)]
    with Workers(db, tmp_path, HAYTHAM_REPLAY_LATENCY="0.3") as workers:
        for sid in sids:
            runs.run(sid)
        workers.start(1, concurrency=concurrency)
        for sid in sids:
            job = runs.wait(sid, timeout=120)
            assert job is not None and job.state == "finished", workers.logs()
    spans = _job_spans(db)
    assert len(spans) == 3
    most = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert most == concurrency


def _cli_without(package: str, url: str, tmp_path, monkeypatch, capsys, *command: str) -> str:
    """``haytham COMMAND`` in this process with ``package`` missing; its stderr."""
    from haytham.cli import main

    monkeypatch.setitem(sys.modules, package, None)  # as if it were not installed
    for loaded in ("haytham.storage.postgres", "haytham.runs.queue", "haytham.runs.queue_schema"):
        monkeypatch.delitem(sys.modules, loaded, raising=False)
    for key, value in team_env(url, tmp_path).items():
        if key.startswith("HAYTHAM_"):
            monkeypatch.setenv(key, value)
    code = main(list(command))
    err = capsys.readouterr().err.strip()
    assert code != 0 and "Traceback" not in err, err
    return err


def test_a_database_url_without_psycopg_is_one_sentence(tmp_path, monkeypatch, capsys) -> None:
    url = "postgresql://haytham@127.0.0.1:1/none"
    err = _cli_without("psycopg", url, tmp_path, monkeypatch, capsys, "sessions")
    assert "package psycopg is not installed" in err and "'.[team]'" in err, err


def test_a_worker_without_procrastinate_is_one_sentence(db, tmp_path, monkeypatch, capsys) -> None:
    for command in ("worker", "migrate"):
        err = _cli_without("procrastinate", db, tmp_path, monkeypatch, capsys, command)
        assert "package procrastinate is not installed" in err and "'.[team]'" in err, err


# -- faults: a database restart, a pruned registration, no free connection ---------------------
def _admin(url: str, *statements: str) -> list:
    """Run statements on the server of ``url`` from its maintenance database; the last one's
    rows."""
    import psycopg

    admin = url.rsplit("/", 1)[0] + "/postgres"
    rows: list = []
    with psycopg.connect(admin, autocommit=True) as conn:
        for sql in statements:
            cur = conn.execute(sql)
            rows = cur.fetchall() if cur.description else []
    return rows


def _restart_cluster() -> None:
    """Restart the PostgreSQL cluster on this machine (fast shutdown: every connection drops);
    skips the test where that can't be done."""
    import shutil

    if os.geteuid() != 0 or shutil.which("pg_ctlcluster") is None:
        pytest.skip("restarting PostgreSQL needs root and pg_ctlcluster (Debian's postgresql)")
    listed = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=True)
    found = [line.split() for line in listed.stdout.splitlines() if " 5432 " in f" {line} "]
    if not found:
        pytest.skip("no local PostgreSQL cluster on port 5432 to restart")
    version, name = found[0][0], found[0][1]
    subprocess.run(["pg_ctlcluster", version, name, "restart"], check=True, timeout=120)


def _all_mid_stage(svc, runs, workers: Workers, sids: list[str]) -> None:
    deadline = time.monotonic() + 120
    while not all(_completed(svc, s) and runs.current_stage(s) is not None for s in sids):
        assert time.monotonic() < deadline, workers.logs()
        time.sleep(0.1)


def test_a_database_restart_during_four_runs_loses_none_and_repeats_no_stage(db, tmp_path) -> None:
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    sids = [svc.create_session(IDEA) for _ in range(4)]
    with Workers(db, tmp_path, HAYTHAM_REPLAY_LATENCY="0.5") as workers:
        workers.start(2, concurrency=2)
        for sid in sids:
            runs.run(sid)
        _all_mid_stage(svc, runs, workers, sids)  # four runs, each past a step and in the next
        assert all(runs.job(s).alive for s in sids)
        started = _admin(db, "SELECT pg_postmaster_start_time()")[0][0]
        _restart_cluster()
        assert _admin(db, "SELECT pg_postmaster_start_time()")[0][0] > started  # restarted
        for sid in sids:
            job = runs.wait(sid, timeout=240)
            assert job is not None and job.state == "finished", (sid, job, workers.logs())
        assert all(p.poll() is None for p in workers.procs), workers.logs()
    for sid in sids:
        done = _completed(svc, sid)
        assert len(done) == len(set(done)), f"a completed stage ran again in {sid}: {done}"
        assert svc.status(sid)["status"] == "waiting_gate_1"
        assert [j["status"] for j in _jobs(db, sid)] == ["succeeded"]


def test_a_paused_worker_whose_registration_was_pruned_goes_on(db, tmp_path) -> None:
    from haytham.app import make_runs
    from haytham.runs.queue import STALLED_AFTER_S, count_live_workers

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    with Workers(db, tmp_path, HAYTHAM_REPLAY_LATENCY="0.5") as workers:
        workers.start(1)
        paused = workers.procs[0]
        sid = svc.create_session(IDEA)
        runs.run(sid)
        _mid_stage(svc, runs, workers, sid, done=1)
        paused.send_signal(signal.SIGSTOP)  # silent past the stalled timeout, lock still held
        try:
            time.sleep(STALLED_AFTER_S + 2)
            workers.start(1, ready=1)  # a rolling deploy: the new worker prunes the silent one
            with svc.store.db.cursor() as cur:
                cur.execute("SELECT count(*) FROM procrastinate_workers")
                assert cur.fetchone()[0] == 1  # pruned
        finally:
            paused.send_signal(signal.SIGCONT)
        job = runs.wait(sid, timeout=120)
        assert job is not None and job.state == "finished", workers.logs()
        deadline = time.monotonic() + 30
        while count_live_workers(svc.store.db) < 2:  # registered again, under its own id
            assert time.monotonic() < deadline and paused.poll() is None, workers.logs()
            time.sleep(0.2)
        second = svc.create_session(IDEA)  # and it still takes jobs
        runs.run(second)
        job = runs.wait(second, timeout=120)
        assert job is not None and job.state == "finished", workers.logs()
        assert paused.poll() is None, workers.logs()
    done = _completed(svc, sid)
    assert len(done) == len(set(done)), done
    logs = workers.logs()
    assert "registered again" in logs and "lost its worker" not in logs
    # who the workers are, in a table; one line per job: session, where it stands, how long
    with svc.store.db.cursor() as cur:
        cur.execute("SELECT name FROM haytham_workers ORDER BY name")
        assert [r[0] for r in cur.fetchall()] == ["w1", "w2"]
    assert re.search(rf"worker w1: job \d+ session {sid} \(run\): waiting at Gate 1 after", logs)


def test_no_free_connection_makes_a_run_wait_not_fail(db, tmp_path) -> None:
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    name = db.rsplit("/", 1)[1]
    with Workers(db, tmp_path, HAYTHAM_REPLAY_LATENCY="0.5") as workers:
        workers.start(1)
        sid = svc.create_session(IDEA)
        runs.run(sid)
        _mid_stage(svc, runs, workers, sid, done=1)
        # every connection slot of the database taken: what a server at max_connections
        # answers (53300), and every connection the worker had is gone
        import psycopg

        dropped = _admin(
            db,
            f'ALTER DATABASE "{name}" CONNECTION LIMIT 0',
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'",
        )
        try:
            assert len(dropped) >= 2  # the worker's connections (store, queue) are gone
            with pytest.raises(psycopg.OperationalError, match="too many connections"):
                psycopg.connect(db).close()  # and no new one is let in
            time.sleep(5)
            assert all(p.poll() is None for p in workers.procs), workers.logs()
        finally:
            _admin(db, f'ALTER DATABASE "{name}" CONNECTION LIMIT -1')
        job = runs.wait(sid, timeout=120)
        assert job is not None and job.state == "finished", workers.logs()
    done = _completed(svc, sid)
    assert len(done) == len(set(done)), done
    assert svc.status(sid)["status"] == "waiting_gate_1"
    assert [j["status"] for j in _jobs(db, sid)] == ["succeeded"]  # one job, never failed


# -- pages that cost what they show -------------------------------------------------------------
def test_estimates_and_the_session_list_come_from_one_query_and_agree_with_the_events(
    db, tmp_path
) -> None:
    from haytham.app import make_runs
    from haytham.runs.progress import stage_estimates
    from haytham.runs.status import session_status

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    sids = [svc.create_session(IDEA) for _ in range(3)]
    for sid in sids[:2]:
        svc.run(sid)  # two sessions at Gate 1, one not started
    calls = []
    counted = svc.store.db.run
    svc.store.db.run = lambda work: (calls.append(1), counted(work))[1]
    found = runs.estimates(exclude=sids[0])
    listed = svc.session_rows()
    assert len(calls) == 2  # one aggregate query each, whatever the number of sessions
    svc.store.db.run = counted
    # the same figures as reading every session's events
    assert found == stage_estimates(svc.store, "replay", exclude=sids[0])
    assert found and all(e.runs == 1 for e in found.values())  # only sids[1] counts
    assert {r["session"] for r in listed} == set(sids)
    for row in listed:
        files = svc.store.open(row["session"])
        expected = session_status(files, svc.load_state(row["session"]))
        assert (row["status"] or "running") == expected["status"]
        assert row["idea"] == svc.load_state(row["session"]).idea


def test_an_open_run_page_reads_the_database_only_when_the_session_changes(db, tmp_path) -> None:
    from haytham.app import make_runs

    svc = _service(db, tmp_path)
    runs = make_runs(svc)
    sid = svc.create_session(IDEA)
    status = lambda: svc.status(sid)  # noqa: E731
    deadline = time.monotonic() + 30
    while runs.watch.version(sid) is None:  # the listener is connected
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first = runs.view(sid, status)
    calls = []
    counted = svc.store.db.run
    svc.store.db.run = lambda work: (calls.append(1), counted(work))[1]
    try:
        for _ in range(20):  # twenty refreshes of any number of viewers: no query
            assert runs.view(sid, status) == first
        assert calls == []
        before = runs.watch.version(sid)
        svc.store.open(sid).append_event("stage_started", "idea-analysis")
        while runs.watch.version(sid) == before:  # PostgreSQL tells the listener
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert calls  # (the append itself)
        calls.clear()
        runs.view(sid, status)
        assert calls  # read again once
    finally:
        svc.store.db.run = counted


def test_a_call_waiting_for_a_provider_slot_says_so_on_the_run_page(db, tmp_path) -> None:
    import asyncio

    from haytham.app import make_runs
    from haytham.models.limits import SLOT_WAIT_EVENT, SharedCallSlots
    from haytham.storage.postgres import Database

    svc = _service(db, tmp_path, HAYTHAM_PROVIDER_CONCURRENCY="1", HAYTHAM_REPLAY_LATENCY="0.5")
    runs = make_runs(svc)
    hog = SharedCallSlots(1, Database(db))  # another worker's call holds the only slot
    taken, release = threading.Event(), threading.Event()

    async def hold() -> None:
        async with hog.held("replay"):
            taken.set()
            await asyncio.to_thread(release.wait, 60)

    holder = threading.Thread(target=lambda: asyncio.run(hold()))
    holder.start()
    assert taken.wait(30)
    sid = svc.create_session(IDEA)
    with Workers(db, tmp_path, HAYTHAM_PROVIDER_CONCURRENCY="1") as workers:
        workers.start(1)
        runs.run(sid)
        deadline = time.monotonic() + 60
        try:
            while True:
                now = runs.current_stage(sid)
                if now is not None and now.waiting_since is not None:
                    break
                assert time.monotonic() < deadline, workers.logs()
                time.sleep(0.1)
            calls = [e for e in svc.store.open(sid).events() if e["type"] == "model_call"]
            assert calls == []  # nothing called yet: the page says why
        finally:
            release.set()
            holder.join(30)
        job = runs.wait(sid, timeout=120)
        assert job is not None and job.state == "finished", workers.logs()
    assert runs.current_stage(sid) is None
    assert [e["type"] for e in svc.store.open(sid).events()].count(SLOT_WAIT_EVENT) == 1
