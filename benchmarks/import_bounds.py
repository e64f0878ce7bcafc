"""What refusing an over-cap session bundle costs: time and peak memory of ``read_bundle``.

    .venv/bin/python benchmarks/import_bounds.py            # every case, one fresh process each

Builds a real bundle (the Power of 8 replay, run to the end) and from it the bundles the
caps refuse (haytham/runs/transfer.py): 20,000 files named like a session's, 60,000 odd files, a
60 MiB member, 200,000 nested brackets, 6 million numbers, a member named ``state.db``, and a
200 MiB bundle, as a file (its size is checked first) and through a pipe (counted as it
streams), and 80 MiB of files a session may hold through a pipe (the total cap, while streaming). Each case runs
``read_bundle`` in a fresh Python process and prints the outcome, the wall time and the
process's peak RSS (``VmHWM`` of /proc/self/status; ``ru_maxrss`` keeps the parent's peak
across exec) just before the read and after it, then the peak of Python allocations of a second read under tracemalloc (a
pipe is read once, so its tracemalloc column is empty: see the RSS column). docs/reliability.md quotes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

MEASURE = """
import re, sys, time, tracemalloc
from pathlib import Path
from haytham.errors import InputError
from haytham.runs.transfer import read_bundle

def hwm():  # the process's peak RSS in KiB (ru_maxrss would carry the parent's over exec)
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\\s+(\\d+)", status).group(1))

def read():
    try:
        read_bundle(Path(sys.argv[1]))
        return "imported"
    except InputError as exc:
        return "refused: " + str(exc).split(" is refused: ")[-1].split(" carries ")[-1][:70]

base = hwm()
started = time.perf_counter()
outcome = read()
took = time.perf_counter() - started
after = hwm()
peak = 0
if sys.argv[2] == "again":  # a second read under tracemalloc (which slows it) for the peak
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1]
print(f"{took:.2f}|{peak / 2**20:.1f}|{base / 1024:.0f}|{after / 1024:.0f}|{outcome}")
"""


def _real_bundle(work: Path) -> dict:
    from pipeline_helpers import POWER8_IDEA, replay_settings

    from haytham.app import make_service

    with make_service(replay_settings(work)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, auto_approve=True)
        return json.loads(svc.export(sid, "session"))


def _cases(bundle: dict, work: Path) -> dict[str, Path]:
    def write(name: str, data: dict | str) -> Path:
        path = work / f"{name}.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        return path

    files = bundle["files"]
    named = {f"reviews/{n:04d}-mvp-scope.json": "{}" for n in range(10_000)}
    named |= {f"reviews/{n:04d}-market-context.json": "{}" for n in range(10_000)}
    numbers = json.loads(json.dumps(bundle))
    numbers["state"][0]["state"]["x"] = [0] * 6_000_000
    return {
        "a finished session": write("real", bundle),
        "20,000 review files": write("many", {**bundle, "files": named}),
        "60,000 odd files": write(
            "odd", {**bundle, "files": {f"f{n}.md": "" for n in range(60_000)}}
        ),
        "a 60 MiB member": write(
            "big", {**bundle, "files": {**files, "idea.md": "x" * 60 * 2**20}}
        ),
        "200,000 nested brackets": write(
            "deep", json.dumps(bundle)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
        ),
        "6 million numbers": write("numbers", numbers),
        "a member named state.db": write(
            "statedb", {**bundle, "files": {**files, "state.db": "x"}}
        ),
        "200 MiB file": write("huge", {**bundle, "files": {**files, "idea.md": "x" * 200 * 2**20}}),
        "80 MiB of allowed files": write(
            "total", {**bundle, "files": {n: "x" * 4 * 10**6 for n in list(named)[:20]}}
        ),
    }


def _piped(path: Path, work: Path) -> tuple[Path, subprocess.Popen]:
    """A FIFO that streams ``path`` (its size unknown to the reader: the stream cap counts)."""
    fifo = work / "pipe.json"
    if fifo.exists():
        fifo.unlink()
    os.mkfifo(fifo)
    feed = (
        f"import shutil; shutil.copyfileobj(open({str(path)!r}, 'rb'), open({str(fifo)!r}, 'wb'))"
    )
    return fifo, subprocess.Popen([sys.executable, "-c", feed], stderr=subprocess.DEVNULL)


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="haytham-import-bounds-") as tmp:
        work = Path(tmp)
        cases = _cases(_real_bundle(work), work)
        head = f"{'bundle':<28} {'size':>9} {'time':>7} {'py peak':>9} {'RSS before/peak':>16}"
        print(f"{head}  outcome")
        piped = [("200 MiB through a pipe", cases["200 MiB file"])]
        piped.append(("80 MiB of files, piped", cases.pop("80 MiB of allowed files")))
        for label, path in [*cases.items(), *piped]:
            feeder = None
            target = path
            if (label, path) in piped:
                target, feeder = _piped(path, work)
            run = subprocess.run(
                [sys.executable, "-c", MEASURE, str(target), "once" if feeder else "again"],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            if feeder is not None:
                feeder.kill()
                feeder.wait()
            took, peak, base, after, outcome = run.stdout.strip().splitlines()[-1].split("|", 4)
            size = path.stat().st_size / 2**20
            print(
                f"{label:<28} {size:>6.1f} MiB {took:>5} s {peak:>5} MiB {base:>5}/{after:>5} MiB  {outcome}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
