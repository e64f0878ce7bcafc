"""Team deployment at incubator scale: many founders' sessions, many open Run pages.

**Load** (one throwaway database, ``haytham_load_<random>``, at the server's own
``max_connections``):

1. ``--stored`` sessions are in the database before the load starts: one real run to Gate 1
   (replay) and copies of it, row for row (files, events, stage times, Burr's state), so the
   pages that read "every session" have that many to read.
2. ``--workers`` ``haytham worker`` processes (``--concurrency`` sessions each) and two app
   instances (processes of this script in viewer mode, each with its own service and
   :class:`haytham.runs.queue.QueuedRuns`, as a Streamlit server has) start. ``--viewers`` simulated
   viewers, split between the two instances, each keep one new session's Run page open: every
   second they do what the page's refreshing part does (the snapshot of job, status and stage
   running, the estimates, the worker count while queued), timed.
3. ``--sessions`` new sessions (the Power of 8 idea, replay, ``--latency`` s per model call) are
   enqueued at once; the benchmark waits until each reached Gate 1.

Reported: failed sessions (not at Gate 1, or a failed job), sessions/s, p50 / p95 time to
Gate 1 (enqueue to job end), p95 of the viewers' refreshes, p95 of a whole Run page drawn by
Streamlit (``AppTest``, ``--renders`` times, after the load, with all the stored sessions),
the database's transactions per second during the load (``pg_stat_database``; nearly every
statement is its own transaction), and the peak number of connections to the database
(sampled every 0.5 s) against ``max_connections``.

**CPU-bound** (``--cpu-sessions``, 0 skips it): the same sessions with the embedding checks on
and no model latency, through 1 and then 2 worker processes (``--concurrency 1``), so what is
measured is the work of the workers themselves: sessions/s and the speed-up from 1 to 2.

    .venv/bin/python benchmarks/team_load.py [--sessions 100] [--stored 500] [--workers 4]
        [--concurrency 2] [--viewers 50] [--latency 0.5] [--renders 20] [--cpu-sessions 12]
        [--cpu-rounds 3] [--skip-load]
        [--admin-url postgresql://haytham:PASSWORD@127.0.0.1:5432/postgres]

Targets (issue 31): no failed session, peak connections <= 50 % of ``max_connections``, p95 Run
page <= 1 s with 500 stored sessions, >= 1.6x sessions/s from 1 to 2 workers on the CPU-bound
variant. The report ends with the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # scratch.py, also when run with runpy

import scratch as bench  # noqa: E402

HAYTHAM = Path(sys.executable).parent / "haytham"
CASSETTE = ROOT / "tests/fixtures/cassettes/power_of_8/full"  # stages + passing verifiers
IDEA = (ROOT / "tests/fixtures/ideas/power_of_8.md").read_text(encoding="utf-8")
ADMIN_URL = bench.default_admin_url()  # make services's server (.services.env)


def environment(url: str, latency: float, embeddings: bool) -> dict[str, str]:
    """The settings of every process of the deployment under test."""
    return {
        **os.environ,
        "HAYTHAM_DATABASE_URL": url,
        "HAYTHAM_PROVIDER": "replay",
        "HAYTHAM_CASSETTE": str(CASSETTE),
        "HAYTHAM_REPLAY_LATENCY": str(latency),
        "HAYTHAM_RETRY_DELAY": "0",
        "HAYTHAM_INTAKE": "off",
        "HAYTHAM_EMBEDDINGS": "on" if embeddings else "off",
        "HAYTHAM_PROVIDER_CONCURRENCY": "64",  # the provider limit is not what is measured
        "PYTHONPATH": str(ROOT),
    }


def use(env: dict[str, str]) -> None:
    """Make this process read ``env``'s Haytham settings (the service it builds)."""
    for key, value in env.items():
        if key.startswith("HAYTHAM_"):
            os.environ[key] = value


def service() -> Any:
    from haytham.app import make_runs, make_service
    from haytham.config import load_settings

    svc = make_service(load_settings(), tracking=False)
    return svc, make_runs(svc)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


