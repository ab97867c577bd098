"""How a simulated device tells the simulated bench meter what it is doing.

A driver running against the simulated bench opens this link to the meter's SCPI port and sends
``SIMulate:STATe <name>`` at each change (idle, preprocessing, inference, solving). The meter
stamps each change on arrival, so its readings follow what the device really did, when it did it.
"""

from __future__ import annotations

import socket

from hilbench.clock import bench_now

MAX_DEFERRED = 3 * 256  # state changes held back at most (256 single-stream samples)


class SimulatedDeviceLink:
    """A TCP connection to a :class:`hilbench.sim.SimulatedMeter` for reporting state changes."""

    def __init__(self, address: str, timeout_s: float = 5.0) -> None:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"simulated meter address must be host:port, got {address!r}")
        self.address = address
        self._sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._deferred: list[tuple[str, float]] = []

    def state(self, name: str, t: float | None = None) -> None:
        """Report that the device entered state ``name`` at ``t`` (default: now), on the
        monotonic clock it shares with the meter: stamping on arrival would add the meter's
        own latency to every state change. Deferred changes go first, in the same write."""
        stamp = bench_now() if t is None else t
        self._send([*self._deferred, (name, stamp)])
        self._deferred = []

    def defer(self, changes: list[tuple[str, float]]) -> None:
        """Stamped changes told with the next report (or once ``MAX_DEFERRED`` wait).

        For single-stream samples: a write per sample woke the meter's process between two
        samples, and the next sample paid for it (on a 2-core VM: 80 µs more between samples
        and +10 % pre-processing time). Nothing reads power during single stream, and every
        power window starts with a report, which carries these first.
        """
        self._deferred.extend(changes)
        if len(self._deferred) >= MAX_DEFERRED:
            self._send(self._deferred)
            self._deferred = []

    def _send(self, changes: list[tuple[str, float]]) -> None:
        self._sock.sendall("".join(f"SIM:STAT {name},{stamp!r}\n"
                                   for name, stamp in changes).encode())

    def close(self) -> None:
        try:
            if self._deferred:
                self._send(self._deferred)
        except OSError:
            pass  # the meter is gone: nobody to tell
        finally:
            self._deferred = []
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
