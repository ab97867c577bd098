"""The hooks the orchestrator offers a recording or a replay: the doors the orchestrator's
process talks through, each with one hook that a tap (a cassette's recorder or replay,
:mod:`hilbench.cassette.channels`) watches or stands in for. The orchestrator offers the hook;
the cassette layer above installs a tap into it, so the orchestrator never imports the cassette.

- the clock (:func:`hilbench.clock.use`): every reading on the orchestrator's thread;
- an agent link's socket (:meth:`Tap.agent_socket`, called by
  :meth:`hilbench.orchestrator.client.AgentClient.connect`): messages after CurveZMQ;
- a helper process (:meth:`Tap.spawn` / :meth:`Tap.spawned`, called by
  :func:`hilbench.orchestrator.spawn.spawn_announcing`): spawned agents and simulated meters;
- VISA resources, which the tap itself hooks in pyvisa while installed (any instrument driver
  that opens one through a ``pyvisa.ResourceManager``);
- the orchestrator's reference responder (:meth:`Tap.reference_bound`, called by
  :mod:`hilbench.orchestrator.reference_link`; :meth:`Tap.reference_burst` likewise): its
  echoes run on a thread the clock does not record, so a recording stores each bound and
  burst and a replay hands them back.

Nothing here names a driver or an instrument. Without an installed tap every hook is one
``None`` check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol


class Tap(Protocol):
    def agent_socket(self, link: str, address: str, sock: Any) -> Any: ...

    def spawn(self, name: str, args: list[str], handover: Any) -> Any | None: ...

    def spawned(self, name: str, address: str) -> None: ...

    def reference_bound(self, measure: Callable[[], Any]) -> Any: ...

    def reference_burst(self, measure: Callable[[], float]) -> float | None: ...


_active: Tap | None = None


def active() -> Tap | None:
    """The installed tap, or None (the usual case)."""
    return _active


@contextlib.contextmanager
def installed(tap: Tap) -> Iterator[Tap]:
    global _active
    if _active is not None:
        raise RuntimeError("a cassette tap is installed already (one recording or replay per "
                           "process at a time)")
    _active = tap
    try:
        yield tap
    finally:
        _active = None