# -- stored sessions ---------------------------------------------------------------------------
CLONE = (
    "INSERT INTO haytham_sessions (session_id, created_at, updated_at, provider, called) "
    "SELECT 'stored-' || n, created_at, updated_at - n * interval '1 minute', provider, called "
    "FROM haytham_sessions, generate_series(1, %(n)s) n WHERE session_id = %(sid)s",
    "INSERT INTO haytham_files (session_id, path, content) SELECT 'stored-' || n, path, "
    "content FROM haytham_files, generate_series(1, %(n)s) n WHERE session_id = %(sid)s",
    "INSERT INTO haytham_events (session_id, line) SELECT 'stored-' || n, line "
    "FROM haytham_events, generate_series(1, %(n)s) n WHERE session_id = %(sid)s ORDER BY n, id",
    "INSERT INTO haytham_stage_times (session_id, stage, wall_s) SELECT 'stored-' || n, stage, "
    "wall_s FROM haytham_stage_times, generate_series(1, %(n)s) n WHERE session_id = %(sid)s",
    "INSERT INTO burr_state (partition_key, app_id, sequence_id, position, status, state, "
    "created_at) SELECT partition_key, 'stored-' || n, sequence_id, position, status, state, "
    "created_at FROM burr_state, generate_series(1, %(n)s) n WHERE app_id = %(sid)s",
)


