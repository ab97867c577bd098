"""What a device driver is to the agent runtime, and how drivers are found (entry points).

A driver is hosted by one agent process. The runtime calls ``configure``/``load``/``run`` in a
worker thread, one at a time, and ``stop`` from the serving thread to ask a long ``run`` to end
early. Drivers import their vendor SDK lazily, so a missing SDK is a clear :class:`DriverError`
when the driver is used, not an ImportError when hilbench starts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from hilbench.entry_points import entry_points

ENTRY_POINT_GROUP = "hilbench.drivers"


class DriverError(RuntimeError):
    """A driver could not do what was asked; ``code`` becomes the typed protocol error."""

    def __init__(self, message: str, code: str = "driver_error", key: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.key = key  # the request key at fault, when one is (``detail.key`` of the error)


@dataclass
class DriverResult:
    """What a driver command returns: a plain-typed body and optional arrays."""

    body: dict[str, Any] = field(default_factory=dict)
    arrays: list[np.ndarray] = field(default_factory=list)


@runtime_checkable
class Driver(Protocol):
    name: ClassVar[str]

    def capabilities(self) -> dict[str, Any]:
        """Workloads and modes this driver supports; sent in the handshake."""

    def configure(self, params: dict[str, Any]) -> DriverResult:
        """Apply device settings."""

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        """Put a workload into device memory (untimed)."""

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        """Do the timed work; return on-device timings and any internal power readings."""

    def close(self) -> None:
        """Release the device."""


def available_drivers() -> dict[str, str]:
    """Installed drivers: name -> "module:attribute" from the entry-point group."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_driver(name: str, options: dict[str, Any] | None = None) -> Driver:
    """Instantiate the driver registered under ``name``; unknown names list what is installed."""
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not matches:
        known = ", ".join(sorted(available_drivers())) or "none"
        raise DriverError(
            f"no driver named {name!r} is installed (installed: {known})", "no_driver"
        )
    cls = matches[0].load()
    return cls(**(options or {}))
