"""Time the first ``make run`` on a fresh clone, as a new user meets it.

Usage: ``python3 benchmarks/first_run.py [--repo .] [--keep]``

Clones the repository (its committed ``HEAD``) into a temporary folder and runs ``make run``
there with pip's cache switched off (``PIP_NO_CACHE_DIR=1``), so every package is fetched and
unpacked again: the venv, torch's CPU build, the app and its ``local`` extra (llama.cpp from the
prebuilt ``xllamacpp`` wheel). The clock stops when the app answers on its health endpoint
(``/_stcore/health``); the bundled model is assembled on the first model call, not here. Prints
the wall time, the time of each phase (venv + base install, local extra, app start), the
machine's load average before and after, and whether a compiler ran (any ``cc1``/``cc1plus``
process seen while installing, with the most at once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPILERS = ("cc1", "cc1plus")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def compilers_running() -> int:
    """How many compiler processes run right now (from /proc; 0 where there is none)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += (entry / "comm").read_text().strip() in COMPILERS
            except OSError:
                continue
    return count


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--keep", action="store_true", help="keep the clone (prints its path)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="haytham-first-run-"))
    clone = scratch / "haytham"
    subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
    port = free_port()
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "PORT": str(port)}
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    marks: dict[str, float] = {}
    most_compilers = 0
    log = (scratch / "make-run.log").open("wb")
    make = subprocess.Popen(
        ["make", "run", f"PORT={port}"],
        cwd=clone,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while time.perf_counter() - began < args.timeout:
            if make.poll() is not None:
                print(f"make run exited with {make.returncode}; log: {scratch / 'make-run.log'}")
                return 1
            most_compilers = max(most_compilers, compilers_running())
            for marker in (".base", ".local"):
                if marker not in marks and (clone / ".venv" / marker).exists():
                    marks[marker] = time.perf_counter() - began
            if healthy(port):
                marks["app"] = time.perf_counter() - began
                break
            time.sleep(0.5)
        else:
            print(f"no app after {args.timeout:.0f} s; log: {scratch / 'make-run.log'}")
            return 1
    finally:
        os.killpg(make.pid, 15)
        make.wait(timeout=30)
        log.close()
    base, local, app = marks[".base"], marks[".local"], marks["app"]
    print(f"first `make run` on a fresh clone (no pip cache): {app / 60:.1f} min until the app")
    print(f"  venv + base install {base:.0f} s; local extra {local - base:.0f} s; ", end="")
    print(f"app start {app - local:.0f} s")
    print(f"  compiler processes seen at once: {most_compilers}; cores: {os.cpu_count()}")
    print(f"  load average before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")
    if args.keep:
        print(f"  clone kept at {clone}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
