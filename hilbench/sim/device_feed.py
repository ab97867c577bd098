"""What a simulated device tells its instruments: its power state and its marker line, over time.

The simulated fast instruments (:mod:`hilbench.sim.js220`, and the LPM01A's emulator in its
plugin) follow a device through a :class:`DeviceFeed`: a state timeline on the bench clock
(:func:`hilbench.clock.bench_now`), priced by a :class:`~hilbench.sim.power_model.DevicePowerModel`
as the simulated DMM does, plus the device's marker pin (the GPIO it toggles around a timed
region). Devices reach it as they reach the simulated meter: through
:class:`hilbench.sim.device_link.SimulatedDeviceLink`, whose lines the feed's loopback TCP port
reads (``SIM:STAT <state>,<t>``, ``SIM:MARK <level>,<t>``, ``SIM:HOLD <t>``, ``SIM:LIVE``), or
in process with :meth:`DeviceFeed.set_state` and :meth:`DeviceFeed.mark`. Because the truth is
kept here, any window's true energy and every true marker edge are known.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import socket
import socketserver
import threading

import numpy as np

from hilbench.clock import bench_now
from hilbench.sim.power_model import DevicePowerModel, StateTimeline

log = logging.getLogger(__name__)


class DeviceFeed:
    """A simulated device's power states and marker line, told in time order."""

    def __init__(self, model: DevicePowerModel, *, initial_state: str = "idle",
                 host: str = "127.0.0.1") -> None:
        model.watts(initial_state)
        self.model = model
        self.host = host
        self._lock = threading.RLock()
        self._timeline = StateTimeline(initial_state=initial_state, t0=bench_now())
        self._mark_times: list[float] = [self._timeline.t0]
        self._mark_levels: list[int] = [0]
        self._told_until: float | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- what the device tells ------------------------------------------------------------

    def set_state(self, name: str, t: float | None = None) -> float:
        self.model.watts(name)  # KeyError naming the known states
        with self._lock:
            stamp = bench_now() if t is None else float(t)
            self._timeline.set(stamp, name)
            return stamp

    def mark(self, level: int, t: float | None = None) -> float:
        """The marker pin went to ``level`` (0 or 1) at ``t`` (default now)."""
        if level not in (0, 1):
            raise ValueError(f"marker level must be 0 or 1, got {level!r}")
        with self._lock:
            stamp = bench_now() if t is None else float(t)
            if stamp < self._mark_times[-1]:
                raise ValueError(f"marker edge at {stamp} is earlier than the last one at "
                                 f"{self._mark_times[-1]}")
            if level != self._mark_levels[-1]:
                self._mark_times.append(stamp)
                self._mark_levels.append(level)
            return stamp

    def hold(self, told_until: float) -> None:
        with self._lock:
            self._told_until = float(told_until)

    def live(self) -> None:
        with self._lock:
            self._told_until = None

    def told_until(self) -> float:
        """Up to when the device's state is known: now, or where a held link left it."""
        with self._lock:
            t = bench_now()
            return t if self._told_until is None else min(t, self._told_until)

    # --- the truth, and what an instrument sees ---------------------------------------------

    def mean_power(self, t_starts: np.ndarray, width_s: float) -> np.ndarray:
        """True mean power over ``[t, t + width_s)`` for each ``t`` (vectorised)."""
        with self._lock:
            t = np.asarray(t_starts, dtype=np.float64)
            energy = (self._timeline.cumulative_energy(self.model, t + width_s)
                      - self._timeline.cumulative_energy(self.model, t))
        return energy / width_s

    def true_energy(self, t_start: float, t_end: float) -> float:
        with self._lock:
            return self._timeline.energy(self.model, t_start, t_end)

    def line(self, t: np.ndarray) -> np.ndarray:
        """The marker pin's level at each time in ``t``."""
        with self._lock:
            times = np.asarray(self._mark_times)
            levels = np.asarray(self._mark_levels, dtype=np.uint8)
        i = np.searchsorted(times, np.asarray(t, dtype=np.float64), side="right") - 1
        return levels[np.maximum(i, 0)]

    def edges(self, t_start: float = -np.inf, t_end: float = np.inf) -> list[tuple[float, int]]:
        """True marker edges (time, level after) within ``[t_start, t_end)``."""
        with self._lock:
            lo = bisect.bisect_left(self._mark_times, t_start, lo=1)
            hi = bisect.bisect_left(self._mark_times, t_end, lo=1)
            return list(zip(self._mark_times[lo:hi], self._mark_levels[lo:hi], strict=True))

    # --- the link's loopback port -------------------------------------------------------------

    def start(self) -> str:
        """Listen on loopback (a free port); returns ``host:port`` for a device link."""
        if self._server is None:
            self._server = _Server((self.host, 0), _Handler, feed=self)
            self._thread = threading.Thread(target=self._server.serve_forever,
                                            kwargs={"poll_interval": 0.05}, daemon=True,
                                            name="device-feed")
            self._thread.start()
        return self.address

    @property
    def address(self) -> str:
        if self._server is None:
            raise RuntimeError("the device feed is not listening; call start() first")
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
        self._server = None

    def execute(self, line: str) -> str | None:
        """One device-link line, and the reply to a ``SIM:SYNC?`` (everything before it on the
        connection is told); anything else is logged and ignored (the link never sends it, and
        a feed has no error queue to put it in)."""
        header, _, arg = line.strip().partition(" ")
        args = [a.strip() for a in arg.split(",")] if arg else []
        try:
            if header == "SIM:STAT" and args:
                self.set_state(args[0], float(args[1]) if len(args) > 1 else None)
            elif header == "SIM:MARK" and args:
                self.mark(int(args[0]), float(args[1]) if len(args) > 1 else None)
            elif header == "SIM:HOLD" and args:
                self.hold(float(args[0]))
            elif header == "SIM:LIVE":
                self.live()
            elif header == "SIM:SYNC?":
                return "1"
            elif header:
                log.warning("device feed: ignoring %r", line.strip()[:80])
        except (KeyError, ValueError) as exc:
            log.warning("device feed: bad line %r: %s", line.strip()[:80], exc)
        return None

    def __enter__(self) -> DeviceFeed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, *, feed: DeviceFeed) -> None:
        from hilbench.wire.keys import is_loopback

        if not is_loopback(f"tcp://{address[0]}:0"):
            raise ValueError(f"the device feed listens on loopback only, not {address[0]!r}")
        self.feed = feed
        super().__init__(address, handler)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):
            for raw in self.rfile:
                reply = self.server.feed.execute(raw.decode("ascii", errors="replace"))
                if reply is not None:
                    self.wfile.write(reply.encode("ascii") + b"\n")
                    self.wfile.flush()
