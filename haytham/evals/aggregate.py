"""Replica aggregation (seed 003): trimmed mean, median, agreement and an uncertainty band.

Pure functions on 1-5 scores. Policy, in :func:`next_step`:

- replicas 1 and 2 always run (when K >= 2);
- **early exit**: once the scores so far agree (spread <= ``agree_within``), the remaining
  replicas up to K are skipped;
- **referee**: when the K replicas (or as many as ran) still disagree, one referee judgement runs,
  seeing the earlier verdicts; its score joins the aggregate (so a 2-vs-4 split is settled by the
  median of three).

``agreement`` is ``1 - spread / 4`` over the independent replicas (1.0 = identical scores, 0.0 =
a 1 and a 5); undefined with fewer than two. The band is the aggregate ± the standard error of
the scores, clipped to 1..5.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

SCORE_MIN, SCORE_MAX = 1, 5
Step = Literal["replica", "referee", "done"]


def spread(scores: Sequence[float]) -> float:
    """Highest minus lowest score (0 when there are none)."""
    return (max(scores) - min(scores)) if scores else 0.0


def agrees(scores: Sequence[float], agree_within: float) -> bool:
    """Whether the scores are within ``agree_within`` of each other (fewer than two always do)."""
    return len(scores) < 2 or spread(scores) <= agree_within


def next_step(
    scores: Sequence[float],
    attempted: int,
    k: int,
    agree_within: float,
    referee_done: bool,
    referee_enabled: bool = True,
) -> Step:
    """What to do after ``attempted`` replicas produced ``scores`` (failed ones give none)."""
    if attempted < min(k, 2):
        return "replica"
    if attempted < k and not agrees(scores, agree_within):
        return "replica"
    disagree = len(scores) >= 2 and not agrees(scores, agree_within)
    if referee_enabled and not referee_done and disagree:
        return "referee"
    return "done"


def trimmed_mean(values: Sequence[float]) -> float:
    """Mean after dropping one lowest and one highest value when there are three or more."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    if len(ordered) >= 3:
        ordered = ordered[1:-1]
    return sum(ordered) / len(ordered)


def agreement(scores: Sequence[float]) -> float | None:
    """``1 - spread / 4`` (1.0: identical, 0.0: a 1 and a 5); None with fewer than two scores."""
    if len(scores) < 2:
        return None
    return round(1.0 - spread(scores) / (SCORE_MAX - SCORE_MIN), 3)


def band(center: float, values: Sequence[float]) -> tuple[float, float]:
    """``center`` ± the standard error of ``values``, clipped to 1..5 (no width below two)."""
    if len(values) < 2:
        return (round(center, 3), round(center, 3))
    err = statistics.stdev(values) / math.sqrt(len(values))
    return (round(max(SCORE_MIN, center - err), 3), round(min(SCORE_MAX, center + err), 3))


def aggregate(replica_scores: Sequence[float], referee_score: float | None = None) -> dict:
    """Score (trimmed mean), median, agreement and band; ``score`` None if nothing scored."""
    values = list(replica_scores) + ([referee_score] if referee_score is not None else [])
    if not values:
        return {"score": None, "median": None, "agreement": None, "band": None, "n": 0}
    center = trimmed_mean(values)
    return {
        "score": round(center, 3),
        "median": float(statistics.median(values)),
        "agreement": agreement(list(replica_scores)),
        "band": list(band(center, values)),
        "n": len(values),
    }


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """The mean of the values that are present, rounded to 3 places; None when none are."""
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 3) if present else None


__all__ = [
    "aggregate",
    "agreement",
    "agrees",
    "band",
    "mean_or_none",
    "next_step",
    "spread",
    "trimmed_mean",
]
