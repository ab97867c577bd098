"""One QUBO workload solved by a driver in this process, checked as a campaign checks it.

`hilbench qubo solve` and `hilbench bench qubo-cpu` use this: the driver is found through its
entry point and reached through the same QUBO solver handle a campaign uses
(:class:`hilbench.contracts.remote.RemoteDevice` over a
:class:`hilbench.orchestrator.local.LocalLink`), so the bodies, the agent's checks, the reply's
contract and the checks of the returned state are those of a campaign run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.contracts.remote import RemoteDevice
from hilbench.sdk import LocalLink
from hilbench.workloads.qubo import bks_gap
from hilbench.workloads.qubo.check import StateCheck, is_overrun
from hilbench.workloads.qubo.contract import QuboLoadReply, QuboRunReply
from hilbench.workloads.qubo.procedures.solve import QuboWorkload, check_solution, load, run_body
from hilbench.workloads.qubo.remote import RemoteQuboSolver

LoadedWorkload = QuboWorkload


def _device(driver: Any) -> RemoteDevice:
    return driver if isinstance(driver, RemoteDevice) else RemoteDevice(LocalLink(driver))


def load_workload(
    driver: Any, nodes: int, density: float, seed: int, solvers: list[str] | None = None
) -> tuple[QuboWorkload, QuboLoadReply]:
    """Generate the workload and load it into ``driver`` (untimed); returns the load reply."""
    workload = QuboWorkload.generate(nodes, density, seed)
    return workload, load(RemoteQuboSolver(_device(driver)), workload, solvers)


@dataclass(frozen=True)
class LocalSolve:
    """One fixed-timeout run as checked here: the workload, the solver's reply, the check of
    the state it returned (and that state), and the BKS-gap to ``target`` (None when
    infeasible or without a target)."""

    workload: QuboWorkload
    solver: str
    reply: QuboRunReply
    check: StateCheck
    state: np.ndarray
    target: int | None

    @property
    def feasible(self) -> bool:
        return self.check.feasible

    @property
    def overrun(self) -> bool:
        return is_overrun(self.reply.requested_s, self.reply.actual_s)

    @property
    def gap(self) -> float | None:
        if self.target is None or not self.check.feasible:
            return None
        return bks_gap(self.check.cost, self.target)

    def summary(self) -> dict[str, Any]:
        """What a user reads (``qubo solve --json``), the state left out."""
        return {
            "nodes": self.workload.nodes,
            "density": self.workload.density,
            "seed": self.workload.seed,
            "solver": self.solver,
            "cost": self.check.cost,
            "feasible": self.check.feasible,
            "set_size": self.check.set_size,
            "violated_edges": self.check.violated_edges,
            "requested_s": self.reply.requested_s,
            "actual_s": self.reply.actual_s,
            "overrun": self.overrun,
            "gap": self.gap,
            "target": self.target,
            "solver_params": self.reply.solver_params,
        }


def solve_fixed_timeout(
    driver: Any,
    workload: QuboWorkload,
    solver: str,
    timeout_s: float,
    run_seed: int,
    target: int | None,
) -> LocalSolve:
    """One fixed-timeout run, checked."""
    solved = RemoteQuboSolver(_device(driver)).solve(
        run_body("fixed_timeout", solver, run_seed, timeout_s=timeout_s))
    check = check_solution(workload, solved)
    return LocalSolve(workload, solver, solved.reply, check, solved.state, target)
