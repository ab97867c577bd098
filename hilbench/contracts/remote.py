"""Device handles: a workload's typed requests over an agent link.

A procedure receives a :class:`RemoteDevice`, never the client; each workload wraps it in its
role (its package's ``remote`` module, e.g. a solver or a device role) or calls
:meth:`RemoteDevice.call` itself. Every request body is built from its Struct and every reply
decoded against its Struct; a reply that breaks the contract raises
:class:`~hilbench.wire.link.AgentError` with code ``bad_reply`` naming the key, which
fails that run and lets the campaign go on.

The link is anything with the client's ``name``, ``capabilities``, ``request`` and
``clock_offset``: an :class:`~hilbench.orchestrator.client.AgentClient`, the listener's view of
a dialled-in agent, or :class:`hilbench.orchestrator.local.LocalLink` (a driver in this process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import numpy as np

from hilbench.contracts.base import ContractError, Reply, decode, to_wire
from hilbench.contracts.capabilities import Capabilities
from hilbench.contracts.messages import reply_type
from hilbench.wire.link import AgentError, ClockOffset
from hilbench.wire.link_probe import Echo, LinkBound

R = TypeVar("R", bound=Reply)

LOAD_TIMEOUT_S = 300.0
# Generous reply deadline on top of a run's own budget (set-up, cost check, transport).
REPLY_MARGIN_S = 120.0


class Link(Protocol):
    name: str

    @property
    def capabilities(self) -> Capabilities: ...

    def request(self, cmd: str, body: dict[str, Any] | None = None,
                arrays: list[np.ndarray] | None = None, timeout_s: float | None = None,
                while_waiting: Callable[[], None] | None = None) -> Any: ...

    def clock_offset(self, probes: int = 8) -> ClockOffset: ...


class RemoteDevice:
    """The device behind one agent link, as procedures see it."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.name = link.name
        self._waiting: Callable[[], None] | None = None
        self._timeout_s: float | None = None
        # The last request's window on the orchestrator's clock (sent, reply received), which
        # a timed region the agent claims must lie inside (hilbench.orchestrator.timing_check).
        self.window: tuple[float, float] | None = None

    @property
    def capabilities(self) -> Capabilities:
        """Decoded once, at the handshake."""
        return self.link.capabilities

    def clock_offset(self, probes: int = 8) -> ClockOffset:
        return self.link.clock_offset(probes)

    def link_bound(self, echo: Echo) -> LinkBound | None:
        """What the link adds to a request shaped like ``echo``, measured by echoes (None: a
        link without a wire, a driver in this process)."""
        measure = getattr(self.link, "link_bound", None)
        return None if measure is None else measure(echo)

    @property
    def probes_link(self) -> bool:
        """Whether :meth:`link_bound` echoes a wire (False: a driver in this process)."""
        return bool(getattr(self.link, "probes_link", False))

    @property
    def link_budget_s(self) -> float:
        """The network's share of a round trip the bench operator declared for this link."""
        return float(getattr(self.link, "link_budget_s", 0.0))

    def link_burst(self, echo: Echo) -> float:
        """The slowest of a few echoes now (0 without a wire)."""
        burst = getattr(self.link, "link_burst", None)
        return 0.0 if burst is None else float(burst(echo))

    @contextlib.contextmanager
    def waiting(self, poll: Callable[[], None] | None = None,
                timeout_s: float | None = None) -> Iterator[None]:
        """Requests inside call ``poll`` while they wait (instruments drain there) and give up
        after ``timeout_s`` (default: the request's own budget plus a margin)."""
        saved = self._waiting, self._timeout_s
        self._waiting, self._timeout_s = poll, timeout_s
        try:
            yield
        finally:
            self._waiting, self._timeout_s = saved

    def call(self, cmd: str, body: Any, arrays: list[np.ndarray] | None, budget_s: float
             ) -> tuple[Reply, list[np.ndarray]]:
        """Send a typed request; its reply decoded against the contract (``bad_reply`` else)."""
        expected = reply_type(body)
        timeout = self._timeout_s if self._timeout_s is not None else budget_s
        reply = self.link.request(cmd, to_wire(body), arrays, timeout_s=timeout,
                                  while_waiting=self._waiting)
        sent, received = getattr(reply, "sent", 0.0), getattr(reply, "received", 0.0)
        self.window = (sent, received) if received else None
        try:
            typed = decode(expected, reply.body, "bad_reply", f"the {cmd} reply's")
        except ContractError as exc:
            raise AgentError(self.name, "bad_reply", str(exc), {"key": exc.key}) from None
        return typed, list(reply.arrays)
