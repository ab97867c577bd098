"""One QUBO workload solved by a driver in this process, checked as a campaign checks it.

`hilbench qubo solve` and `hilbench bench qubo-cpu` use this: the driver is found through its
entry point and reached through the same QUBO solver handle a campaign uses
(:class:`hilbench.contracts.remote.RemoteDevice` over a
:class:`hilbench.orchestrator.local.LocalLink`), so the bodies, the agent's checks, the reply's
contract and the checks of the returned state are those of a campaign run.
"""

from __future__ import annotations

from typing import Any

from hilbench.contracts.base import to_wire
from hilbench.contracts.remote import RemoteDevice
from hilbench.sdk import LocalLink
from hilbench.workloads.qubo import bks_gap
from hilbench.workloads.qubo.check import is_overrun
from hilbench.workloads.qubo.procedures.solve import QuboWorkload, check_solution, load, run_body
from hilbench.workloads.qubo.remote import RemoteQuboSolver

LoadedWorkload = QuboWorkload


def _device(driver: Any) -> RemoteDevice:
    return driver if isinstance(driver, RemoteDevice) else RemoteDevice(LocalLink(driver))


def load_workload(
    driver: Any, nodes: int, density: float, seed: int, solvers: list[str] | None = None
) -> tuple[QuboWorkload, dict[str, Any]]:
    """Generate the workload and load it into ``driver`` (untimed); returns the load reply."""
    workload = QuboWorkload.generate(nodes, density, seed)
    return workload, to_wire(load(RemoteQuboSolver(_device(driver)), workload, solvers))


def solve_fixed_timeout(
    driver: Any,
    workload: QuboWorkload,
    solver: str,
    timeout_s: float,
    run_seed: int,
    target: int | None,
) -> dict[str, Any]:
    """One fixed-timeout run, checked; the summary a user reads (gap None when infeasible) and
    the returned ``state``."""
    solved = RemoteQuboSolver(_device(driver)).solve(
        run_body("fixed_timeout", solver, run_seed, timeout_s=timeout_s))
    check = check_solution(workload, solved)
    reply = solved.reply
    return {
        "nodes": workload.nodes,
        "density": workload.density,
        "seed": workload.seed,
        "solver": solver,
        "cost": check.cost,
        "feasible": check.feasible,
        "set_size": check.set_size,
        "violated_edges": check.violated_edges,
        "requested_s": reply.requested_s,
        "actual_s": reply.actual_s,
        "overrun": is_overrun(reply.requested_s, reply.actual_s),
        "gap": bks_gap(check.cost, target) if (target is not None and check.feasible) else None,
        "target": target,
        "solver_params": reply.solver_params,
        "state": solved.state,
    }
