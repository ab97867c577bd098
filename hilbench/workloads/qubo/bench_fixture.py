"""What the QUBO workload gives the core's daemon and store benchmarks
(``WorkloadPlugin.bench_fixture``; see :mod:`hilbench.bench.bench_campaign`): campaigns of
millisecond QUBO units on one CPU agent, and stored runs shaped like a fixed-timeout sweep's."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hilbench import __version__
from hilbench.documents import (
    Event,
    Metric,
    PhaseStart,
    PhaseStop,
    RunStart,
    RunStop,
    Samples,
    new_uid,
)

LABEL = "QUBO"
SIZES = (10, 15, 20, 25)  # nodes: units of a few milliseconds
DENSITY = 0.05

# The stored runs' grid: sizes, seeds, solvers and timeouts a large sweep holds.
GRID = list(itertools.product((100, 250, 500, 1000, 2500), range(5), ("sa", "tabu"),
                              (0.001, 0.01, 0.1, 1.0)))


def tables(agent: str, units: int, timeout_s: float, sizes: Sequence[int] | None = None,
           instances: int | None = None) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """The campaign tables of about ``units`` fixed-timeout SA units on ``agent``, and the
    campaign's repetitions: each unit its own instance (``instances`` None), or ``instances``
    instances per size repeated until ``units`` are reached."""
    nodes = list(sizes or SIZES)
    if instances is None:
        seeds, repetitions = -(-units // len(nodes)), 1
    else:
        seeds, repetitions = instances, max(1, math.ceil(units / (len(nodes) * instances)))
    table = {"agent": agent, "scenario": "fixed_timeout", "nodes": nodes,
             "densities": [DENSITY], "seeds": list(range(seeds)), "solvers": ["sa"],
             "timeouts_s": [timeout_s]}
    return {"qubo": [table]}, repetitions


def write_run(writer: Callable[[Any], None], campaign_uid: str, index: int, t: float,
              rng: np.random.Generator) -> tuple[str, float]:
    """Write run ``index`` of a fixed-timeout sweep (load and solve phases, a solution event,
    a batch of power samples, the metrics such a run stores) starting at ``t``; return its uid
    and when the next run starts."""
    n, seed, solver, timeout = GRID[index % len(GRID)]
    rep = index // len(GRID)
    key = f"qubo/fixed_timeout/n={n}/d=0.05/seed={seed}/{solver}/timeout={timeout:g}/rep={rep}"
    params = {"workload": "qubo", "scenario": "fixed_timeout", "nodes": n, "density": 0.05,
              "seed": seed, "solver": solver, "timeout_s": timeout, "repetition": rep,
              "target": -n // 10, "target_source": "published"}
    run = new_uid()
    writer(RunStart(run, campaign_uid, key, "qubo.fixed_timeout", params, {"cpu0": {}}, t,
                    time.time(), __version__))
    load, solve = new_uid(), new_uid()
    writer(PhaseStart(load, run, "load", t, {}))
    writer(PhaseStop(load, run, t + 0.01, "success"))
    writer(PhaseStart(solve, run, "solve", t + 0.01, {}))
    writer(Event(run, solve, "solution", t + 0.01 + timeout, {"cost": -n // 10}))
    ts = t + 0.01 + np.arange(20) * 0.025
    writer(Samples(run, solve, "dmm", "W", ts, 30 + rng.standard_normal(20)))
    writer(PhaseStop(solve, run, t + 0.02 + timeout, "success"))
    gap = abs(rng.normal(0.05, 0.02))
    feasible = rng.random() > 0.02
    actual = timeout * (1.02 if rng.random() > 0.05 else 1.3)
    for metric, value, unit, unc in (
        ("requested_s", timeout, "s", None),
        ("actual_s", actual, "s", None),
        ("overrun", float(actual > timeout * 1.05 and actual - timeout > 5e-4), "", None),
        ("feasible", float(feasible), "", None),
        ("cost", float(-n // 10), "", None),
        ("bks_gap", gap if feasible else None, "", None),
        ("run_time_s", timeout * 1.02, "s", 1e-6),
        ("avg_power_w", 30 + rng.normal(), "W", 0.4),
        ("energy_j", (30 + rng.normal()) * timeout, "J", 0.01),
    ):
        writer(Metric(run, metric, value, unit, unc,
                      meta={"target": -n // 10, "target_source": "published"}
                      if metric == "bks_gap" else {}))
    status = "success" if rng.random() > 0.01 else "fail"
    writer(RunStop(run, t + 0.03 + timeout, status, "" if status == "success" else "bench"))
    return run, t + (0.05 + timeout)
