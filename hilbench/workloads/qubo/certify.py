"""A proven bound on a workload's optimum from OR-Tools CP-SAT, within a time limit.

Maximum independent set as a CP-SAT model: one Boolean per node, ``x_u + x_v <= 1`` per edge,
maximise the sum. Whatever the time limit, CP-SAT reports the best set it found (feasible, so a
valid best-known candidate) and a proven upper bound on the set size; when the two meet the
optimum is certified. The bound on the QUBO cost is minus the size bound: no solver can go
below it. Runs single-threaded with a fixed seed so that the figure can be reproduced.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.workloads.qubo.generator import workload_edges


@dataclass(frozen=True)
class CertifiedBound:
    """What CP-SAT proved for one workload in its time limit."""

    nodes: int
    density: float
    seed: int
    best_cost: int  # minus the size of the best independent set found
    cost_bound: int  # proven: no state costs less than this
    optimal: bool
    time_limit_s: float
    wall_s: float
    state: np.ndarray  # the best independent set found, 0/1

    def detail(self) -> dict[str, Any]:
        from hilbench.workloads.qubo.tabu import installed_version

        return {
            "method": "OR-Tools CP-SAT: max sum x, x_u + x_v <= 1 per edge",
            "status": "optimal" if self.optimal else "feasible",
            "best_cost": self.best_cost,
            "cost_bound": self.cost_bound,
            "time_limit_s": self.time_limit_s,
            "wall_s": self.wall_s,
            "workers": 1,
            "ortools": installed_version("ortools"),
        }


def certify(nodes: int, density: float, seed: int, time_limit_s: float) -> CertifiedBound:
    """Best independent set and proven size bound of workload (nodes, density, seed)."""
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        raise RuntimeError("proven bounds need OR-Tools: pip install 'hilbench[targets]'") from None
    u, v = workload_edges(nodes, density, seed)
    model = cp_model.CpModel()
    x = [model.NewBoolVar(f"x{i}") for i in range(nodes)]
    for a, b in zip(u.tolist(), v.tolist(), strict=True):
        model.AddBoolOr([x[a].Not(), x[b].Not()])
    model.Maximize(sum(x))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    started = time.monotonic()
    status = solver.Solve(model)
    wall = time.monotonic() - started
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(
            f"CP-SAT found no independent set for n={nodes} d={density} seed={seed} "
            f"in {time_limit_s} s (status {solver.StatusName(status)})"
        )
    state = np.array([solver.Value(var) for var in x], dtype=np.uint8)
    return CertifiedBound(
        nodes=nodes,
        density=density,
        seed=seed,
        best_cost=-int(state.sum()),
        cost_bound=-math.floor(solver.BestObjectiveBound() + 1e-9),  # sizes are integers
        optimal=status == cp_model.OPTIMAL,
        time_limit_s=float(time_limit_s),
        wall_s=wall,
        state=state,
    )
