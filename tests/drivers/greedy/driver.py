"""A QUBO solver defined only here, in tests/: a greedy maximum independent set (lowest degree
first), the whole of a new driver — capabilities, load, solve — and nothing else. It reaches a
campaign through an agent like any driver (see test_greedy.py); installed, one entry point in
``hilbench.drivers`` would let hilbench spawn it too."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.dispatch import ContractDriver
from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.workloads.qubo.contract import (
    FixedTimeout,
    QuboLoad,
    QuboLoadReply,
    QuboRun,
    QuboRunReply,
    Reached,
    Solved,
)


class GreedyDriver(ContractDriver):
    name: ClassVar[str] = "greedy"

    def __init__(self) -> None:
        self.matrix: np.ndarray | None = None

    def capabilities(self) -> dict[str, Any]:
        return {"workloads": ["qubo"], "simulated": False,
                "qubo": {"solvers": ["greedy"], "timeout_range_s": [1e-3, 100.0]}}

    def load_qubo(self, body: QuboLoad, matrix: np.ndarray) -> QuboLoadReply:
        self.matrix = matrix.astype(np.int64)
        return QuboLoadReply(nodes=body.nodes)

    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        if self.matrix is None:
            raise DriverError("no workload loaded", "not_loaded")
        t_start = now()
        adjacency = (self.matrix > 0) & ~np.eye(len(self.matrix), dtype=bool)
        state = np.zeros(len(self.matrix), dtype=np.uint8)
        blocked = np.zeros(len(self.matrix), dtype=bool)
        for node in np.argsort(adjacency.sum(axis=1), kind="stable"):
            if not blocked[node]:
                state[node] = 1
                blocked |= adjacency[node]
        cost = int(state @ self.matrix @ state)
        t_end = now()
        if isinstance(body, FixedTimeout):
            return Solved(QuboRunReply(cost=cost, requested_s=body.timeout_s,
                                       actual_s=t_end - t_start, t_start=t_start, t_end=t_end),
                          state)
        gap = (cost - body.target) / abs(body.target)
        reached = [Reached(gap=g, t_s=t_end - t_start) for g in body.gaps if gap <= g]
        return Solved(QuboRunReply(cost=cost, requested_s=body.max_time_s,
                                   actual_s=t_end - t_start, t_start=t_start, t_end=t_end,
                                   reached=reached), state)
