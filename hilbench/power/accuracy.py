"""Accuracy with an interval that knows the slices of one clip are not independent.

A 10 s clip gives ten 1 s samples from the same scene and recording: when one is misclassified
its neighbours often are too, so the information is closer to one observation per clip than to
ten. The interval is Wilson's score interval with the effective sample size N / deff, where the
design effect deff comes from the between-clip variance (cluster-robust); at 0 % or 100 %
(no observed variance) it falls back to one observation per clip, never to a zero-width
interval.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class AccuracyInterval:
    accuracy: float
    low: float
    high: float
    clips: int
    effective_samples: float
    method: str = ("95 % Wilson interval, effective sample size from the between-clip "
                   "variance (slices of one clip are correlated)")

    @property
    def uncertainty95(self) -> float:
        """Half the interval's width (the interval itself is not symmetric)."""
        return (self.high - self.low) / 2


def clip_accuracy_interval(correct: Sequence[bool], clip_ids: Sequence[str]) -> AccuracyInterval:
    """Accuracy of ``correct`` (one per sample) and its clip-aware 95 % interval."""
    n = len(correct)
    if n == 0 or n != len(clip_ids):
        raise ValueError("need one clip id per sample, and at least one sample")
    per_clip: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ok, clip in zip(correct, clip_ids, strict=True):
        per_clip[clip][0] += int(bool(ok))
        per_clip[clip][1] += 1
    k = len(per_clip)
    p = sum(c for c, _ in per_clip.values()) / n
    binomial_var = p * (1 - p) / n
    if k > 1:
        cluster_var = (k / (k - 1)) * sum((c - p * m) ** 2 for c, m in per_clip.values()) / n**2
    else:
        cluster_var = binomial_var
    # Nothing observed varies (0 % or 100 %): assume whole clips move together.
    deff = max(1.0, cluster_var / binomial_var) if binomial_var > 0 else n / k
    n_eff = n / deff
    low, high = _wilson(p, n_eff)
    return AccuracyInterval(p, low, high, k, n_eff)


def _wilson(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
