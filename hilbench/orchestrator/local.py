"""A driver in this process behind the same link surface as an agent client.

``RemoteDevice(LocalLink(driver))`` gives a procedure (or ``hilbench qubo solve``) the very
handles a campaign uses, with the agent's own checks (:class:`hilbench.agent.dispatch.
Dispatcher`) and no sockets: the fake of every role for tests of procedure logic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from hilbench.agent.dispatch import Dispatcher
from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.contracts.capabilities import Capabilities
from hilbench.orchestrator.client import Reply
from hilbench.wire.link import AgentError, ClockOffset


class LocalLink:
    """Requests served by ``driver`` in this thread; the agent clock is this clock."""

    def __init__(self, driver: Any, name: str | None = None) -> None:
        self.dispatcher = Dispatcher(driver)
        self.name = name or driver.name
        self.stop = threading.Event()

    @property
    def capabilities(self) -> Capabilities:
        return self.dispatcher.capabilities()

    @property
    def info(self) -> dict[str, Any]:
        from hilbench.contracts.base import to_wire

        return {"agent_id": self.name, "driver": self.dispatcher.driver.name,
                "capabilities": to_wire(self.capabilities)}

    def request(self, cmd: str, body: dict[str, Any] | None = None,
                arrays: list[np.ndarray] | None = None, timeout_s: float | None = None,
                while_waiting: Callable[[], None] | None = None) -> Reply:
        sent = now()
        try:
            result = self.dispatcher.call(cmd, body or {}, list(arrays or []), self.stop)
        except DriverError as exc:
            raise AgentError(self.name, exc.code, str(exc),
                             {"key": exc.key} if exc.key else None) from None
        return Reply(result.body, result.arrays, sent, now())

    def clock_offset(self, probes: int = 8) -> ClockOffset:
        return ClockOffset(0.0, 0.0, 0.0, probes)

    def link_bound(self, echo: object) -> None:
        """No wire, nothing to measure: a driver in this process is checked by the conformance
        suite, not by a link's timing."""
        return None
