"""Score the anchor grounding check (``haytham.validate.grounding``) on labelled quotes.

Usage: ``.venv/bin/python benchmarks/grounding.py [--split dev|test|all] [--verbose]``

Material, written before the check was tuned (``tests/fixtures/grounding/cases.jsonl``): per idea
of the fidelity fixtures, three close paraphrases of the idea (must be accepted) and three
invented entries of the kind a weak model adds (must be flagged); plus every invariant source (and
identity feature source quote) of the idea's faithful anchor (``concept_anchor.json``, must be accepted). The
split follows the fidelity fixtures: tune on ``dev``, score ``test`` once at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haytham.validate.grounding import grounding_share, is_grounded  # noqa: E402

FIDELITY = ROOT / "tests" / "fixtures" / "fidelity"
CASES = ROOT / "tests" / "fixtures" / "grounding" / "cases.jsonl"


def cases(split: str) -> list[dict]:
    labelled = [json.loads(ln) for ln in CASES.read_text(encoding="utf-8").splitlines() if ln]
    labelled = [c for c in labelled if split in ("all", c["split"])]
    for idea in sorted({c["idea"] for c in labelled}):
        anchor = json.loads((FIDELITY / idea / "concept_anchor.json").read_text(encoding="utf-8"))
        for inv in anchor["invariants"]:
            labelled.append({"idea": idea, "kind": "anchor quote", "source": inv["source"]})
        for feature in anchor.get("identity", []):
            if feature.get("source"):  # a feature is checked only through its source quote
                labelled.append(
                    {"idea": idea, "kind": "anchor identity", "source": feature["source"]}
                )
    for case in labelled:
        case.setdefault("grounded", True)
    return labelled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    right, total = Counter(), Counter()
    for case in cases(args.split):
        idea = (FIDELITY / case["idea"] / "idea.md").read_text(encoding="utf-8")
        got = is_grounded(case["source"], idea)
        total[case["kind"]] += 1
        right[case["kind"]] += got == case["grounded"]
        if args.verbose and got != case["grounded"]:
            share = grounding_share(case["source"], idea)
            print(f"  wrong ({case['kind']}, share {share:.2f}): {case['source']}")
    print(f"split {args.split}")
    for kind in sorted(total):
        print(f"  {kind:<16} {right[kind]}/{total[kind]} right")
    print(f"  all              {sum(right.values())}/{sum(total.values())} right")
    return 0


if __name__ == "__main__":
    sys.exit(main())
