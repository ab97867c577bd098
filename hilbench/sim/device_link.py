"""How a simulated device tells the simulated bench meter what it is doing.

A driver running against the simulated bench opens this link to the meter's SCPI port and sends
``SIMulate:STATe <name>`` at each change (idle, preprocessing, inference, solving). The meter
stamps each change on arrival, so its readings follow what the device really did, when it did it.
"""

from __future__ import annotations

import socket

from hilbench.clock import bench_now


class SimulatedDeviceLink:
    """A TCP connection to a :class:`hilbench.sim.SimulatedMeter` for reporting state changes."""

    def __init__(self, address: str, timeout_s: float = 5.0) -> None:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"simulated meter address must be host:port, got {address!r}")
        self.address = address
        self._sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def state(self, name: str, t: float | None = None) -> None:
        """Report that the device entered state ``name`` at ``t`` (default: now), on the
        monotonic clock it shares with the meter: stamping on arrival would add the meter's
        own latency to every state change."""
        stamp = bench_now() if t is None else t
        self._sock.sendall(f"SIM:STAT {name},{stamp!r}\n".encode())

    def close(self) -> None:
        self._sock.close()


def relink(previous: SimulatedDeviceLink | None, address: str) -> SimulatedDeviceLink:
    """A driver's new link to the meter at ``address`` (``configure {sim_meter}``), the previous
    one closed; a meter it cannot reach is the request's fault, named by its key."""
    from hilbench.agent.driver import DriverError

    try:
        link = SimulatedDeviceLink(address)
    except (OSError, ValueError) as exc:
        raise DriverError(f"cannot reach the simulated meter at {address}: {exc}",
                          "bad_arguments", key="sim_meter") from exc
    if previous is not None:
        previous.close()
    return link
