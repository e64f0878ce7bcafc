"""Pieces of the team-deployment tests: a throwaway PostgreSQL database per test, and
``haytham worker`` processes against it (replay model, no network).

The server is the one ``make services`` starts (``scripts/services.sh``, whose URL and random
password are in ``.services.env``); where none answers, the tests are skipped with the reason. ``HAYTHAM_TEST_PG`` names another server (a URL of its
maintenance database, by a role that may create databases).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import CASSETTE, ROOT


def _scratch() -> Any:
    """``benchmarks/scratch.py`` (not a package): the throwaway database, waiting for workers
    and stopping them, as the team benchmark does it."""
    spec = importlib.util.spec_from_file_location("scratch", ROOT / "benchmarks" / "scratch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ADMIN_URL = os.environ.get("HAYTHAM_TEST_PG") or _scratch().default_admin_url()


def _reachable() -> None:
    """Skip the test, with the reason, unless the server answers."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[team]')")
    try:
        psycopg.connect(ADMIN_URL, connect_timeout=3).close()
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or ["?"])[0]
        pytest.skip(
            f"no PostgreSQL for the team-deployment tests ({first}); `make services` installs "
            "and starts one on loopback"
        )


@contextlib.contextmanager
def database() -> Iterator[str]:
    """The URL of a new, empty database, dropped afterwards (with anything still connected)."""
    _reachable()
    with _scratch().scratch_database(ADMIN_URL, "haytham_test") as url:
        yield url


def team_env(url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of an app instance or worker of the test deployment."""
    return {
        **os.environ,
        "HAYTHAM_DATABASE_URL": url,
        "HAYTHAM_PROVIDER": "replay",
        "HAYTHAM_CASSETTE": str(CASSETTE),
        "HAYTHAM_SESSIONS_DIR": str(tmp_path / "unused-sessions"),
        "HAYTHAM_RETRY_DELAY": "0",
        "HAYTHAM_INTAKE": "off",
        "HAYTHAM_EMBEDDINGS": "off",
        "HAYTHAM_TRUSTED_NETWORK": "on",  # no sign-in: the identity tests set their own
        **extra,
    }


def team_settings(url: str, tmp_path: Path, **extra: str) -> Any:
    from haytham.config import load_settings

    env = team_env(url, tmp_path, **extra)
    keys = ("HAYTHAM_", "OPENAI", "ANTHROPIC", "AWS", "OLLAMA")
    return load_settings(env={k: v for k, v in env.items() if k.startswith(keys)}, dotenv=None)


class Workers:
    """``haytham worker`` processes; stopped (SIGTERM, then SIGKILL) when the block ends."""

    def __init__(self, url: str, tmp_path: Path, **env: str) -> None:
        self.url, self.tmp_path, self.env = url, tmp_path, env
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, n: int, concurrency: int = 1, ready: int | None = None) -> None:
        """Start ``n`` workers; wait until ``ready`` workers (default: every one running)
        beat on the database."""
        haytham = Path(sys.executable).parent / "haytham"
        for _ in range(n):
            name = f"w{len(self.procs) + 1}"
            log = (self.tmp_path / f"{name}.log").open("wb")
            self.procs.append(
                subprocess.Popen(
                    [str(haytham), "worker", "--name", name, "--concurrency", str(concurrency)],
                    cwd=ROOT,
                    env=team_env(self.url, self.tmp_path, **self.env),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        self.wait_ready(ready or len([p for p in self.procs if p.poll() is None]))

    def wait_ready(self, n: int, timeout: float = 60) -> None:
        try:
            _scratch().wait_for_workers(self.url, n, self.procs, timeout)
        except RuntimeError as exc:
            pytest.fail(f"{exc}: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.tmp_path.glob("w*.log"))
        )

    def stop(self) -> None:
        _scratch().stop_processes(self.procs, timeout=15.0)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
