"""Runs on a job queue, for a team deployment: procrastinate on the shared PostgreSQL database.

In team mode (``HAYTHAM_DATABASE_URL`` set) an app instance never runs a session itself: a run,
a resume, or the run that follows a gate decision is a job in ``procrastinate_jobs``. Workers
(``haytham worker``, on any machine) take jobs, run the session until its next gate, persist
after every step (Burr's persister), and finish the job. Why procrastinate: it keeps its queue
in the PostgreSQL database the sessions are already in, so a team needs no broker; see
docs/deploy.md for the measured comparison.

- **One job per session at a time**: each job carries the session id as its procrastinate
  ``lock`` (jobs with one lock run one after another) and ``queueing_lock`` (a second run of a
  session that is still waiting is refused with one sentence). The session's advisory lock
  (:mod:`haytham.storage.postgres`) still guards every write.
- **Acknowledged late**: a job stays ``doing`` until its run returns. Every worker sends a
  heartbeat; each worker also sweeps for jobs whose worker stopped beating (SIGKILL, a lost
  machine) and whose session nobody holds any more, and puts them back in the queue, where
  another worker resumes the session from its last persisted step: completed stages are never
  run again, and a live run is never started twice.
- **Bounded**: ``HAYTHAM_WORKER_CONCURRENCY`` sessions per worker process, and at most
  ``HAYTHAM_PROVIDER_CONCURRENCY`` model calls in flight per provider across every worker
  (:class:`haytham.models.limits.SharedCallSlots`). The queue's own pool is small
  (:data:`QUEUE_POOL_MAX`) and, like the store's, does not grow with the sessions in flight.
- **Through database restarts**: every statement of the queue (fetch, heartbeat, finish,
  listen) is retried with back-off while the database is away (:class:`ResilientConnector`),
  a job whose run met the database away for too long is retried, not failed, and a worker whose
  registration was pruned while it was paused registers again under its own id
  (:class:`ResilientJobManager`). The sweeper waits :data:`STALLED_AFTER_S` after the server
  (re)started before it calls any job lost, so a worker that is merely reconnecting keeps its
  job.
- **Stateless app instances**: :class:`QueuedRuns` answers the UI's questions (is it running,
  how did it end) from the jobs table and the session's events, never from process memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import threading
import time
from datetime import datetime
from typing import Any

import procrastinate
import psycopg
from procrastinate import exceptions as pexc
from procrastinate import manager as pmanager
from procrastinate.job_context import JobContext

from haytham.errors import DatabaseAway, HaythamError, SessionLocked, SessionNotFound
from haytham.people.access import SYSTEM, Action
from haytham.runs.progress import Estimate
from haytham.runs.queue_schema import migrate_queue
from haytham.runs.service import Haytham
from haytham.runs.worker import (
    ESTIMATE_TTL_S,
    Job,
    JobState,
    RunWorker,
    StageProgress,
    describe_error,
)
from haytham.storage.postgres import EVENTS_CHANNEL, RETRY_FOR_S, Database, PgStore, transient

log = logging.getLogger(__name__)

TASK = "haytham.advance"
QUEUE = "sessions"
FAILED_EVENT = "job_failed"
HEARTBEAT_S = 2.0  # how often a worker says it is alive
STALLED_AFTER_S = 10.0  # a worker silent this long is gone: its jobs go back to the queue
SWEEP_S = 2.0  # how often each worker looks for such jobs
VIEW_TTL_S = 30.0  # a Run page's snapshot is read again at least this often, changed or not
QUEUE_POOL_MAX = 2  # the queue's connections per process (plus one listening for new jobs)
_STATES: dict[str, JobState] = {
    "todo": "queued",
    "doing": "running",
    "succeeded": "finished",
    "failed": "failed",
    "cancelled": "failed",
    "aborting": "running",
    "aborted": "failed",
}


def advance(context: JobContext, session_id: str, label: str, queued_by: str | None = None) -> None:
    """The job: run ``session_id`` to its next gate (or the end) with this worker's service,
    acting as the system for ``queued_by`` (who asked for the run, checked when it was queued).
    A failure is recorded in the session's events in one sentence (the UI shows it) and fails
    the job; a session busy elsewhere (a reviewer's decision being written) or a database that
    stayed away is retried, from the last saved step. One log line when the job starts and one
    when it ends (session, where it stands, how long, how it ended)."""
    service: Haytham = context.additional_context["service"].acting_as(SYSTEM.behalf(queued_by))
    job_id = context.job.id
    began = time.monotonic()

    def line(text: str) -> None:
        print(
            f"worker {context.worker_name}: job {job_id} session {session_id} ({label}): {text}",
            file=sys.stderr,
            flush=True,
        )

    line("started" if not context.job.attempts else f"started (try {context.job.attempts + 1})")
    with contextlib.suppress(HaythamError):  # who asked for this run, on the session's record
        service.store.open(session_id).append_event(
            "job_started", None, job=job_id, label=label, queued_by=queued_by
        )
    try:
        outcome = service.run(session_id)
    except (SessionLocked, DatabaseAway) as exc:
        line(f"retried after {time.monotonic() - began:.1f} s: {exc}")
        raise
    except Exception as exc:
        message, kind = describe_error(exc)
        if not isinstance(exc, HaythamError):
            log.exception("job %s of %s failed", job_id, session_id)
        line(f"failed after {time.monotonic() - began:.1f} s: {message}")
        with contextlib.suppress(HaythamError):
            service.store.open(session_id).append_event(
                FAILED_EVENT, None, job=job_id, error=message, error_type=kind
            )
        raise
    where = f"waiting at Gate {outcome.gate}" if outcome.gate else outcome.status
    line(f"{where} after {time.monotonic() - began:.1f} s")


def _is_transient(exc: BaseException) -> bool:
    return transient(exc) or (exc.__cause__ is not None and transient(exc.__cause__))


async def _retrying(what: str, attempt: Any) -> Any:
    """``await attempt()``, tried again with back-off while the database is away (the queue's
    side of :meth:`haytham.storage.postgres.Database.retrying`)."""
    deadline: float | None = None
    delay = 0.1
    while True:
        try:
            return await attempt()
        except (pexc.ConnectorException, psycopg.Error) as exc:
            if not _is_transient(exc) or isinstance(exc, pexc.UniqueViolation):
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + RETRY_FOR_S
                log.warning("the queue's database is away (%s); retrying %s", exc, what)
            if now >= deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


class ResilientConnector(procrastinate.PsycopgConnector):
    """procrastinate's psycopg 3 connector, with every statement and the job listener retried
    while the database is away (a restart, a failover) instead of stopping the worker."""

    async def execute_query_async(self, query: Any, **arguments: Any) -> None:
        """Procrastinate's statement, retried while the database is briefly away."""
        parent = super().execute_query_async
        await _retrying("a queue statement", lambda: parent(query, **arguments))

    async def execute_query_one_async(self, query: Any, **arguments: Any) -> dict[str, Any]:
        """Procrastinate's one-row query, retried while the database is briefly away."""
        parent = super().execute_query_one_async
        return await _retrying("a queue statement", lambda: parent(query, **arguments))

    async def execute_query_all_async(self, query: Any, **arguments: Any) -> list[dict[str, Any]]:
        """Procrastinate's query, retried while the database is briefly away."""
        parent = super().execute_query_all_async
        return await _retrying("a queue statement", lambda: parent(query, **arguments))

    async def listen_notify(self, on_notification: Any, channels: Any) -> None:
        """Procrastinate's LISTEN for new jobs, reconnecting after a transient database error."""
        while True:  # reconnects by itself; a refused reconnection waits and tries again
            try:
                await super().listen_notify(on_notification, channels)
            except (pexc.ConnectorException, psycopg.Error) as exc:
                if not _is_transient(exc):
                    raise
                await asyncio.sleep(1.0)


class ResilientJobManager(pmanager.JobManager):
    """procrastinate's job manager, for a worker that outlives its registration: a worker
    paused past the stalled timeout is pruned by the next worker that starts; its next
    heartbeat or fetch registers it again under the same id (instead of a foreign-key error
    that ends it), and its running jobs are its own again."""

    def __init__(self, connector: Any) -> None:
        super().__init__(connector)
        self._running: dict[int, set[int]] = {}  # worker id -> ids of jobs it runs
        self.worker_name: str | None = None  # set by run_worker: recorded in haytham_workers

    async def register_worker(self) -> int:
        """Register this worker with procrastinate and record its name; returns its id."""
        worker_id = await super().register_worker()
        await self._name_worker(worker_id)
        return worker_id

    async def _name_worker(self, worker_id: int) -> None:
        """Who worker ``worker_id`` is, in ``haytham_workers`` (its name, host and pid), so
        ``procrastinate_jobs.worker_id`` can be read as a name."""
        if self.worker_name is None:
            return
        await self.connector.execute_query_async(
            "INSERT INTO haytham_workers (worker_id, name, host, pid) VALUES "
            "(%(worker_id)s, %(name)s, %(host)s, %(pid)s) ON CONFLICT (worker_id) DO UPDATE "
            "SET name = EXCLUDED.name, host = EXCLUDED.host, pid = EXCLUDED.pid",
            worker_id=worker_id,
            name=self.worker_name,
            host=socket.gethostname(),
            pid=os.getpid(),
        )

    async def _register_again(self, worker_id: int) -> None:
        rows = await self.connector.execute_query_all_async(
            "INSERT INTO procrastinate_workers (id) OVERRIDING SYSTEM VALUE "
            "VALUES (%(worker_id)s) ON CONFLICT (id) DO NOTHING RETURNING id",
            worker_id=worker_id,
        )
        if not rows:
            return
        log.warning("worker %s was pruned while it was away: registered again", worker_id)
        await self._name_worker(worker_id)
        jobs = sorted(self._running.get(worker_id, ()))
        if jobs:
            await self.connector.execute_query_async(
                "UPDATE procrastinate_jobs SET worker_id = %(worker_id)s WHERE id = ANY(%(jobs)s) "
                "AND status = 'doing' AND worker_id IS NULL",
                worker_id=worker_id,
                jobs=jobs,
            )

    async def update_heartbeat(self, worker_id: int) -> None:
        """Procrastinate's heartbeat; a worker whose row was pruned while it was away is
        registered again and given back the jobs it is still running."""
        rows = await self.connector.execute_query_all_async(
            "UPDATE procrastinate_workers SET last_heartbeat = now() "
            "WHERE id = %(worker_id)s RETURNING id",
            worker_id=worker_id,
        )
        if not rows:
            await self._register_again(worker_id)

    async def fetch_job(self, queues: Any, worker_id: int) -> Any:
        """The next job for this worker (a worker whose row was pruned meanwhile is registered
        again and the fetch retried); the job is remembered as this worker's while it runs."""
        try:
            job = await super().fetch_job(queues, worker_id)
        except pexc.ConnectorException as exc:
            if not isinstance(exc.__cause__, psycopg.errors.ForeignKeyViolation):
                raise
            await self._register_again(worker_id)
            job = await super().fetch_job(queues, worker_id)
        if job is not None and job.id is not None:
            self._running.setdefault(worker_id, set()).add(job.id)
        return job

    def _done(self, job: Any) -> None:
        for ids in self._running.values():
            ids.discard(job.id)

    async def finish_job(self, job: Any, *args: Any, **kwargs: Any) -> None:
        """Procrastinate's finish, then forget the job as this worker's."""
        await super().finish_job(job, *args, **kwargs)
        self._done(job)

    async def retry_job(self, job: Any, *args: Any, **kwargs: Any) -> None:
        """Procrastinate's retry, then forget the job as this worker's."""
        await super().retry_job(job, *args, **kwargs)
        self._done(job)


def queue_app(url: str) -> procrastinate.App:
    """The procrastinate app on the shared database, with the one task registered."""
    app = procrastinate.App(
        connector=ResilientConnector(
            conninfo=url,
            kwargs={"application_name": f"haytham-queue {socket.gethostname()}"},
            min_size=1,
            max_size=QUEUE_POOL_MAX,
        )
    )
    app.job_manager = ResilientJobManager(app.connector)
    app.task(
        name=TASK,
        queue=QUEUE,
        pass_context=True,
        # a session busy in an app instance (a decision being written) frees up in moments
        # (or, after a machine vanished, until the server drops its connection: keepalives);
        # a database away for longer than a statement waits comes back, the run goes on
        retry=procrastinate.RetryStrategy(
            max_attempts=120, wait=1, retry_exceptions={SessionLocked, DatabaseAway}
        ),
    )(advance)
    return app


class QueuedRuns(RunWorker):
    """The app instance's side of the queue: the same methods as :class:`RunWorker`, answered
    from the database, so every instance shows the same progress."""

    def __init__(self, service: Haytham) -> None:
        super().__init__(service)
        store = service.store
        if not isinstance(store, PgStore):
            raise HaythamError("Queued runs need the shared database (HAYTHAM_DATABASE_URL).")
        self.db = store.db
        self.store = store
        self.app = queue_app(store.db.url)
        migrate_queue(self.app, store.db.url)
        self.app.open()
        self.watch = SessionWatch(store.db.url)
        self._views: dict[str, tuple[tuple[int, int], float, Any]] = {}
        self._workers: tuple[float, int] | None = None

    def close(self) -> None:
        """Stop following session changes and close the queue's connections."""
        self.watch.close()
        self.app.close()

    def view(
        self, session_id: str, status: Any
    ) -> tuple[Job | None, dict[str, Any], StageProgress | None]:
        """What the Run page draws (see :meth:`RunWorker.view`), read again only when the
        session changed: an event appended or its job moved (:class:`SessionWatch` hears it
        from PostgreSQL), or :data:`VIEW_TTL_S` passed. Every viewer of a session in this
        process shares one read: an open Run page costs no query while nothing happens."""
        seen = self.watch.version(session_id)
        now = time.monotonic()
        with self._lock:
            cached = self._views.get(session_id)
        fresh = cached is not None and now - cached[1] < VIEW_TTL_S
        if seen is not None and cached is not None and cached[0] == seen and fresh:
            return cached[2]
        found = (self.job(session_id), status(), self.current_stage(session_id))
        if seen is not None:
            with self._lock:
                self._views[session_id] = (seen, now, found)
        return found

    def estimates(self, exclude: str | None = None) -> dict[str, Estimate]:
        """Per stage row, the median wall time of its runs in the other sessions on this
        provider: one aggregate query (:meth:`PgStore.stage_medians`), kept
        :data:`haytham.runs.worker.ESTIMATE_TTL_S` seconds."""
        now = time.monotonic()
        with self._lock:
            cached = self._estimates.get(exclude)
        if cached is not None and now - cached[0] < ESTIMATE_TTL_S:
            return cached[1]
        medians = self.store.stage_medians(self.service.settings.provider, exclude)
        found = {k: Estimate(round(m, 3), n) for k, (m, n) in medians.items()}
        with self._lock:
            self._estimates[exclude] = (now, found)
        return found

    def run(self, session_id: str, label: str = "run") -> Job:
        """Queue a run of the session to its next gate for a worker (refused while one is
        queued or running); ``label`` says why, on the Run page."""
        self.service.allow(Action.RUN, session_id)  # the worker runs it as the system
        current = self.job(session_id)
        if current is not None and current.alive:
            raise SessionLocked(
                f"Session {session_id} is already {current.state} ({current.label}); wait for "
                "it to finish."
            )
        try:
            self.app.configure_task(TASK, lock=session_id, queueing_lock=session_id).defer(
                session_id=session_id, label=label, queued_by=self.service.actor.id
            )
        except pexc.AlreadyEnqueued:
            raise SessionLocked(
                f"Session {session_id} already has a run waiting for a worker; it starts as "
                "soon as one is free."
            ) from None
        except pexc.ConnectorException as exc:
            raise self.db.unreachable(exc) from None
        job = self.job(session_id)
        assert job is not None
        return job

    def answer(self, session_id: str, answers: list[str]) -> Job:
        """Record the founder's intake answers, then queue the run on from them."""
        self.service.answer_intake(session_id, answers, continue_run=False)
        return self.run(session_id, "answers")

    def _latest(self, session_id: str) -> tuple[Any, ...] | None:
        """The session's latest job: id, status, arguments, when asked, when it ended."""

        def work(cur: Any) -> tuple[Any, ...] | None:
            cur.execute(
                "SELECT j.id, j.status, j.args, "
                "(SELECT min(at) FROM procrastinate_events e WHERE e.job_id = j.id), "
                "(SELECT max(at) FROM procrastinate_events e WHERE e.job_id = j.id "
                "AND e.type IN ('succeeded', 'failed', 'cancelled', 'aborted')) "
                "FROM procrastinate_jobs j WHERE j.lock = %s AND j.task_name = %s "
                "ORDER BY j.id DESC LIMIT 1",
                (session_id, TASK),
            )
            return cur.fetchone()

        return self.db.run(work)

    def job(self, session_id: str) -> Job | None:
        """The session's latest job as the pages show it (``None`` if it never had one)."""
        row = self._latest(session_id)
        if row is None:
            return None
        job_id, status, args, began, ended = row
        state = _STATES.get(str(status), "failed")
        error = error_type = None
        if state == "failed":
            error, error_type = self._failure(session_id, job_id)
        return Job(
            session_id=session_id,
            label=str((args or {}).get("label") or "run"),
            state=state,
            started_at=_seconds(began),
            ended_at=_seconds(ended)
            if ended is not None and state in ("finished", "failed")
            else None,
            error=error,
            error_type=error_type,
        )

    def _failure(self, session_id: str, job_id: int) -> tuple[str, str]:
        with contextlib.suppress(HaythamError):
            for ev in reversed(self.service.store.open(session_id).events()):
                data = ev.get("data") or {}
                if ev.get("type") == FAILED_EVENT and data.get("job") == job_id:
                    return str(data.get("error")), str(data.get("error_type"))
        return "The run stopped in a worker; resume to try again.", "WorkerError"

    def running(self) -> list[str]:
        """Sessions with a job waiting or running (one job per session at a time)."""

        def work(cur: Any) -> list[str]:
            cur.execute(
                "SELECT DISTINCT lock FROM procrastinate_jobs WHERE task_name = %s "
                "AND status IN ('todo', 'doing', 'aborting') ORDER BY lock",
                (TASK,),
            )
            return [str(r[0]) for r in cur.fetchall()]

        return self.db.run(work)

    def forget(self, session_id: str) -> None:
        """Nothing to drop: the jobs table is the record."""

    def live_workers(self) -> int:
        """Workers that are alive (a queued job with none waits until one starts); counted at
        most every :data:`HEARTBEAT_S` seconds per process."""
        now = time.monotonic()
        with self._lock:
            cached = self._workers
        if cached is not None and now - cached[0] < HEARTBEAT_S:
            return cached[1]
        count = count_live_workers(self.db)
        with self._lock:
            self._workers = (now, count)
        return count

    def wait(self, session_id: str, timeout: float | None = None) -> Job | None:
        """Poll until the session's latest job ends (tests and benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.job(session_id)
            if job is None or not job.alive:
                return job
            if deadline is not None and time.monotonic() > deadline:
                return job
            time.sleep(0.1)


class SessionWatch:
    """Which sessions changed, heard on one ``LISTEN`` connection per process (a thread that
    starts on first use): appending an event or moving a job notifies
    :data:`~haytham.storage.postgres.EVENTS_CHANNEL` with the session's id. :meth:`version` is
    ``None`` while not listening (then nothing may be trusted to be current)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._guard = threading.Lock()
        self._versions: dict[str, int] = {}
        self._epoch = 0  # every reconnection: anything heard before may have been missed
        self._listening = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def version(self, session_id: str) -> tuple[int, int] | None:
        """How often the session changed since the watch began (with the connection's epoch),
        or ``None`` while not listening: the caller must then read the session itself."""
        with self._guard:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="haytham-session-watch", daemon=True
                )
                self._thread.start()
            if not self._listening:
                return None
            return self._epoch, self._versions.get(session_id, 0)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self.url, autocommit=True, connect_timeout=10, application_name="haytham-watch"
                ) as conn:
                    conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    with self._guard:
                        self._epoch += 1
                        self._listening = True
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            with self._guard:
                                sid = note.payload
                                self._versions[sid] = self._versions.get(sid, 0) + 1
                        conn.execute("SELECT 1")  # a dead connection shows here, not never
            except psycopg.Error as exc:
                with self._guard:
                    was = self._listening
                if was or self._epoch == 0:  # once per outage, not once a second
                    log.warning("not following session changes for now: %s", exc)
            with self._guard:
                self._listening = False
                self._epoch = max(self._epoch, 1)
            self._stop.wait(1.0)

    def close(self) -> None:
        """Stop the watch (its thread ends within a second)."""
        self._stop.set()


