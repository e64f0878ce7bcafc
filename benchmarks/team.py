"""Team deployment: how session throughput scales with the number of queue workers.

For each worker count (default 1, 2 and 4) the benchmark creates a throwaway PostgreSQL
database (``haytham_bench_<random>``), runs ``haytham migrate`` on it, starts that many
``haytham worker`` processes (``--concurrency 1`` each by default), creates S sessions
(default 8) of the Power of 8 idea and enqueues them all at once through
``haytham.runs.queue.QueuedRuns``. Every worker runs its session to Gate 1 on the replay provider,
each model call taking ``--latency`` seconds (``HAYTHAM_REPLAY_LATENCY``, simulated provider
latency). ``HAYTHAM_PROVIDER_CONCURRENCY`` is set high (64) so the shared provider call slots do
not cap the scaling. Reported per configuration: wall seconds (first enqueue to last job end),
sessions/s, p50 / p95 time-to-Gate-1 (job end minus that session's enqueue time) and the speed-up
of sessions/s over 1 worker. Target: >= 1.7x from 1 to 2 workers. Every session must end
``waiting_gate_1``; otherwise the benchmark says which and exits 1. The database is dropped at
the end, also on a failure or Ctrl-C.

    .venv/bin/python benchmarks/team.py [--workers 1,2,4] [--sessions 8] [--concurrency 1]
        [--latency 1.0] [--admin-url postgresql://haytham:PASSWORD@127.0.0.1:5432/postgres]

Needs a PostgreSQL server whose role may CREATE DATABASE (``make services`` starts one), on
this machine: job end times come from the server's clock, enqueue times from this one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # scratch.py, also when run with runpy

import scratch as bench  # noqa: E402

from haytham.app import make_runs, make_service  # noqa: E402
from haytham.config import load_settings  # noqa: E402
from haytham.runs.queue import QueuedRuns  # noqa: E402

HAYTHAM = ROOT / ".venv/bin/haytham"
CASSETTE = ROOT / "tests/fixtures/cassettes/power_of_8/full"  # stages + passing verifiers
IDEA = (ROOT / "tests/fixtures/ideas/power_of_8.md").read_text(encoding="utf-8")
ADMIN_URL = bench.default_admin_url()  # make services's server (.services.env)
PROVIDER_CONCURRENCY = 64
TARGET = 1.7  # sessions/s speed-up from 1 to 2 workers


@dataclass
class Result:
    workers: int
    sessions: int
    wall_s: float
    to_gate_s: list[float]

    @property
    def rate(self) -> float:
        return self.sessions / self.wall_s

    def p95(self) -> float:
        lat = sorted(self.to_gate_s)
        return lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))]


def start_workers(count: int, concurrency: int, logs: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    for n in range(count):
        with (logs / f"worker-{n}.log").open("wb") as log:
            procs.append(
                subprocess.Popen(
                    [
                        str(HAYTHAM),
                        "worker",
                        "--name",
                        f"bench-{n}",
                        "--concurrency",
                        str(concurrency),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C reaches the benchmark, which stops them
                )
            )
    return procs


def measure(workers: int, args: argparse.Namespace, logs: Path) -> Result:
    with bench.scratch_database(args.admin_url, "haytham_bench") as url:
        os.environ["HAYTHAM_DATABASE_URL"] = url
        subprocess.run([str(HAYTHAM), "migrate"], check=True, stdout=subprocess.DEVNULL)
        procs = start_workers(workers, args.concurrency, logs)
        try:
            bench.wait_for_workers(url, workers, procs)
            svc = make_service(load_settings())
            runs = make_runs(svc)
            assert isinstance(runs, QueuedRuns)
            try:
                sids = [svc.create_session(IDEA) for _ in range(args.sessions)]
                enqueued: dict[str, float] = {}
                for sid in sids:
                    enqueued[sid] = time.time()
                    runs.run(sid)
                ended: dict[str, float] = {}
                for sid in sids:
                    job = runs.wait(sid, timeout=args.timeout)
                    if job is None or job.ended_at is None:
                        raise RuntimeError(f"session {sid}: its job did not end in time")
                    ended[sid] = job.ended_at
                bad = {
                    sid: status
                    for sid in sids
                    if (status := svc.status(sid)["status"]) != "waiting_gate_1"
                }
            finally:
                runs.close()
        finally:
            bench.stop_processes(procs, timeout=15.0)
    if bad:
        raise RuntimeError(f"with {workers} worker(s), sessions not at Gate 1: {bad}")
    return Result(
        workers=workers,
        sessions=len(sids),
        wall_s=max(ended.values()) - min(enqueued.values()),
        to_gate_s=[ended[sid] - enqueued[sid] for sid in sids],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--sessions", type=int, default=8, help="sessions per configuration")
    parser.add_argument("--concurrency", type=int, default=1, help="sessions per worker at once")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait per job")
    parser.add_argument("--admin-url", default=ADMIN_URL, help="a database of a CREATEDB role")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]

    # sessions folder and worker logs; a RuntimeError prints the logs' tails and exits 1
    with bench.scratch_folder("haytham-team-", "worker-*.log") as scratch:
        os.environ.update(
            HAYTHAM_PROVIDER="replay",
            HAYTHAM_CASSETTE=str(CASSETTE),
            HAYTHAM_EMBEDDINGS="off",
            HAYTHAM_INTAKE="off",
            HAYTHAM_REPLAY_LATENCY=str(args.latency),
            HAYTHAM_PROVIDER_CONCURRENCY=str(PROVIDER_CONCURRENCY),
            HAYTHAM_SESSIONS_DIR=str(scratch),
        )
        print(
            f"commit {bench.git_commit()}; {args.sessions} sessions to Gate 1 per configuration, "
            f"replay with {args.latency:g} s per model call, {args.concurrency} session(s) per "
            f"worker, HAYTHAM_PROVIDER_CONCURRENCY={PROVIDER_CONCURRENCY} (not a cap here)"
        )
        load_before = os.getloadavg()
        results = [measure(n, args, scratch) for n in counts]
    load_after = os.getloadavg()

    base = next((r.rate for r in results if r.workers == 1), None)
    print(
        f"\n{'workers':>7} {'sessions':>8} {'wall s':>7} {'sess/s':>7} {'p50 s':>6} "
        f"{'p95 s':>6} {'speed-up':>8}"
    )
    for r in results:
        speedup = f"{r.rate / base:.2f}x" if base else "-"
        print(
            f"{r.workers:>7} {r.sessions:>8} {r.wall_s:>7.1f} {r.rate:>7.3f} "
            f"{statistics.median(r.to_gate_s):>6.1f} {r.p95():>6.1f} {speedup:>8}"
        )
    two = next((r.rate for r in results if r.workers == 2), None)
    if base and two:
        verdict = "met" if two / base >= TARGET else "NOT met"
        print(f"\ntarget >= {TARGET}x sessions/s from 1 to 2 workers: {two / base:.2f}x, {verdict}")
    print(bench.load_line(load_before, load_after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
