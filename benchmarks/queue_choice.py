"""Job queue choice for the team deployment: procrastinate (PostgreSQL) against Celery + Redis.

Haytham's team mode runs sessions as jobs on procrastinate, whose queue lives in the PostgreSQL
database the sessions are already in (haytham/runs/queue.py). This benchmark measures the two
engines on this machine, over loopback, with the same trivial job body, so the choice rests on
numbers rather than taste:

1. **Pickup latency**: a worker is idle and waiting; ``--jobs`` trivial jobs are enqueued one at
   a time (the next one after the previous has run and the worker is idle again, plus 0.1 s);
   latency = the job body's first line minus the moment just before the enqueue call (both
   ``time.time()`` on this machine). One warm-up job is not counted. p50 / p95 / max in ms.
2. **A worker lost mid-job**: two workers run; one job whose body sleeps 30 s (a long model
   stage) is enqueued; once it has started in one worker (A), A's whole process group is
   SIGKILLed (a lost machine or container; Celery's pool child dies with it). Measured: seconds
   from the kill until the job body starts again in the other worker (B), capped at 120 s.
   A second run of each setting kills nothing and counts how many times the 30 s body started
   within 45 s of the enqueue, and how many of those starts began while an earlier copy was
   still running (the job delivered twice at once).

   - procrastinate, as Haytham configures it: ``update_heartbeat_interval=2``,
     ``stalled_worker_timeout=10``, ``fetch_job_polling_interval=1``, and in each worker a
     sweeper that every 2 s puts the jobs of workers silent for 10 s back in the queue
     (``get_stalled_jobs`` + ``retry_job``, as ``haytham.runs.queue._sweep``). The job stays
     ``doing`` while it runs: late ack is inherent.
   - Celery + Redis: ``task_acks_late=True``, ``task_reject_on_worker_lost=True``,
     ``worker_prefetch_multiplier=1``, prefork pool with one child; with the default
     ``visibility_timeout`` (3600 s), with ``visibility_timeout=20`` (shorter than the 30 s
     job), and with 20 s plus kombu's restore scan every 2 s instead of its default ~100 s
     (``unacked_restore_interval=2``, ``unacked_restore_throttle=1``): an unacknowledged
     message is handed out again only when some worker's scan finds it older than the
     visibility timeout. One more Celery row SIGKILLs only the pool child (the worker's main
     process lives), the case ``task_reject_on_worker_lost`` is for.

   These runs mostly wait, so they run side by side: each on its own procrastinate queue
   (sweepers look at their own queue only) or its own Redis database (the visibility timeout
   is a client setting, so settings must not share a database).
3. **Extra services** each engine needs besides what Haytham's team mode already runs.

Workers are subprocesses of this file (``--worker procrastinate|celery``); job bodies append one
JSON line per start (worker, pid, time) to a per-run file, flushed and fsynced. procrastinate
uses a throwaway database ``haytham_qbench_<hex>`` (dropped WITH (FORCE) at the end, also on a
failure or Ctrl-C); Celery uses a ``redis-server`` started on a free loopback port and stopped
at the end. Defaults take about 3 minutes.

    .venv/bin/python benchmarks/queue_choice.py [--jobs 50] [--skip-celery]
        [--admin-url postgresql://haytham:PASSWORD@127.0.0.1:5432/postgres]

Celery rows need ``apt-get install redis-server`` and ``.venv/bin/pip install "celery[redis]"``
(benchmark-only; not project dependencies). Without them those rows are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # scratch.py, also when run with runpy

import scratch as bench  # noqa: E402

ADMIN_URL = bench.default_admin_url()  # make services's server (.services.env)
P_TASK = "qbench.job"
C_TASK = "qbench.job"
LONG_S = 30.0  # the long job's body
CAP_S = 120.0  # longest wait for the job to start again after the kill
WINDOW_S = 45.0  # no-kill runs: count the starts of the long job in this window
# Haytham's settings (haytham/runs/queue.py)
HEARTBEAT_S = 2.0
STALLED_AFTER_S = 10.0
SWEEP_S = 2.0
POLLING_S = 1.0

# broker_transport_options of the Celery rows: (label, options, note). kombu 5.7 looks for
# expired unacknowledged messages every unacked_restore_interval (10 s) x
# unacked_restore_throttle (10) = ~100 s by default; the third row scans every 2 s, as its
# docs advise for a low visibility_timeout.
CELERY_SETTINGS: list[tuple[str, dict[str, int], str]] = [
    ("visibility_timeout 3600 (default)", {}, ""),
    (
        "visibility_timeout 20",
        {"visibility_timeout": 20},
        "kombu's restore scan: every ~100 s by default (10 s x throttle 10)",
    ),
    (
        "visibility_timeout 20, restore scan every 2 s",
        {"visibility_timeout": 20, "unacked_restore_interval": 2, "unacked_restore_throttle": 1},
        "",
    ),
]

# set in a worker process (inherited by Celery's forked pool child)
EVENTS: Path | None = None
WORKER = ""


# --- the job body and its events --------------------------------------------------------------


def emit(kind: str, key: str = "") -> None:
    """Append one event line to this worker's events file, flushed and fsynced."""
    assert EVENTS is not None
    line = json.dumps(
        {"kind": kind, "key": key, "worker": WORKER, "pid": os.getpid(), "t": time.time()}
    )
    with open(EVENTS, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def job_body(key: str, sleep_s: float) -> None:
    """The job: say it started, then sleep (0 for the pickup jobs, 30 s for the long one)."""
    emit("start", key)
    time.sleep(sleep_s)


class Events:
    """The parent's view of one events file: read the lines appended since the last look."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.touch()
        self.offset = 0
        self.seen: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        with open(self.path, encoding="utf-8") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind("\n") + 1]  # a half-written line waits for next time
        self.offset += len(complete.encode("utf-8"))
        self.seen.extend(json.loads(line) for line in complete.splitlines() if line)
        return self.seen

    def wait(
        self, match: Callable[[dict[str, Any]], bool], timeout: float, every: float = 0.002
    ) -> dict[str, Any] | None:
        """The first event that matches, waiting up to ``timeout`` seconds (None: not seen)."""
        deadline = time.monotonic() + timeout
        while True:
            found = next((e for e in self.poll() if match(e)), None)
            if found is not None or time.monotonic() > deadline:
                return found
            time.sleep(every)

    def starts(self, key: str) -> list[dict[str, Any]]:
        return [e for e in self.poll() if e["kind"] == "start" and e["key"] == key]


# --- worker processes (entry points of this file) --------------------------------------------


def procrastinate_app(url: str) -> Any:
    import procrastinate

    # its warning that the tasks live in __main__: they have explicit names, so that is fine
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    app.task(name=P_TASK)(job_body)
    return app


def run_procrastinate_worker(url: str, queue: str) -> None:
    """A worker as ``haytham.runs.queue.run_worker`` runs one, on this benchmark's queue."""
    from procrastinate import exceptions as pexc

    app = procrastinate_app(url)

    async def sweep() -> None:  # haytham.runs.queue._sweep, limited to this run's queue
        while True:
            try:
                for job in await app.job_manager.get_stalled_jobs(
                    task_name=P_TASK, queue=queue, seconds_since_heartbeat=STALLED_AFTER_S
                ):
                    await app.job_manager.retry_job(job)
            except pexc.ProcrastinateException as exc:
                print(f"could not look for stalled jobs: {exc}", file=sys.stderr)
            await asyncio.sleep(SWEEP_S)

    async def main() -> None:
        async with app.open_async():
            sweeper = asyncio.create_task(sweep())
            emit("ready")
            try:
                await app.run_worker_async(
                    queues=[queue],
                    concurrency=1,
                    name=WORKER,
                    update_heartbeat_interval=HEARTBEAT_S,
                    stalled_worker_timeout=STALLED_AFTER_S,
                    fetch_job_polling_interval=POLLING_S,
                    delete_jobs="never",
                )
            finally:
                sweeper.cancel()

    asyncio.run(main())


def celery_app(broker: str, transport: dict[str, int]) -> Any:
    from celery import Celery

    app = Celery("qbench", broker=broker)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    if transport:
        app.conf.broker_transport_options = transport
    app.task(name=C_TASK)(job_body)
    return app


def run_celery_worker(broker: str, transport: dict[str, int], queue: str) -> None:
    from celery.signals import worker_ready

    app = celery_app(broker, transport)
    worker_ready.connect(lambda **_: emit("ready"), weak=False)
    app.worker_main(
        [
            "worker",
            "--pool=prefork",
            "--concurrency=1",
            f"--hostname={WORKER}@qbench",
            f"--queues={queue}",
            "--loglevel=WARNING",
            "--without-gossip",  # worker-to-worker chatter: no part of delivery or redelivery
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


# --- the parent: workers, enqueueing, measurements -------------------------------------------


@dataclass
class Engine:
    """How to start a worker of one engine/setting and how to enqueue a job on it."""

    label: str
    worker_args: list[str]
    enqueue: Callable[[str, float], None]
    close: Callable[[], None] = lambda: None


@dataclass
class Workers:
    scratch: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, engine: Engine, name: str, events: Path) -> None:
        log = open(self.scratch / f"{name}.log", "wb")  # noqa: SIM115 - the child holds it
        self.procs[name] = subprocess.Popen(
            [sys.executable, __file__, *engine.worker_args, "--name", name, "--events", events],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a kill takes its children too
            cwd=ROOT,
        )
        log.close()

    def kill(self, name: str) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        # a Celery pool child that outlived its killed parent
        for proc in self.procs.values():
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def wait_ready(events: Events, names: list[str], timeout: float = 60.0) -> None:
    for name in names:
        if (
            events.wait(lambda e, n=name: e["kind"] == "ready" and e["worker"] == n, timeout)
            is None
        ):
            raise RuntimeError(f"worker {name} did not get ready in {timeout:.0f} s")
    time.sleep(1.0)  # past "ready": listening / consuming


def pickup(engine: Engine, workers: Workers, scratch: Path, jobs: int, tag: str) -> list[float]:
    """Milliseconds from enqueue to body start for ``jobs`` jobs, one at a time, idle worker."""
    events = Events(scratch / f"{tag}-pickup.jsonl")
    name = f"{tag}-pickup"
    workers.start(engine, name, events.path)
    wait_ready(events, [name])
    latencies: list[float] = []
    for i in range(jobs + 1):  # job 0 warms up connections and is not counted
        key = f"p{i}"
        t0 = time.time()
        engine.enqueue(key, 0.0)
        started = events.wait(lambda e, k=key: e["kind"] == "start" and e["key"] == k, 30.0)
        if started is None:
            raise RuntimeError(f"{engine.label}: pickup job {i} did not start in 30 s")
        if i:
            latencies.append((started["t"] - t0) * 1000)
        time.sleep(0.1)  # the job has returned, the worker is idle and waiting again
    workers.stop_all()
    return latencies


@dataclass
class Recovery:
    label: str
    restart_s: float | None = None  # kill -> body starts again (None: not within CAP_S)
    restarted_in: str = ""
    starts_no_kill: list[float] | None = None  # the long job's starts in WINDOW_S, no kill
    note: str = ""


@contextmanager
def long_job(engine: Engine, scratch: Path, run: str) -> Iterator[tuple[Events, Workers]]:
    """Workers ``<run>-A`` and ``<run>-B`` ready, then the 30 s job enqueued; both workers are
    stopped on exit. Their events go to ``<run>.jsonl``."""
    events = Events(scratch / f"{run}.jsonl")
    workers = Workers(scratch)
    names = [f"{run}-A", f"{run}-B"]
    try:
        for name in names:
            workers.start(engine, name, events.path)
        wait_ready(events, names)
        engine.enqueue("long", LONG_S)
        yield events, workers
    finally:
        workers.stop_all()


def lost_worker(
    engine: Engine, scratch: Path, tag: str, *, child_only: bool = False
) -> tuple[float | None, str]:
    """Kill the worker running the 30 s job; seconds until the job starts again elsewhere."""
    with long_job(engine, scratch, f"{tag}-kill") as (events, workers):
        first = events.wait(lambda e: e["kind"] == "start" and e["key"] == "long", 30.0)
        if first is None:
            raise RuntimeError(f"{engine.label}: the long job did not start in 30 s")
        killed_at = time.time()
        if child_only:  # Celery's pool child only; the worker's main process lives on
            os.kill(first["pid"], signal.SIGKILL)
        else:
            workers.kill(first["worker"])
        again = events.wait(
            lambda e: e["kind"] == "start" and e["key"] == "long" and e["t"] > killed_at, CAP_S
        )
        if again is None:
            return None, ""
        where = "same worker, new child" if again["worker"] == first["worker"] else "worker B"
        return again["t"] - killed_at, where


def no_kill(engine: Engine, scratch: Path, tag: str) -> list[float]:
    """Start times of the 30 s job within 45 s of its enqueue, two workers, nothing killed."""
    with long_job(engine, scratch, f"{tag}-nokill") as (events, _):
        time.sleep(WINDOW_S)
        return sorted(e["t"] for e in events.starts("long"))


# --- engines ----------------------------------------------------------------------------------


def procrastinate_engine(url: str, queue: str) -> Engine:
    app = procrastinate_app(url)
    app.open()
    task = app.configure_task(P_TASK, queue=queue)

    def enqueue(key: str, sleep_s: float) -> None:
        task.defer(key=key, sleep_s=sleep_s)

    return Engine(
        label="procrastinate",
        worker_args=["--worker", "procrastinate", "--url", url, "--queue", queue],
        enqueue=enqueue,
        close=app.close,
    )


def celery_engine(broker: str, transport: dict[str, int]) -> Engine:
    app = celery_app(broker, transport)
    extra = ["--transport", json.dumps(transport)]

    def enqueue(key: str, sleep_s: float) -> None:
        app.send_task(C_TASK, args=[key, sleep_s], queue="qbench")

    return Engine(
        label="celery",
        worker_args=["--worker", "celery", "--url", broker, "--queue", "qbench", *extra],
        enqueue=enqueue,
        close=app.close,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(scratch: Path) -> Iterator[int]:
    port = free_port()
    log = open(scratch / "redis.log", "wb")  # noqa: SIM115 - the child holds it
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--daemonize", "no"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield port
    finally:
        bench.stop_processes([proc], timeout=10.0)


@contextmanager
def throwaway_database(admin_url: str) -> Iterator[str]:
    """A scratch database ``haytham_qbench_<hex>`` with procrastinate's schema; dropped on exit."""
    with bench.scratch_database(admin_url, "haytham_qbench") as url:
        app = procrastinate_app(url)
        with app.open():
            app.schema_manager.apply_schema()
        yield url


def celery_missing() -> str | None:
    """Why the Celery rows cannot run here (None: they can)."""
    try:
        import celery  # noqa: F401
        import redis  # noqa: F401
    except ImportError:
        return "celery[redis] is not installed in this Python"
    if shutil.which("redis-server") is None:
        return "redis-server is not on PATH"
    return None


# --- report -----------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


@dataclass
class Plan:
    """One setting of the lost-worker runs: the engine to kill a worker of, the engine (on its
    own queue / Redis database) for the no-kill count, and whether only a pool child dies."""

    result: Recovery
    kill: Engine
    no_kill: Engine | None
    child_only: bool = False


def recovery_runs(plans: list[Plan], scratch: Path) -> list[Recovery]:
    """The lost-worker and no-kill runs of every setting, side by side (they mostly wait)."""
    with ThreadPoolExecutor(max_workers=2 * len(plans)) as pool:
        running = [
            (
                plan,
                pool.submit(lost_worker, plan.kill, scratch, f"r{i}", child_only=plan.child_only),
                pool.submit(no_kill, plan.no_kill, scratch, f"r{i}") if plan.no_kill else None,
            )
            for i, plan in enumerate(plans)
        ]
        for plan, killed, untouched in running:
            plan.result.restart_s, plan.result.restarted_in = killed.result()
            plan.result.starts_no_kill = untouched.result() if untouched else None
    return [plan.result for plan in plans]


def run(args: argparse.Namespace, scratch: Path) -> tuple[dict[str, list[float]], list[Recovery]]:
    pickups: dict[str, list[float]] = {}
    skip = "--skip-celery given" if args.skip_celery else celery_missing()
    with ExitStack() as stack:
        url = stack.enter_context(throwaway_database(args.admin_url))

        def engine(made: Engine) -> Engine:
            stack.callback(made.close)
            return made

        print(f"pickup latency: procrastinate, {args.jobs} jobs ...", flush=True)
        pickups["procrastinate (LISTEN/NOTIFY, polling 1 s)"] = pickup(
            engine(procrastinate_engine(url, "pickup")), Workers(scratch), scratch, args.jobs, "pg"
        )
        plans = [
            Plan(
                Recovery("procrastinate, heartbeat 2 s, stalled 10 s, sweep 2 s"),
                engine(procrastinate_engine(url, "kill")),
                engine(procrastinate_engine(url, "nokill")),
            )
        ]
        if skip is None:
            broker = f"redis://127.0.0.1:{stack.enter_context(redis_server(scratch))}"
            print(f"pickup latency: celery, {args.jobs} jobs ...", flush=True)
            pickups["celery + redis (prefork, 1 child)"] = pickup(
                engine(celery_engine(f"{broker}/0", {})),
                Workers(scratch),
                scratch,
                args.jobs,
                "redis",
            )
            for db, (label, transport, note) in enumerate(CELERY_SETTINGS):
                plans.append(
                    Plan(
                        Recovery(f"celery, {label}", note=note),
                        engine(celery_engine(f"{broker}/{2 * db + 1}", transport)),
                        engine(celery_engine(f"{broker}/{2 * db + 2}", transport)),
                    )
                )
            plans.append(
                Plan(
                    Recovery(
                        "celery, visibility_timeout 3600, only the pool child killed",
                        note="the main process lives and requeues the job "
                        "(task_reject_on_worker_lost)",
                    ),
                    engine(celery_engine(f"{broker}/{2 * len(CELERY_SETTINGS) + 1}", {})),
                    None,
                    child_only=True,
                )
            )
        print(
            f"lost worker and duplicate runs: {len(plans)} settings side by side, up to "
            f"{CAP_S:.0f} s ...",
            flush=True,
        )
        recoveries = recovery_runs(plans, scratch)
    if skip is not None:
        print(
            f"Celery rows skipped ({skip}); to run them: apt-get install -y redis-server && "
            '.venv/bin/pip install "celery[redis]"'
        )
    return pickups, recoveries


def _starts(times: list[float]) -> str:
    """``n`` starts, ``n (k at once)`` when k of them began while an earlier copy still ran."""
    at_once = sum(
        any(earlier <= t < earlier + LONG_S for earlier in times[:i]) for i, t in enumerate(times)
    )
    return f"{len(times)} ({at_once} at once)" if at_once else str(len(times))


def report(pickups: dict[str, list[float]], recoveries: list[Recovery]) -> None:
    print("\npickup latency: enqueue -> job body starts, idle worker, ms")
    print(f"{'engine':<44} {'jobs':>4} {'p50':>7} {'p95':>7} {'max':>7}")
    for label, values in pickups.items():
        print(
            f"{label:<44} {len(values):>4} {statistics.median(values):>7.1f} "
            f"{p95(values):>7.1f} {max(values):>7.1f}"
        )
    print(
        f"\nworker SIGKILLed while running a {LONG_S:.0f} s job (2 workers): kill -> job starts "
        f"again (waited up to {CAP_S:.0f} s); and starts of the job within {WINDOW_S:.0f} s "
        "when nothing is killed"
    )
    print(
        f"{'engine / setting':<60} {'restart after':>16} {'ran again':>9} {'starts, no kill':>15}"
    )
    for r in recoveries:
        after = f"not within {CAP_S:.0f} s" if r.restart_s is None else f"{r.restart_s:.1f} s"
        ran = "no" if r.restart_s is None else "yes"
        starts = "-" if r.starts_no_kill is None else _starts(r.starts_no_kill)
        print(f"{r.label:<60} {after:>16} {ran:>9} {starts:>15}")
        detail = [d for d in (r.restarted_in, r.note) if d]
        if detail:
            print(f"  ({'; '.join(detail)})")
    print(
        "\nextra services: procrastinate needs none beyond PostgreSQL (team mode runs it "
        "already); Celery needs a broker: a Redis server (or RabbitMQ)."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50, help="pickup-latency jobs per engine")
    parser.add_argument("--skip-celery", action="store_true", help="procrastinate rows only")
    parser.add_argument("--admin-url", default=ADMIN_URL, help="a database of a CREATEDB role")
    # internal: a worker process
    parser.add_argument("--worker", choices=["procrastinate", "celery"], help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--events", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--queue", help=argparse.SUPPRESS)
    parser.add_argument("--transport", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        global EVENTS, WORKER
        EVENTS, WORKER = Path(args.events), args.name
        if args.worker == "procrastinate":
            run_procrastinate_worker(args.url, args.queue)
        else:
            run_celery_worker(args.url, json.loads(args.transport), args.queue)
        return 0

    if args.jobs < 2:
        parser.error("--jobs must be at least 2")
    versions = [f"procrastinate {_version('procrastinate')}"]
    if not args.skip_celery and celery_missing() is None:
        redis_v = subprocess.run(
            ["redis-server", "--version"], capture_output=True, text=True
        ).stdout.split()
        versions += [
            f"celery {_version('celery')}",
            f"kombu {_version('kombu')}",
            next((w for w in redis_v if w.startswith("v=")), "v=?").replace("v=", "redis "),
        ]
    print(f"commit {bench.git_commit()}; {', '.join(versions)}; loopback, workers are subprocesses")
    # worker logs; a RuntimeError prints their tails and exits 1
    with bench.scratch_folder("haytham-qbench-", "*.log") as scratch:
        load_before = os.getloadavg()
        pickups, recoveries = run(args, scratch)
    load_after = os.getloadavg()
    report(pickups, recoveries)
    print(bench.load_line(load_before, load_after))
    return 0


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    raise SystemExit(main())
