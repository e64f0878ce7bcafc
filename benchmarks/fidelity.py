"""The drift validators' evaluation protocol: dev split to tune on, test split scored at the end.

    .venv/bin/python benchmarks/fidelity.py                  # dev split (tune on this one)
    .venv/bin/python benchmarks/fidelity.py --split test     # held-out ideas: score, never tune
    .venv/bin/python benchmarks/fidelity.py --split drift    # the older regression fixtures
    .venv/bin/python benchmarks/fidelity.py --sweep          # dev: the thresholds behind warnings

Cases live in ``tests/fixtures/fidelity/{dev,test}`` (one folder of ideas per split; each idea has
a faithful session, a terse and a wordy faithful paraphrase and labelled drift cases written as
patches, see the README there) and ``tests/fixtures/drift`` (the first fixtures, kept as
regression). Prints, for the split:

* faithful sessions flagged at warning or worse (target <= 10 %), and the mean number of
  warnings per faithful session;
* drifted sessions caught by the validator built for that drift, about the drifted stage
  (target >= 90 %), overall and per drift kind; second opinions (``info``) count for neither;
* the fidelity curve's ranking: per idea, the mean fidelity of the descriptive stages of the
  genericized case must be below both faithful paraphrases' (and the faithful session's),
  comparing each session's lowest fidelity point among its descriptive stages.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haytham.validate import (  # noqa: E402
    Embedder,
    ValidationReport,
    ValidatorSettings,
    load_snapshot,
    run_validators,
)
from haytham.validate.calibration import Case, load_cases, score  # noqa: E402
from haytham.validate.common import DESCRIPTIVE  # noqa: E402

SPLITS = {
    "dev": ROOT / "tests" / "fixtures" / "fidelity" / "dev",
    "test": ROOT / "tests" / "fixtures" / "fidelity" / "test",
    "drift": ROOT / "tests" / "fixtures" / "drift",
}
SWEEP = {  # the thresholds that decide warnings (ratio_floor/gap only shape info findings)
    "founder_support_min": [0.45, 0.55, 0.6, 0.65, 0.7, 0.75],
    "stage_fidelity_floor": [-0.02, 0.0, 0.03, 0.05, 0.07, 0.09, 0.11, 0.13, 0.15],
}


def run(
    cases: list[Case], settings: ValidatorSettings, embedder: Embedder | None
) -> list[tuple[Case, ValidationReport]]:
    return [
        (c, run_validators(load_snapshot(c.path), settings=settings, embedder=embedder))
        for c in cases
    ]


def idea_of(case: Case) -> str:
    return case.name.split("__", 1)[0]


def fidelity(report: ValidationReport) -> float | None:
    """The session's most drifted descriptive stage: its lowest fidelity point."""
    values = [report.divergence.get(s, {}).get("fidelity") for s in DESCRIPTIVE]
    values = [v for v in values if v is not None]
    return min(values) if values else None


def report_split(name: str, results: list[tuple[Case, ValidationReport]]) -> dict[str, float]:
    cal = score(results)
    faithful = [(c, r) for c, r in results if c.drift is None]
    warnings = [len(r.flagged()) for _, r in faithful]
    print(f"\n== split {name}: {len(results)} cases ({len(faithful)} faithful)")
    fpr, det = cal.false_positive_rate, cal.detection_rate
    print(
        f"faithful sessions flagged at warning or worse: {cal.faithful_flagged}/"
        f"{cal.faithful_cases} = {fpr:.0%} (target <= 10 %: {'met' if fpr <= 0.1 else 'NOT met'})"
        f"; warnings per faithful session: mean {statistics.fmean(warnings or [0]):.2f}"
    )
    print(
        f"drifted sessions caught by the validator built for the drift: {cal.detected}/"
        f"{cal.drift_cases} = {det:.0%} (target >= 90 %: {'met' if det >= 0.9 else 'NOT met'})"
    )
    kinds: dict[str, list[bool]] = defaultdict(list)
    for c, _ in results:
        if c.drift is not None:
            kinds[c.name.split("__", 1)[-1] if name != "drift" else c.drift].append(
                c.name not in cal.missed
            )
    for kind, hits in sorted(kinds.items()):
        print(f"  {kind:28} {sum(hits)}/{len(hits)}")
    print(f"{'validator':26} {'TP':>4} {'FP':>4} {'misses':>7} {'other':>6}")
    for v, c in cal.per_validator.items():
        print(f"{v:26} {c.tp:>4} {c.fp:>4} {c.misses:>7} {c.other:>6}")
    if cal.missed:
        print("missed: " + ", ".join(cal.missed))
    for c, r in faithful:
        for f in r.flagged():
            print(f"  flagged {c.name}: [{f.validator}] {f.stage}: {f.message[:160]}")
    ranked = ranking(results)
    return {"fpr": fpr, "detection": det, "ranking": ranked}


def ranking(results: list[tuple[Case, ValidationReport]]) -> float:
    """Share of ideas whose genericized case has lower fidelity than every faithful version."""
    by_idea: dict[str, dict[str, float | None]] = defaultdict(dict)
    for c, r in results:
        kind = c.name.split("__", 1)[1] if "__" in c.name else "faithful"
        by_idea[idea_of(c)][kind] = fidelity(r)
    good = total = 0
    print("\nlowest fidelity among the descriptive stages (anchor pull minus generic pull):")
    for idea, row in sorted(by_idea.items()):
        gen = row.get("genericized")
        faithful = [row.get(k) for k in ("faithful", "paraphrase_terse", "paraphrase_wordy")]
        faithful = [f for f in faithful if f is not None]
        if gen is None or not faithful:
            continue
        total += 1
        ok = gen < min(faithful)
        good += ok
        cells = ", ".join(
            f"{k} {v:.3f}" for k, v in row.items() if v is not None and not k.startswith("trait")
        )
        print(f"  {'ok ' if ok else 'BAD'} {idea}: {cells}")
    if total:
        print(f"genericized below every faithful version: {good}/{total}")
    return good / total if total else 1.0


def sweep(cases: list[Case], embedder: Embedder, base: ValidatorSettings) -> None:
    print("\nSweep (dev split only): one threshold at a time, the others at their defaults")
    for param, values in SWEEP.items():
        print(f"  {param} (default {getattr(base, param)})")
        for value in values:
            settings = base.model_copy(update={param: value})
            cal = score(run(cases, settings, embedder))
            print(
                f"    {value:>5}: faithful flagged {cal.faithful_flagged}/{cal.faithful_cases}, "
                f"caught {cal.detected}/{cal.drift_cases}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--sweep", action="store_true", help="dev split only")
    args = parser.parse_args(argv)
    settings = ValidatorSettings()
    embedder = Embedder()
    with tempfile.TemporaryDirectory() as tmp:
        cases = load_cases(SPLITS[args.split], Path(tmp))
        t = time.perf_counter()
        results = run(cases, settings, embedder)
        print(f"validated {len(cases)} cases in {time.perf_counter() - t:.1f} s")
        report_split(args.split, results)
        if args.sweep:
            if args.split != "dev":
                print("--sweep runs on the dev split only; tuning on test would spoil it")
                return 2
            sweep(cases, embedder, settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
