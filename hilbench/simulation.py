"""What in a run is simulated: one line that every table and report carries with its figures.

Drivers declare it in their capabilities (``"simulated": true`` and a one-line
``"simulation"``), instruments in their :class:`~hilbench.power.source.SourceInfo` (or by
being the simulated bench meter). A run built on any of them is stored as simulated, so a
simulated figure cannot be mistaken for a measured one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

LABEL = "simulated"


class _Simulable(Protocol):
    @property
    def simulated(self) -> bool: ...

    @property
    def simulation(self) -> str: ...


def device_simulation(agent_id: str, capabilities: Mapping[str, Any]) -> str:
    """'' for a real device, else what its driver says is simulated."""
    if not capabilities.get("simulated"):
        return ""
    what = str(capabilities.get("simulation") or "simulated device")
    return f"device {agent_id}: {what}"


def run_simulation(agents: Mapping[str, Mapping[str, Any]], instruments: Iterable[Any]) -> str:
    """The run's simulation line ('' when everything in it is real).

    ``agents`` maps agent id to its handshake info (with ``capabilities``); ``instruments``
    are the run's instruments, each with ``simulated``/``simulation`` and ``spec.id``.
    """
    parts = [device_simulation(agent, info.get("capabilities") or {})
             for agent, info in agents.items()]
    for inst in instruments:
        if inst.simulated:
            parts.append(f"instrument {inst.spec.id}: {inst.simulation}")
    return "; ".join(p for p in parts if p)


def mark(text: str, simulated: bool) -> str:
    """``text`` as a table cell shows it: a figure built on a simulation says so."""
    return f"{text} ({LABEL})" if simulated and text not in ("", "—") else text