def count_live_workers(db: Database) -> int:
    """Workers on the database that sent a heartbeat within the stalled timeout."""

    def work(cur: Any) -> int:
        cur.execute(
            "SELECT count(*) FROM procrastinate_workers "
            "WHERE last_heartbeat > now() - make_interval(secs => %s)",
            (STALLED_AFTER_S,),
        )
        return int(cur.fetchone()[0])

    return db.run(work)


def _seconds(at: datetime | None) -> float:
    return at.timestamp() if at is not None else time.time()


async def _sweep(
    app: procrastinate.App, store: PgStore, every: float, stalled_after: float
) -> None:
    """Put the jobs of workers that stopped beating back in the queue, once nobody holds their
    session's lock: a worker that is only slow (paused, swapping) still holds it and keeps its
    job, so a live run is never started twice. After the server (re)started, or while this
    worker could not reach it, every worker was silent and every lock forgotten: nothing is
    called lost until ``stalled_after`` seconds of a reachable database have passed."""
    calm_since, faults = time.monotonic(), store.db.faults
    while True:
        try:
            up = await asyncio.to_thread(_server_up_for, store.db)
            if store.db.faults != faults:  # this process met the database away meanwhile
                calm_since, faults = time.monotonic(), store.db.faults
            if up >= stalled_after and time.monotonic() - calm_since >= stalled_after:
                for job in await app.job_manager.get_stalled_jobs(
                    task_name=TASK, seconds_since_heartbeat=stalled_after
                ):
                    session = str(job.lock or "")
                    held: bool = bool(session) and await asyncio.to_thread(_held, store, session)
                    if held:
                        continue
                    log.warning(
                        "job %s (session %s) lost its worker: queued again", job.id, session
                    )
                    await app.job_manager.retry_job(job)
        except (pexc.ProcrastinateException, HaythamError, psycopg.Error) as exc:  # away
            calm_since = time.monotonic()
            log.warning("could not look for stalled jobs: %s", exc)
        await asyncio.sleep(every)


