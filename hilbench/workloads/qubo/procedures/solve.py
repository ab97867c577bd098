"""The one call path of every QUBO run: build the workload, load it, solve it, check the answer.

``qubo`` (fixed timeout, time to solution), ``largest_workload`` and ``hilbench qubo solve`` all
go through these functions with a :class:`~hilbench.workloads.qubo.contract.QuboSolver` — a
remote handle over an agent, or the same handle over a driver in this process — so the bodies
sent and the checks made of the answer are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hilbench.workloads.qubo import SparseQubo, generate_qubo
from hilbench.workloads.qubo.check import StateCheck, check_state, state_vector, verify_claim
from hilbench.workloads.qubo.contract import (
    FixedTimeout,
    QuboLoad,
    QuboLoadReply,
    QuboRun,
    QuboSolver,
    Solved,
    TimeToSolution,
)


@dataclass
class QuboWorkload:
    nodes: int
    density: float
    seed: int
    matrix: np.ndarray
    sparse: SparseQubo

    @classmethod
    def generate(cls, nodes: int, density: float, seed: int) -> QuboWorkload:
        matrix = generate_qubo(nodes, density, seed)
        return cls(nodes, density, seed, matrix, SparseQubo.from_matrix(matrix))


def load(solver: QuboSolver, workload: QuboWorkload, solvers: Sequence[str] | None = None
         ) -> QuboLoadReply:
    """Load the workload (untimed), preparing only ``solvers`` (default: all the driver has)."""
    body = QuboLoad(nodes=workload.nodes, density=workload.density, seed=workload.seed,
                    solvers=list(solvers) if solvers else None)
    return solver.load_qubo(body, workload.matrix)


def run_body(scenario: str, solver: str, seed: int, *, timeout_s: float | None = None,
             target: int | None = None, gaps: Sequence[float] = (),
             max_time_s: float | None = None) -> QuboRun:
    """The run request of one scenario."""
    if scenario == "fixed_timeout":
        assert timeout_s is not None
        return FixedTimeout(workload="qubo", solver=solver, timeout_s=timeout_s, seed=seed)
    assert target is not None and max_time_s is not None
    return TimeToSolution(workload="qubo", solver=solver, target=target, gaps=list(gaps),
                          max_time_s=max_time_s, seed=seed)


def check_solution(workload: QuboWorkload, solved: Solved) -> StateCheck:
    """The returned state re-scored here and the agent's claimed cost verified
    (:class:`~hilbench.workloads.qubo.check.SolutionError` when either fails)."""
    arrays = [] if solved.state is None else [solved.state]
    check = check_state(workload.sparse, state_vector(arrays, workload.nodes))
    verify_claim(check, solved.reply.cost)
    return check
