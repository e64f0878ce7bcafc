"""`haytham doctor`: check that this machine can run Haytham, with one line per check.

Each check is independent and never raises; heavy imports (sentence-transformers) happen only here,
inside the check that needs them.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata

from pydantic import BaseModel

from haytham.config import Settings
from haytham.errors import HaythamError
from haytham.models.llama_server import local_extra_problem, local_model_path
from haytham.models.providers import check_provider


class Check(BaseModel):
    """The outcome of one doctor check: its name, whether it passed, and a one-line detail."""

    name: str
    ok: bool
    detail: str


def _provider(settings: Settings) -> str:
    check_provider(settings)
    return f"'{settings.provider}' is configured ({settings.model_id('heavy')} for the heavy tier)"


def _model_file(settings: Settings) -> str:
    path = local_model_path()
    return f"{path} ({path.stat().st_size / 1e6:.0f} MB)"


def _llama_cpp(settings: Settings) -> str:
    problem = local_extra_problem()
    if problem:
        raise RuntimeError(problem)
    done = subprocess.run(
        [sys.executable, "-c", "import xllamacpp; print(xllamacpp.get_system_info())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise RuntimeError(f"xllamacpp does not load: {tail}")
    return f"xllamacpp {metadata.version('xllamacpp')} loads ({done.stdout.strip()[:80]})"


def _embeddings(settings: Settings) -> str:
    from haytham.validate.embeddings import Embedder

    embedder = Embedder()
    dimension = embedder.encode(["doctor"]).shape[-1]
    return f"all-MiniLM-L6-v2 loaded from {embedder.model_path()} (dimension {dimension})"


def _burr(settings: Settings) -> str:
    importlib.import_module("burr.core")
    return f"apache-burr {metadata.version('apache-burr')} importable"


def _sessions_dir(settings: Settings) -> str:
    url = settings.secret("database_url")
    if url:  # team deployment: the sessions are in PostgreSQL
        from haytham.storage.postgres import PgStore

        store = PgStore(url)
        try:
            count = len(store.list_ids())
        finally:
            store.close()
        return f"shared database {store.location} reachable, tables current, {count} sessions"
    folder = settings.sessions_dir
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-", delete=True) as probe:
        probe.write(b"ok")
        probe.flush()
    return f"{folder.resolve()} is writable"


def run_checks(settings: Settings) -> list[Check]:
    """Run every check and return the results in a fixed order (nothing raises).

    The local model checks always run; when another provider is selected their failure is only
    informational (``ok`` stays true and the detail says it matters for the local provider only).
    """
    checks: list[tuple[str, Callable[[Settings], str]]] = [
        ("provider", _provider),
        ("local model file", _model_file),
        ("llama.cpp server", _llama_cpp),
        ("embeddings model", _embeddings),
        ("burr", _burr),
        ("sessions dir", _sessions_dir),
    ]
    results: list[Check] = []
    for name, run in checks:
        try:
            results.append(Check(name=name, ok=True, detail=run(settings)))
            continue
        except HaythamError as error:
            detail = str(error)
        except Exception as error:  # a doctor reports failures, it does not crash on them
            text = " ".join(str(error).split())[:300] or type(error).__name__
            detail = f"{type(error).__name__}: {text}"
        if name in _LOCAL_ONLY and settings.provider != "local":
            results.append(
                Check(
                    name=name,
                    ok=True,
                    detail=f"not needed for provider "
                    f"'{settings.provider}' (local provider only): {detail}",
                )
            )
        else:
            results.append(Check(name=name, ok=False, detail=detail))
    return results


_LOCAL_ONLY = ("local model file", "llama.cpp server")