def _server_up_for(db: Database) -> float:
    """Seconds since the database server started (a restart forgets heartbeats and locks)."""

    def work(cur: Any) -> float:
        cur.execute("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")
        return float(cur.fetchone()[0])

    return db.run(work)


def _held(store: PgStore, session_id: str) -> bool:
    """Whether some process still holds the session's lock (a deleted session holds none)."""
    try:
        return store.open(session_id).is_busy()
    except SessionNotFound:
        return False


def run_worker(
    service: Haytham,
    *,
    concurrency: int,
    name: str | None = None,
    heartbeat: float = HEARTBEAT_S,
    stalled_after: float = STALLED_AFTER_S,
) -> None:
    """``haytham worker``: take jobs until SIGINT/SIGTERM (running jobs finish first)."""
    store = service.store
    if not isinstance(store, PgStore):
        raise HaythamError(
            "`haytham worker` runs sessions for a team deployment: set HAYTHAM_DATABASE_URL "
            "(see docs/deploy.md). On one machine, `haytham run` and the app need no worker."
        )
    app = queue_app(store.db.url)
    migrate_queue(app, store.db.url)
    worker_name = name or f"{socket.gethostname()}-{os.getpid()}"
    if isinstance(app.job_manager, ResilientJobManager):
        app.job_manager.worker_name = worker_name
    print(
        f"worker {worker_name}: taking up to {concurrency} session(s) at once from "
        f"{store.location} (Ctrl-C or SIGTERM stops it once its running jobs end)",
        file=sys.stderr,
        flush=True,
    )

    async def main() -> None:
        async with app.open_async():
            sweeper = asyncio.create_task(_sweep(app, store, SWEEP_S, stalled_after))
            try:
                await app.run_worker_async(
                    queues=[QUEUE],
                    concurrency=concurrency,
                    name=worker_name,
                    additional_context={"service": service},
                    update_heartbeat_interval=heartbeat,
                    stalled_worker_timeout=stalled_after,
                    fetch_job_polling_interval=1.0,
                    delete_jobs="never",
                )
            finally:
                sweeper.cancel()

    asyncio.run(main())
