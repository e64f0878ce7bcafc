"""Throwaway resources and report lines shared by the benchmarks that run workers.

``benchmarks/team.py`` and ``benchmarks/queue_choice.py`` both name the commit they measure,
keep worker logs in a temporary folder (whose logs' tails they print when a run fails), create
a PostgreSQL database for one run and drop it afterwards, stop child processes, and end their
report with the machine's load average. Those pieces live here. ``benchmarks/`` is not a
package: a benchmark puts this folder on ``sys.path`` and imports this file as ``scratch``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
LEGACY_URL = "postgresql://haytham:haytham@127.0.0.1:5432/haytham"  # services.sh before 2026-11


def default_admin_url() -> str:
    """The maintenance database (``postgres``) of the server ``make services`` set up here:
    the URL ``scripts/services.sh`` saved in ``.services.env`` (its random password), else the
    fixed one of earlier versions."""
    url = LEGACY_URL
    with suppress(OSError):
        for line in (ROOT / ".services.env").read_text(encoding="utf-8").splitlines():
            if line.startswith("HAYTHAM_DATABASE_URL="):
                url = line.split("=", 1)[1].strip()
    return urlsplit(url)._replace(path="/postgres").geturl()


def git_commit() -> str:
    """The short hash of this checkout's HEAD, for the report's first line."""
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


@contextmanager
def scratch_folder(prefix: str, logs: str) -> Iterator[Path]:
    """A temporary folder ``<prefix><random>``, removed on exit. A ``RuntimeError`` inside ends
    the benchmark: ``FAILED: <error>`` and the last 15 lines of each log in the folder that
    matches the glob ``logs``, on stderr, then exit status 1."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    except RuntimeError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        for log in sorted(folder.glob(logs)):
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"--- {log.name} (last lines)", *tail, sep="\n", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def scratch_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A fresh database ``<prefix>_<hex>`` on the server of ``admin_url`` (a ``postgresql://``
    URL whose role may CREATE DATABASE); yields its URL and drops it WITH (FORCE) on exit, also
    on a failure or Ctrl-C."""
    import psycopg  # here, not above: queue_choice.py's Celery workers import this file too

    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlsplit(admin_url)._replace(path=f"/{name}").geturl()
    finally:
        for attempt in range(10):  # a server process (autovacuum) may hold it for a moment
            try:
                with psycopg.connect(admin_url, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                break
            except psycopg.errors.InsufficientPrivilege:
                if attempt == 9:
                    raise
                time.sleep(1)


def wait_for_workers(
    url: str, count: int, procs: Iterable[subprocess.Popen[bytes]], timeout: float = 60.0
) -> None:
    """Wait until ``count`` ``haytham worker`` processes beat on the database at ``url``;
    ``RuntimeError`` if one of ``procs`` exits first or ``timeout`` s pass."""
    from psycopg.errors import UndefinedTable  # here: queue_choice.py's workers import this

    from haytham.runs.queue import count_live_workers
    from haytham.storage.postgres import Database

    procs = list(procs)
    db = Database(url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError("a worker exited while starting (see its log)")
            try:
                if count_live_workers(db) >= count:
                    return
            except UndefinedTable:  # the first worker is still installing the queue's schema
                pass
            time.sleep(0.2)
    finally:
        db.close()
    raise RuntimeError(f"{count} worker(s) did not register within {timeout:.0f} s")


def stop_processes(procs: Iterable[subprocess.Popen[bytes]], timeout: float) -> None:
    """SIGTERM every process still running, then SIGKILL those not gone ``timeout`` s later."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def load_line(before: tuple[float, float, float], after: tuple[float, float, float]) -> str:
    """The report's last line: ``os.getloadavg()`` before and after the runs, and the CPUs."""
    return (
        "load average (1/5/15 min) before "
        + "/".join(f"{x:.2f}" for x in before)
        + ", after "
        + "/".join(f"{x:.2f}" for x in after)
        + f" ({os.cpu_count()} CPUs)"
    )
