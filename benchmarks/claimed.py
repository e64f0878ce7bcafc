"""Drift that believes it is faithful (issue 26): items still claim the invariant ids.

    .venv/bin/python benchmarks/claimed.py                  # dev split (tune on this one)
    .venv/bin/python benchmarks/claimed.py --split test     # held-out ideas: score once, at the end
    .venv/bin/python benchmarks/claimed.py --split all-dev  # dev + test together (issue 26's tuning set)
    .venv/bin/python benchmarks/claimed.py --split tuning   # dev + test + holdout (third round)
    .venv/bin/python benchmarks/claimed.py --split tuning6  # every split but holdout5 (sixth)
    .venv/bin/python benchmarks/claimed.py --verbose        # every finding of every case

Each blind split (``holdout`` … ``holdout5``) was written by a helper who did not read the
validators, scored once with the code of its round, then read and added to the next round's
tuning set (``tuning`` … ``tuning10``); docs/validators.md records each scoring. From round
seven on a blind split has eight ideas in two folders (``blind8``, ``final8``, ``last8``,
``closing8``). closing8, the last, has been scored once and read: a new claim needs a new blind
split.

Cases live in ``tests/fixtures/claimed/<split>`` (written by helpers who did not read the
validators; same case format as ``tests/fixtures/fidelity``). Each ``label.json`` names the
drift, the drifted ``stage`` and, where one is concerned, the ``invariant``; there is no
expected validator: the question is whether the deterministic layer as a whole notices.

Prints, for the split:

* drifts caught: a finding at warning or worse about the labelled stage or the labelled
  invariant that the idea's faithful session does not have (same validator, stage, item and
  invariant), so a warning the faithful session already raises never counts as a catch
  (target >= 80 %), overall and per drift kind; also "anywhere" (any new warning);
* faithful sessions (the faithful one, the terse and the wordy paraphrase) flagged at warning
  or worse (target <= 10 %), counted twice: by **drift-family** findings (everything except the
  competitor-pricing sourcing check of issue 25, a true finding about where a price came from,
  raised identically on every version of an idea and blind to drift) and by **any warning**;
* the fidelity ranking: per idea, the genericized session's lowest descriptive-stage fidelity
  below both faithful paraphrases' (and the faithful session's).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haytham.validate import (  # noqa: E402
    Embedder,
    Finding,
    ValidationReport,
    ValidatorSettings,
    load_snapshot,
    run_validators,
)
from haytham.validate.calibration import CaseError, load_case  # noqa: E402
from haytham.validate.common import DESCRIPTIVE  # noqa: E402

SPLITS = {
    s: [ROOT / "tests" / "fixtures" / "claimed" / s]
    for s in (
        "dev",
        "test",
        "holdout",
        "holdout2",
        "holdout3",
        "holdout4",
        "holdout5",
        "holdout6",
        "holdout7",
        "holdout8",
        "holdout9",
        "holdout10",
        "holdout11",
        "holdout12",
        "holdout13",
    )
}
SPLITS["all-dev"] = (
    SPLITS["dev"] + SPLITS["test"]
)  # the tuning set since the old test split was spoilt
# issue 26, third round: holdout was scored once and is spoilt too; dev + test + holdout tune,
# holdout2 is the new blind split (never run while tuning)
SPLITS["tuning"] = SPLITS["dev"] + SPLITS["test"] + SPLITS["holdout"]
# issue 26, fourth round: holdout2 was scored once and is spoilt too; every earlier split tunes,
# holdout3 is the new blind split (never run while tuning)
SPLITS["tuning4"] = SPLITS["tuning"] + SPLITS["holdout2"]
# fifth round: holdout3 was scored once and is spoilt too; holdout4 is the new blind split
SPLITS["tuning5"] = SPLITS["tuning4"] + SPLITS["holdout3"]
# sixth round: holdout4 was scored once and is spoilt too; holdout5 is the new blind split
SPLITS["tuning6"] = SPLITS["tuning5"] + SPLITS["holdout4"]
# seventh round: holdout5 was scored once and is spoilt too; every earlier split tunes, and two
# helpers wrote holdout6 and holdout7 (four ideas each) as the new blind test split ("blind8")
SPLITS["tuning7"] = SPLITS["tuning6"] + SPLITS["holdout5"]
SPLITS["blind8"] = SPLITS["holdout6"] + SPLITS["holdout7"]
# blind8 was scored once with round seven's first code and read (spoilt); its faithful flags led
# to three more fixes; two more helpers wrote holdout8 and holdout9, scored once on the final code
SPLITS["tuning8"] = SPLITS["tuning7"] + SPLITS["blind8"]
SPLITS["final8"] = SPLITS["holdout8"] + SPLITS["holdout9"]
# round eight: final8 was scored once and read (spoilt); its misses and flags led to four fixes;
# holdout10 and holdout11, written blind meanwhile, are scored once on the round's final code
SPLITS["tuning9"] = SPLITS["tuning8"] + SPLITS["final8"]
SPLITS["last8"] = SPLITS["holdout10"] + SPLITS["holdout11"]
# round nine: last8 was scored once and read (spoilt); holdout12 and holdout13, written blind
# meanwhile, are scored once on the submitted code ("closing8")
SPLITS["tuning10"] = SPLITS["tuning9"] + SPLITS["last8"]
SPLITS["closing8"] = SPLITS["holdout12"] + SPLITS["holdout13"]
FAITHFUL_KINDS = ("faithful", "paraphrase_terse", "paraphrase_wordy")


def _kind(name: str) -> str:
    return name.split("__", 1)[1] if "__" in name else "faithful"


def _about(f: Finding, stage: str | None, invariant: str | None) -> bool:
    """Whether a finding points at the labelled stage or the labelled invariant."""
    if stage is not None and f.stage == stage:
        return True
    return bool(invariant) and (f.invariant or "").split(" ")[0].rstrip("abcdefghij") == invariant


def drift_family(f: Finding) -> bool:
    """Whether a finding is about drift from the idea, not about where a competitor's price came
    from (claim_consistency on a ``COMP-nn`` item: issue 25's sourcing check)."""
    return not (f.validator == "claim_consistency" and (f.item or "").startswith("COMP-"))


def _key(f: Finding) -> tuple[str, str | None, str | None, str | None]:
    return (f.validator, f.stage, f.item, f.invariant)


def fidelity(report: ValidationReport) -> float | None:
    values = [report.divergence.get(s, {}).get("fidelity") for s in DESCRIPTIVE]
    values = [v for v in values if v is not None]
    return min(values) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--root", type=Path, help="another folder of cases (exploration)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    roots = [args.root] if args.root else SPLITS[args.split]
    settings, embedder = ValidatorSettings(), Embedder()
    caught: dict[str, list[bool]] = defaultdict(list)
    anywhere = drifts = 0
    faithful: list[tuple[str, bool, bool]] = []  # name, any warning, drift-family warning
    fid: dict[str, dict[str, float | None]] = defaultdict(dict)
    skipped: list[str] = []
    baseline: dict[str, set[tuple[str, str | None, str | None, str | None]]] = {}
    pending: list[tuple[str, str | None, str | None, str, list[Finding]]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folders = sorted(
            p for root in roots for p in root.iterdir() if (p / "label.json").is_file()
        )
        for folder in folders:
            try:
                case = load_case(folder, Path(tmp))
                label = json.loads((folder / "label.json").read_text(encoding="utf-8"))
                report = run_validators(
                    load_snapshot(case.path), settings=settings, embedder=embedder
                )
            except (CaseError, ValueError, OSError) as exc:
                skipped.append(f"{folder.name}: {exc}")
                continue
            kind = _kind(case.name)
            fid[case.name.split("__", 1)[0]][kind] = fidelity(report)
            flagged = report.flagged()
            if args.verbose:
                print(f"-- {case.name} ({case.drift})")
                for f in report.findings:
                    print(
                        f"   [{f.severity}] {f.validator} {f.stage} {f.item} {f.invariant}: "
                        f"{f.message[:150]}"
                    )
            if case.drift is None:
                faithful.append((case.name, bool(flagged), any(drift_family(f) for f in flagged)))
                if "__" not in case.name:
                    baseline[case.name] = {_key(f) for f in flagged}
                continue
            pending.append((case.name, case.stage, label.get("invariant"), case.drift, flagged))
    for name, stage, invariant, drift, flagged in pending:
        new = [f for f in flagged if _key(f) not in baseline.get(name.split("__", 1)[0], set())]
        drifts += 1
        anywhere += bool(new)
        hit = any(_about(f, stage, invariant) for f in new)
        caught[drift].append(hit)
        if not hit:
            print(f"missed: {name}")
    where = ", ".join(str(r) for r in roots)
    print(f"validated {len(folders)} cases of {where} in {time.perf_counter() - started:.1f} s")
    for s in skipped:
        print(f"SKIPPED (malformed): {s}")
    n_caught = sum(sum(v) for v in caught.values())
    rate = n_caught / drifts if drifts else 1.0
    print(
        f"drifts with claimed ids caught at warning or worse (labelled stage or invariant, "
        f"not raised on the faithful session): "
        f"{n_caught}/{drifts} = {rate:.0%} (target >= 80 %: {'met' if rate >= 0.8 else 'NOT met'})"
        f"; any new warning anywhere: {anywhere}/{drifts}"
    )
    for kind, hits in sorted(caught.items()):
        print(f"  {kind:28} {sum(hits)}/{len(hits)}")
    n_any = sum(a for _, a, _ in faithful)
    n_drift = sum(d for _, _, d in faithful)
    total_f = len(faithful) or 1
    print(
        f"faithful sessions flagged by drift-family findings: {n_drift}/{len(faithful)} = "
        f"{n_drift / total_f:.0%} (target <= 10 %: {'met' if n_drift / total_f <= 0.1 else 'NOT met'})"
        f"; by any warning (sourcing included): {n_any}/{len(faithful)} = {n_any / total_f:.0%}"
        + "".join(f"\n  flagged: {n}{'' if d else ' (sourcing only)'}" for n, a, d in faithful if a)
    )
    good = total = 0
    print("lowest fidelity among the descriptive stages:")
    for idea, row in sorted(fid.items()):
        gen = next((v for k, v in row.items() if k.startswith("genericized")), None)
        ok_rows = [row.get(k) for k in FAITHFUL_KINDS if row.get(k) is not None]
        if gen is None or not ok_rows:
            continue
        total += 1
        ok = gen < min(ok_rows)
        good += ok
        cells = ", ".join(f"{k} {v:.3f}" for k, v in sorted(row.items()) if v is not None)
        print(f"  {'ok ' if ok else 'BAD'} {idea}: {cells}")
    print(f"genericized below every faithful version: {good}/{total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
