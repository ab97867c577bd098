"""The :class:`~hilbench.workloads.qubo.contract.QuboSolver` role over an agent link: what a
QUBO procedure calls on the device it is given (``RemoteQuboSolver(device)``)."""

from __future__ import annotations

import threading

import numpy as np

from hilbench.contracts.remote import REPLY_MARGIN_S, RemoteDevice
from hilbench.workloads.qubo import contract as qubo


class RemoteQuboSolver:
    """:class:`~hilbench.workloads.qubo.contract.QuboSolver` over an agent link."""

    def __init__(self, device: RemoteDevice) -> None:
        self.device = device

    def load_qubo(self, body: qubo.QuboLoad, matrix: np.ndarray) -> qubo.QuboLoadReply:
        reply, _ = self.device.call("load", body, [matrix], REPLY_MARGIN_S)
        assert isinstance(reply, qubo.QuboLoadReply)
        return reply

    def solve(self, body: qubo.QuboRun, stop: threading.Event | None = None) -> qubo.Solved:
        budget = body.timeout_s if isinstance(body, qubo.FixedTimeout) else body.max_time_s
        reply, arrays = self.device.call("run", body, None, budget + REPLY_MARGIN_S)
        assert isinstance(reply, qubo.QuboRunReply)
        # The state is checked by the procedure (a missing one fails the run as bad_solution).
        return qubo.Solved(reply, arrays[0] if len(arrays) == 1 else None)  # type: ignore[arg-type]
