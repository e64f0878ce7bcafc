"""Validator calibration (ADR-022 7c): do validator and verifier flags match what judges found?

A *flag* is a validator finding or a verifier's violation / genericization flag. A judge *issue*
(from any rubric's replicas) matches a flag when the stages agree (or either is unspecified) and
either both name the same anchor invariant or their wording shares at least 30% of the key terms
of the shorter one. Per validator: true positives (flags some judge issue confirms), false
positives (flags no judge issue confirms) and the false-positive rate; overall: misses (judge
issues no flag caught). ADR target before a validator becomes blocking: FP rate below 20%.
With no judge issues at all there is no evidence, and rates are left empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from haytham.evals.chaos import key_terms
from haytham.evals.judge import JudgeIssue, Judgement

FP_TARGET = 0.20
OVERLAP = 0.30


def verifier_flags(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The phase verifiers' violations and genericization flags in a session's state, as flags
    shaped like validator findings (``validator`` is ``verifier``)."""
    flags: list[dict[str, Any]] = []
    for phase, v in (state.get("verifications") or {}).items():
        for item in v.get("invariants_violated") or []:
            flags.append(
                {
                    "validator": "verifier",
                    "stage": item.get("stage"),
                    "invariant": item.get("invariant"),
                    "message": f"{item.get('invariant')}: {item.get('violation')}",
                    "phase": phase,
                }
            )
        for item in v.get("identity_genericized") or []:
            flags.append(
                {
                    "validator": "verifier",
                    "stage": item.get("stage"),
                    "invariant": None,
                    "message": f"{item.get('original_feature')} genericized to "
                    f"{item.get('generic_replacement')}",
                    "phase": phase,
                }
            )
    return flags


def _norm(text: str | None) -> str:
    return (text or "").strip().lower().replace(" ", "_")


def matches(issue: JudgeIssue, flag: Mapping[str, Any]) -> bool:
    """Whether a judge issue confirms a flag: the stages agree (or either is unspecified) and
    they name the same invariant or share at least 30% of the shorter one's key terms."""
    stage, fstage = issue.stage.strip().lower(), str(flag.get("stage") or "").lower()
    if stage and fstage and stage != fstage:
        return False
    if (
        issue.invariant
        and flag.get("invariant")
        and _norm(issue.invariant) == _norm(str(flag["invariant"]))
    ):
        return True
    a = set(key_terms(f"{issue.invariant} {issue.detail}"))
    b = set(
        key_terms(
            f"{flag.get('invariant') or ''} {flag.get('message', '')} {flag.get('evidence', '')}"
        )
    )
    if not a or not b:
        return False
    return len(a & b) / min(len(a), len(b)) >= OVERLAP


def judge_issues(judgements: Iterable[Judgement]) -> list[JudgeIssue]:
    """The distinct issues of the model-scored judgements (rule-scored, failed and skipped ones
    left out), each kept in its first spelling."""
    seen: dict[tuple[str, str, str], JudgeIssue] = {}
    for j in judgements:
        if j.source != "judge":
            continue
        for issue in j.issues:
            detail = " ".join(issue.detail.lower().split())
            key = (issue.stage.lower(), issue.invariant.lower(), detail)
            seen.setdefault(key, issue)
    return list(seen.values())


def calibrate(
    issues: Sequence[JudgeIssue],
    flags: Sequence[Mapping[str, Any]],
    validator_names: Sequence[str] = (),
) -> dict[str, Any]:
    """Per-validator TP / FP / FP rate, and the judge issues no flag caught."""
    evidence = bool(issues)
    names = list(dict.fromkeys([*validator_names, *(str(f.get("validator")) for f in flags)]))
    per: dict[str, dict[str, Any]] = {}
    for name in names:
        own = [f for f in flags if f.get("validator") == name]
        tp = sum(1 for f in own if any(matches(i, f) for i in issues))
        fp = len(own) - tp
        caught = sum(1 for i in issues if any(matches(i, f) for f in own))
        rate = round(fp / len(own), 3) if own and evidence else None
        per[name] = {
            "flags": len(own),
            "tp": tp if evidence else None,
            "fp": fp if evidence else None,
            "fp_rate": rate,
            "caught_judge_issues": caught,
            "may_block": None if rate is None else rate < FP_TARGET,
        }
    missed = [i for i in issues if not any(matches(i, f) for f in flags)]
    return {
        "judge_issues": len(issues),
        "flags": len(flags),
        "validators": per,
        "misses": len(missed),
        "miss_rate": round(len(missed) / len(issues), 3) if issues else None,
        "missed": [i.model_dump(mode="json") for i in missed[:20]],
        "evidence": "judge issues" if evidence else "no judge issues: rates not computable",
    }


def merge(sections: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Suite-wide calibration: counts summed over ideas, rates recomputed."""
    per: dict[str, dict[str, Any]] = {}
    issues = misses = flags = 0
    for sec in sections:
        issues += int(sec.get("judge_issues", 0))
        misses += int(sec.get("misses", 0))
        flags += int(sec.get("flags", 0))
        for name, row in (sec.get("validators") or {}).items():
            acc = per.setdefault(
                name, {"flags": 0, "tp": 0, "fp": 0, "caught_judge_issues": 0, "evidence": False}
            )
            acc["flags"] += row["flags"]
            acc["caught_judge_issues"] += row["caught_judge_issues"]
            if row.get("tp") is not None:
                acc["tp"] += row["tp"]
                acc["fp"] += row["fp"]
                acc["evidence"] = True
    for acc in per.values():
        evidence = acc.pop("evidence")
        judged = acc["tp"] + acc["fp"]
        if not evidence:
            acc["tp"] = acc["fp"] = None
        acc["fp_rate"] = round(acc["fp"] / judged, 3) if evidence and judged else None
        acc["may_block"] = None if acc["fp_rate"] is None else acc["fp_rate"] < FP_TARGET
    return {
        "judge_issues": issues,
        "flags": flags,
        "misses": misses,
        "miss_rate": round(misses / issues, 3) if issues else None,
        "validators": per,
    }


__all__ = ["FP_TARGET", "calibrate", "judge_issues", "matches", "merge", "verifier_flags"]
