"""One QUBO workload solved by a driver in this process, checked as a campaign checks it.

`hilbench qubo solve` and `hilbench bench qubo-cpu` use this: the driver is found through its
entry point and receives the same ``load`` and ``run`` bodies an agent would pass it; the
returned state is re-scored, tested for independence and the claimed cost verified here, exactly
as the campaign procedure does.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.agent.driver import Driver
from hilbench.workloads.qubo import SparseQubo, bks_gap, generate_qubo
from hilbench.workloads.qubo.check import (
    check_state,
    is_overrun,
    state_vector,
    verify_claim,
)


@dataclass
class LoadedWorkload:
    nodes: int
    density: float
    seed: int
    matrix: np.ndarray
    sparse: SparseQubo


def load_workload(
    driver: Driver, nodes: int, density: float, seed: int, solvers: list[str] | None = None
) -> tuple[LoadedWorkload, dict[str, Any]]:
    """Generate the workload and load it into ``driver`` (untimed); returns the load reply."""
    matrix = generate_qubo(nodes, density, seed)
    params: dict[str, Any] = {"workload": "qubo", "nodes": nodes, "density": density, "seed": seed}
    if solvers:
        params["solvers"] = solvers
    reply = driver.load(params, [matrix])
    return LoadedWorkload(nodes, density, seed, matrix, SparseQubo.from_matrix(matrix)), reply.body


def solve_fixed_timeout(
    driver: Driver,
    workload: LoadedWorkload,
    solver: str,
    timeout_s: float,
    run_seed: int,
    target: int | None,
) -> dict[str, Any]:
    """One fixed-timeout run, checked; the summary a user reads (gap None when infeasible) and
    the returned ``state``."""
    reply = driver.run(
        {
            "workload": "qubo",
            "mode": "fixed_timeout",
            "solver": solver,
            "timeout_s": timeout_s,
            "seed": run_seed,
        },
        threading.Event(),
    )
    body = reply.body
    state = state_vector(reply.arrays, workload.nodes)
    check = check_state(workload.sparse, state)
    verify_claim(check, body.get("cost"))
    requested, actual = float(body["requested_s"]), float(body["actual_s"])
    return {
        "nodes": workload.nodes,
        "density": workload.density,
        "seed": workload.seed,
        "solver": solver,
        "cost": check.cost,
        "feasible": check.feasible,
        "set_size": check.set_size,
        "violated_edges": check.violated_edges,
        "requested_s": requested,
        "actual_s": actual,
        "overrun": is_overrun(requested, actual),
        "gap": bks_gap(check.cost, target) if (target is not None and check.feasible) else None,
        "target": target,
        "solver_params": body.get("solver_params", {}),
        "state": state,
    }
