"""``maxcut-cpu``: a small driver that serves the maxcut role on this CPU (the agent runs it:
``hilbench agent --driver maxcut-cpu``, or ``driver = "maxcut-cpu"`` in a campaign's
``[[agents]]``). On the simulated bench it tells the meter when it solves and when it idles,
as the cpu driver does, so an instrument's figures follow the real work."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.dispatch import ContractDriver
from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.sim.device_link import SimulatedDeviceLink, relink
from hilbench_maxcut.contract import (
    MAX_NODES,
    MaxCutLoad,
    MaxCutLoadReply,
    MaxCutRun,
    MaxCutRunReply,
)
from hilbench_maxcut.solver import local_search

SOLVERS = ("local_search",)


class MaxCutCpuDriver(ContractDriver):
    """MaxCut by one-flip local search on this CPU."""

    name: ClassVar[str] = "maxcut-cpu"

    def __init__(self, sim_meter: str | None = None) -> None:
        self._sim: SimulatedDeviceLink | None = None
        if sim_meter:
            self.link_meter(sim_meter)
        self._graph: tuple[int, np.ndarray] | None = None

    def link_meter(self, address: str) -> None:
        self._sim = relink(self._sim, address)

    def capabilities(self) -> dict[str, Any]:
        return {
            "simulated": False,  # a real CPU does the work
            "workloads": ["maxcut"],
            "meter_link": True,
            "maxcut": {"solvers": list(SOLVERS), "max_nodes": MAX_NODES},
        }

    def load_maxcut(self, body: MaxCutLoad, edges: np.ndarray) -> MaxCutLoadReply:
        self._graph = (body.nodes, np.array(edges, dtype=np.int32, copy=True))
        return MaxCutLoadReply(nodes=body.nodes, edges=body.edges)

    def cut(self, body: MaxCutRun, stop: threading.Event) -> tuple[MaxCutRunReply, np.ndarray]:
        if self._graph is None:
            raise DriverError("no graph loaded: send load first", "not_loaded")
        nodes, edges = self._graph
        self._state("solving")
        t_start = now()
        try:
            found = local_search(nodes, edges, body.restarts, body.seed, stop)
        finally:
            t_end = now()
            self._state("idle")
        reply = MaxCutRunReply(solver=body.solver, cut=found.cut, t_start=t_start, t_end=t_end,
                               actual_s=t_end - t_start)
        return reply, found.side

    def _state(self, state: str) -> None:
        if self._sim is not None:
            self._sim.state(state)

    def close(self) -> None:
        self._graph = None
        if self._sim is not None:
            self._sim.close()