def query_cost(url: str, count: int = 300) -> str:
    """A trivial statement through the store's pool, against one on a new connection each."""
    import psycopg

    from haytham.storage.postgres import Database

    db = Database(url)
    db.run(lambda cur: cur.execute("SELECT 1"))
    began = time.perf_counter()
    for _ in range(count):
        db.run(lambda cur: cur.execute("SELECT 1"))
    pooled = (time.perf_counter() - began) / count
    db.close()
    began = time.perf_counter()
    for _ in range(count // 10):
        with psycopg.connect(url) as conn:
            conn.execute("SELECT 1")
    fresh = (time.perf_counter() - began) / (count // 10)
    return (
        f"a trivial statement: {pooled * 1000:.2f} ms through the pool, "
        f"{fresh * 1000:.1f} ms on a new connection each ({fresh / pooled:.0f}x)"
    )


def store_sessions(url: str, count: int) -> None:
    """``count`` finished-to-Gate-1 sessions in the database: one real run, then copies."""
    import psycopg

    svc, runs = service()
    try:
        sid = svc.create_session(IDEA)
        svc.run(sid)
    finally:
        runs.close()
        svc.store.close()
    with psycopg.connect(url) as conn:
        for sql in CLONE:
            conn.execute(sql, {"n": count - 1, "sid": sid})
        conn.execute("ANALYZE")


# -- viewers (an app instance each) ------------------------------------------------------------
def viewer_mode(args: argparse.Namespace) -> int:
    """An app instance with ``--viewers`` open Run pages, until ``args.stop`` exists; writes
    each refresh's seconds to ``args.out``."""
    from haytham.runs.worker import Job

    svc, runs = service()
    sids = json.loads(Path(args.sessions_file).read_text())
    times: list[float] = []
    guard = threading.Lock()
    stop = Path(args.stop)
    statements = [0]  # every statement this app instance sends through the store's pool
    counted = svc.store.db.run

    def run(work: Any) -> Any:
        with guard:
            statements[0] += 1
        return counted(work)

    svc.store.db.run = run

    def viewer(sid: str) -> None:
        while not stop.exists():
            began = time.perf_counter()
            job, status, _running = runs.view(sid, lambda: svc.status(sid))
            runs.estimates(exclude=sid)
            if isinstance(job, Job) and job.state == "queued":
                runs.live_workers()
            with guard:
                times.append(time.perf_counter() - began)
            time.sleep(max(0.0, 1.0 - (time.perf_counter() - began)))

    runs.estimates()  # connected and ready: the load may start
    Path(args.out + ".ready").write_text("ready")
    threads = [
        threading.Thread(target=viewer, args=(sids[n % len(sids)],), daemon=True)
        for n in range(args.viewers)
    ]
    for t in threads:
        t.start()
    began = time.monotonic()
    for t in threads:
        t.join()
    per_viewer_s = statements[0] / max(1, args.viewers) / (time.monotonic() - began)
    Path(args.out).write_text(json.dumps({"times": times, "per_viewer_s": per_viewer_s}))
    runs.close()
    return 0


def run_page_renders(sid: str, count: int) -> list[float]:
    """Seconds to draw the whole Run page of ``sid`` in Streamlit (``AppTest``), ``count``
    times after a first draw that fills the app's caches."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "frontend_streamlit/app.py"), default_timeout=120)
    at.query_params["session"] = sid
    at.run()
    at.switch_page("views/run.py")
    at.query_params["session"] = sid
    at.run()
    if at.exception:
        raise RuntimeError(f"the Run page failed: {at.exception[0].message}")
    out = []
    for _ in range(count):
        began = time.perf_counter()
        at.run()
        out.append(time.perf_counter() - began)
    return out


# -- the load ----------------------------------------------------------------------------------
class Sampler(threading.Thread):
    """Connections to the database under test, every 0.5 s (the peak is kept)."""

    def __init__(self, admin_url: str, name: str) -> None:
        super().__init__(daemon=True)
        self.admin_url, self.name_ = admin_url, name
        self.peak = 0
        self.at_peak: dict[str, int] = {}  # connections by kind of process at the peak
        self.done = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            while not self.done.is_set():
                rows = conn.execute(
                    "SELECT application_name, count(*) FROM pg_stat_activity "
                    "WHERE datname = %s GROUP BY 1",
                    (self.name_,),
                ).fetchall()
                total = sum(int(n) for _, n in rows)
                if total > self.peak:
                    self.peak = total
                    kinds: dict[str, int] = {}
                    for app, n in rows:
                        kind = str(app).split(" pid ")[0].split(" ")[0] or "other"
                        kinds[kind] = kinds.get(kind, 0) + int(n)
                    self.at_peak = kinds
                self.done.wait(0.5)


def transactions(admin_url: str, name: str) -> int:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
    return int(row[0])


def start_workers(
    count: int, concurrency: int, env: dict[str, str], logs: Path, tag: str
) -> list[subprocess.Popen[bytes]]:
    procs = []
    for n in range(count):
        with (logs / f"worker-{tag}-{n}.log").open("wb") as log:
            procs.append(
                subprocess.Popen(
                    [
                        str(HAYTHAM),
                        "worker",
                        "--name",
                        f"{tag}-{n}",
                        "--concurrency",
                        str(concurrency),
                    ],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    return procs


def run_sessions(runs: Any, svc: Any, count: int, timeout: float) -> tuple[dict, dict, dict]:
    """Create and enqueue ``count`` sessions at once; wait for each. (enqueued, ended, bad)"""
    sids = [svc.create_session(IDEA) for _ in range(count)]
    enqueued: dict[str, float] = {}
    for sid in sids:
        enqueued[sid] = time.time()
        runs.run(sid)
    ended: dict[str, float] = {}
    bad: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    for sid in sids:
        job = runs.wait(sid, timeout=max(1.0, deadline - time.monotonic()))
        if job is None or job.ended_at is None or job.state != "finished":
            bad[sid] = f"job {job.state if job else 'missing'}"
            continue
        ended[sid] = job.ended_at
        status = svc.status(sid)["status"]
        if status != "waiting_gate_1":
            bad[sid] = status
    return enqueued, ended, bad


def load(args: argparse.Namespace, logs: Path) -> list[str]:
    import psycopg

    lines = []
    with bench.scratch_database(args.admin_url, "haytham_load") as url:
        name = url.rsplit("/", 1)[1]
        env = environment(url, args.latency, embeddings=False)
        use(environment(url, 0.0, embeddings=False))
        subprocess.run([str(HAYTHAM), "migrate"], env=env, check=True, stdout=subprocess.DEVNULL)
        lines.append(query_cost(url))
        began = time.monotonic()
        store_sessions(url, args.stored - args.sessions)
        lines.append(
            f"stored before the load: {args.stored - args.sessions} sessions at Gate 1 "
            f"({time.monotonic() - began:.0f} s to create)"
        )
        with psycopg.connect(url) as conn:
            limit = int(conn.execute("SHOW max_connections").fetchone()[0])
        use(env)
        workers = start_workers(args.workers, args.concurrency, env, logs, "load")
        viewers: list[subprocess.Popen[bytes]] = []
        stop = logs / "stop"
        sampler = Sampler(args.admin_url, name)
        try:
            bench.wait_for_workers(url, args.workers, workers)
            svc, runs = service()
            sids = [svc.create_session(IDEA) for _ in range(args.sessions)]
            (logs / "sessions.json").write_text(json.dumps(sids))
            for n in range(2):  # two app instances, half the viewers each
                share = args.viewers // 2 + (args.viewers % 2 if n == 0 else 0)
                with (logs / f"viewer-{n}.log").open("wb") as log:
                    viewers.append(
                        subprocess.Popen(
                            [
                                sys.executable,
                                __file__,
                                "--viewer-mode",
                                "--viewers",
                                str(share),
                                "--sessions-file",
                                str(logs / "sessions.json"),
                                "--stop",
                                str(stop),
                                "--out",
                                str(logs / f"viewer-{n}.json"),
                            ],
                            env=env,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        )
                    )
            deadline = time.monotonic() + 120
            while not all((logs / f"viewer-{n}.json.ready").exists() for n in range(2)):
                if time.monotonic() > deadline or any(v.poll() is not None for v in viewers):
                    raise RuntimeError("the viewers' app instances did not start")
                time.sleep(0.2)
            sampler.start()
            xacts = transactions(args.admin_url, name)
            began = time.time()
            enqueued: dict[str, float] = {}
            for sid in sids:
                enqueued[sid] = time.time()
                runs.run(sid)
            ended: dict[str, float] = {}
            bad: dict[str, str] = {}
            deadline = time.monotonic() + args.timeout
            for sid in sids:
                job = runs.wait(sid, timeout=max(1.0, deadline - time.monotonic()))
                if job is None or job.ended_at is None or job.state != "finished":
                    bad[sid] = f"job {job.state if job else 'missing'}"
                    continue
                ended[sid] = job.ended_at
            wall = time.time() - began
            xacts = transactions(args.admin_url, name) - xacts
            for sid in sids:
                if sid not in bad and (status := svc.status(sid)["status"]) != "waiting_gate_1":
                    bad[sid] = status
            stop.write_text("stop")
            for v in viewers:
                v.wait(60)
            sampler.done.set()
            refreshes: list[float] = []
            per_viewer: list[float] = []
            for n in range(2):
                found = json.loads((logs / f"viewer-{n}.json").read_text())
                refreshes += found["times"]
                per_viewer.append(found["per_viewer_s"])
            renders = run_page_renders(sids[0], args.renders)
            runs.close()
        finally:
            stop.write_text("stop")
            bench.stop_processes(viewers, timeout=30.0)
            bench.stop_processes(workers, timeout=15.0)
            sampler.done.set()
    if bad:
        shown = ", ".join(f"{k}: {v}" for k, v in list(bad.items())[:5])
        raise RuntimeError(f"{len(bad)} session(s) did not reach Gate 1: {shown}")
    to_gate = [ended[s] - enqueued[s] for s in sids]
    done_wall = max(ended.values()) - min(enqueued.values())
    lines += [
        f"load: {args.sessions} sessions enqueued at once, {args.workers} workers x "
        f"{args.concurrency}, replay {args.latency} s per call, {args.viewers} viewers "
        f"(2 app instances), {args.stored} sessions stored in all",
        f"  failed sessions: {len(bad)}",
        f"  sessions/s: {args.sessions / done_wall:.3f} ({done_wall:.1f} s wall)",
        f"  time to Gate 1: p50 {statistics.median(to_gate):.1f} s, p95 {pct(to_gate, 0.95):.1f} s",
        f"  viewer refreshes: {len(refreshes)}, p50 {statistics.median(refreshes) * 1000:.1f} ms, "
        f"p95 {pct(refreshes, 0.95) * 1000:.1f} ms, max {max(refreshes) * 1000:.0f} ms",
        f"  statements per open Run page: {statistics.mean(per_viewer):.2f}/s (each app "
        "instance's statements over its viewers and the load's duration)",
        f"  whole Run page (Streamlit AppTest, {args.stored} stored): p50 "
        f"{statistics.median(renders) * 1000:.0f} ms, p95 {pct(renders, 0.95) * 1000:.0f} ms",
        f"  database: {xacts / wall:.0f} transactions/s during the load; peak connections "
        f"{sampler.peak} of max_connections {limit} ({100 * sampler.peak / limit:.0f} %): "
        + ", ".join(f"{k} {n}" for k, n in sorted(sampler.at_peak.items())),
    ]
    return lines


def cpu_bound(args: argparse.Namespace, logs: Path) -> list[str]:
    rates: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    for count in (1, 2) * args.cpu_rounds:  # alternated: a shared machine's load moves
        with bench.scratch_database(args.admin_url, "haytham_cpu") as url:
            env = environment(url, 0.0, embeddings=True)
            subprocess.run(
                [str(HAYTHAM), "migrate"], env=env, check=True, stdout=subprocess.DEVNULL
            )
            use(environment(url, 0.0, embeddings=False))  # this process only enqueues
            procs = start_workers(count, 1, env, logs, f"cpu{count}")
            try:
                bench.wait_for_workers(url, count, procs)
                svc, runs = service()
                # a first session per worker loads each worker's embedding model: not measured
                warm = run_sessions(runs, svc, count, args.timeout)
                if warm[2]:
                    raise RuntimeError(f"warm-up sessions failed: {warm[2]}")
                enqueued, ended, bad = run_sessions(runs, svc, args.cpu_sessions, args.timeout)
                runs.close()
            finally:
                bench.stop_processes(procs, timeout=15.0)
        if bad:
            raise RuntimeError(f"CPU-bound, {count} worker(s): not at Gate 1: {bad}")
        wall = max(ended.values()) - min(enqueued.values())
        rates[count].append((args.cpu_sessions / wall, wall))
    one = statistics.median(r for r, _ in rates[1])
    two = statistics.median(r for r, _ in rates[2])
    return [
        f"CPU-bound: {args.cpu_sessions} sessions, embeddings on, no model latency, "
        f"--concurrency 1, after one warm-up session per worker; {args.cpu_rounds} round(s), "
        "1 and 2 workers alternated",
        *(
            f"  {n} worker(s): "
            + ", ".join(f"{r:.3f}/s ({w:.1f} s)" for r, w in rates[n])
            + f"; median {statistics.median(r for r, _ in rates[n]):.3f} sessions/s"
            for n in (1, 2)
        ),
        f"  speed-up 1 -> 2 workers (medians): {two / one:.2f}x (target >= 1.6x)",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--stored", type=int, default=500, help="sessions stored in all")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.5, help="replay seconds per call")
    parser.add_argument("--renders", type=int, default=20, help="whole Run pages drawn")
    parser.add_argument("--cpu-sessions", type=int, default=12, help="0 skips the CPU variant")
    parser.add_argument("--cpu-rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--admin-url", default=ADMIN_URL, help="a database of a CREATEDB role")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--viewer-mode", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sessions-file", help=argparse.SUPPRESS)
    parser.add_argument("--stop", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.viewer_mode:
        return viewer_mode(args)
    before = os.getloadavg()
    lines = [f"benchmarks/team_load.py on commit {bench.git_commit()}"]
    with bench.scratch_folder("haytham-load-", "*.log") as logs:
        if not args.skip_load:
            lines += load(args, logs)
        if args.cpu_sessions:
            lines += cpu_bound(args, logs)
    lines.append(bench.load_line(before, os.getloadavg()))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
