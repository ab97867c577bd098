"""The uncertainty of a mean over runs measured with one instrument: its common-mode part
(gain, offset, supply, the same for every run) averaged as fully correlated, the rest as
independent. The summary's tables and ``hilbench bench power-accuracy`` use this one rule."""

from __future__ import annotations

import math
import statistics
from typing import Any

# Budget components that one instrument contributes identically to every run.
COMMON_MODE = ("instrument gain", "instrument offset", "supply voltage")


def _budget_of(metric: dict[str, Any]) -> dict[str, Any] | None:
    meta = metric.get("meta") or {}
    return meta.get("budget") or (meta.get("estimate") or {}).get("budget") or None


def _budget(metric: dict[str, Any]) -> list[dict[str, Any]] | None:
    budget = _budget_of(metric)
    return None if not budget else budget.get("components")


def mean_standard_uncertainty(found: list[dict[str, Any]]) -> float | None:
    """The standard (k = 1) uncertainty of the mean over runs: :func:`mean_uncertainty` over
    each run's own coverage factor (its budget's 95 % expanded / combined standard); None when
    a run stored no budget to say it."""
    expanded = mean_uncertainty(found)
    ratios = []
    for metric in found:
        budget = _budget_of(metric) or {}
        u = budget.get("combined_standard_uncertainty")
        big_u = budget.get("expanded_uncertainty_95")
        if expanded is None or u is None or not big_u:
            return None
        ratios.append(float(u) / float(big_u))
    return expanded * statistics.fmean(ratios) if ratios else None


def mean_uncertainty(found: list[dict[str, Any]]) -> float | None:
    """95 % uncertainty of the mean over runs. With stored budgets, the common-mode part
    (same instrument) is averaged as fully correlated and the rest as independent; without,
    all of it is taken as independent."""
    uncs = [m["uncertainty"] for m in found]
    if any(u is None for u in uncs):
        return None
    n = len(found)
    budgets = [_budget(m) for m in found]
    if n == 1 or any(b is None for b in budgets):
        return math.sqrt(sum(u * u for u in uncs)) / n
    common, independent, factors = [], [], []
    for metric, components in zip(found, budgets, strict=True):
        assert components is not None
        c2 = sum(c["standard_uncertainty"] ** 2 for c in components
                 if c["name"].startswith(COMMON_MODE))
        i2 = sum(c["standard_uncertainty"] ** 2 for c in components
                 if not c["name"].startswith(COMMON_MODE))
        common.append(math.sqrt(c2))
        independent.append(i2)
        combined = math.sqrt(c2 + i2)
        factors.append(metric["uncertainty"] / combined if combined > 0 else 2.0)
    u_common = statistics.fmean(common)
    u_independent = math.sqrt(sum(independent)) / n
    return statistics.fmean(factors) * math.hypot(u_common, u_independent)
