"""An emulated ST LPM01A (PowerShield) on a real pseudo-terminal.

:class:`Lpm01aEmulator` opens a pty and speaks the PowerShield's serial protocol on it (as
:mod:`hilbench_drivers.lpm01a.protocol` describes it): host control, configuration commands
acknowledged or refused with an ``Error detail``, and, between ``start`` and ``stop``, the data
stream in real time at the configured frequency — ASCII or binary samples of the current it
supplies (or the energy of each sample period), a timestamp record each second, and an
``event`` record before the first sample that saw an edge of the configured kind on its D7
input. What it measures is a :class:`~hilbench.sim.device_feed.DeviceFeed` (the simulated
device's power states and marker pin, wired to D7), with a timebase of its own
(``drift_ppm``), an input latency on D7 (``event_latency_s``) and a calibration error; the
truth stays with the feed and :meth:`Lpm01aEmulator.bench_time`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import threading
import tty
from dataclasses import dataclass

import numpy as np

from hilbench.clock import bench_now
from hilbench.sim.device_feed import DeviceFeed

from . import protocol as p

BOARD_ID = "hilbench-sim"
FIRMWARE_VERSION = "1.0.6"
CHUNK_S = 0.01  # the stream is written every 10 ms


@dataclass
class _Config:
    host_control: bool = False
    freq_hz: int = 100
    acqtime_s: float = 10.0
    binary: bool = False
    energy: bool = False
    volt_v: float = 3.3
    trigdelay_s: float = 0.001
    event_edge: str | None = None  # "ris" or "fal" on D7, None: no events


class Lpm01aEmulator:
    """A PowerShield on a pty; ``path`` is the serial port to open. Use as a context manager."""

    def __init__(self, feed: DeviceFeed, *, drift_ppm: float = 0.0,
                 event_latency_s: float = 2e-6, gain_error: float = 0.0,
                 noise_std_a: float = 0.0, seed: int | None = None) -> None:
        self.feed = feed
        self.drift_ppm = float(drift_ppm)
        self.event_latency_s = float(event_latency_s)
        self.gain_error = float(gain_error)
        self.noise_std_a = float(noise_std_a)
        self._rng = np.random.default_rng(seed)
        self._config = _Config()
        self._lock = threading.RLock()
        self._master = self._slave = -1
        self.path = ""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._acq_origin: float | None = None  # bench time of sample 0
        self._sent = 0  # samples written in the current acquisition
        self._events = 0
        self.commands: list[str] = []  # every command received, for tests

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> str:
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        self._stop.clear()
        for target, name in ((self._serve_commands, "lpm01a-rx"), (self._stream, "lpm01a-tx")):
            thread = threading.Thread(target=target, daemon=True, name=name)
            thread.start()
            self._threads.append(thread)
        return self.path

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._master = self._slave = -1

    def __enter__(self) -> Lpm01aEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def rate(self) -> float:
        """Samples per bench second: the nominal frequency on a drifting timebase."""
        return self._config.freq_hz * (1.0 + self.drift_ppm * 1e-6)

    def bench_time(self, sample: np.ndarray | int) -> np.ndarray:
        """When (bench clock) sample ``sample`` of the current acquisition began."""
        assert self._acq_origin is not None
        return self._acq_origin + np.asarray(sample, dtype=np.float64) / self.rate

    # --- commands -------------------------------------------------------------------------

    def _serve_commands(self) -> None:
        pending = b""
        while not self._stop.is_set():
            ready, _, _ = select.select([self._master], [], [], 0.05)
            if not ready:
                continue
            try:
                pending += os.read(self._master, 4096)
            except OSError:
                return
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                command = raw.decode("ascii", errors="replace").strip("\r\0 ")
                if command:
                    self.commands.append(command)
                    self._handle(command)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._stop.is_set():
            try:
                written = os.write(self._master, view)
            except BlockingIOError:
                select.select([], [self._master], [], 0.05)
                continue
            except OSError:
                return
            view = view[written:]

    def _reply(self, command: str, error: str | None = None, value: str = "") -> None:
        if error is None:
            text = f"{p.PROMPT}ack {command}{' ' + value if value else ''}\r\n"
        else:
            text = f"{p.PROMPT}error {command}\r\n{p.PROMPT}Error detail: {error}\r\n"
        self._write(text.encode())

    def _handle(self, command: str) -> None:
        name, *args = command.split()
        with self._lock:
            c = self._config
            if name == "stop":
                self._finish(command)
                return
            if self._acq_origin is not None:
                self._reply(command, "acquisition running, send stop first")
                return
            if name in ("powershield", "version", "htc", "help", "echo"):
                value = {"powershield": f"{BOARD_ID} 0001", "version": FIRMWARE_VERSION,
                         "echo": " ".join(args)}.get(name, "")
                c.host_control = c.host_control or name == "htc"
                self._reply(command, value=value)
                return
            if not c.host_control:
                self._reply(command, "host control required (send htc first)")
                return
            try:
                error = self._configure(name, args)
            except ValueError as exc:
                error = f"bad argument ({exc})"
            self._reply(command, error)
            if error is None and name == "start":
                self._begin()

    # complexity: the emulated instrument's command table: one branch per command, as its manual
    # lists them
    def _configure(self, name: str, args: list[str]) -> str | None:  # noqa: C901
        c = self._config
        arg = args[0] if args else ""
        if name == "freq":
            hz = round(p.parse_number(arg))
            if hz not in p.FREQUENCIES_HZ:
                return f"frequency {arg} not supported"
            c.freq_hz = hz
        elif name == "acqtime":
            seconds = p.parse_number(arg)
            c.acqtime_s = np.inf if seconds in (0.0, np.inf) else seconds
        elif name == "format":
            if arg not in ("ascii_dec", "bin_hexa"):
                return f"format {arg} not supported"
            c.binary = arg == "bin_hexa"
        elif name == "output":
            if arg not in ("current", "energy"):
                return f"output {arg} not supported"
            c.energy = arg == "energy"
        elif name == "volt":
            volts = p.parse_number(arg)
            volts = round(volts, 6)
            if not p.VOLTAGE_RANGE_V[0] <= volts <= p.VOLTAGE_RANGE_V[1]:
                return "voltage out of range [1800m; 3300m]"
            c.volt_v = volts
        elif name == "trigsrc":
            if arg != "sw":
                return "only trigsrc sw is emulated"
        elif name == "trigdelay":
            c.trigdelay_s = p.parse_number(arg)
        elif name == "eventsrc":
            edge = args[1] if len(args) > 1 else "ris"
            if arg == "none":
                c.event_edge = None
            elif arg != "d7" or edge not in ("ris", "fal"):
                return "eventsrc <d7|none> [ris|fal]"
            else:
                c.event_edge = edge
        elif name == "start":
            return self._check_start()
        elif name not in ("pwr", "pwrend", "lcd", "hrc", "acqmode", "funcmode", "currthres",
                          "status", "temp", "calib", "targrst"):
            return f"unknown command {name}"
        if name == "hrc":
            c.host_control = False
        return None

    def _check_start(self) -> str | None:
        c = self._config
        if c.energy and c.freq_hz > p.ENERGY_MAX_HZ:
            return "output energy is limited to 10k"
        if not c.binary and c.freq_hz > p.ASCII_MAX_UNLIMITED_HZ and \
                c.acqtime_s > p.ASCII_MAX_UNLIMITED_HZ / c.freq_hz:
            return "ascii_dec above 5k is limited in acquisition time"
        return None

    # --- the stream ------------------------------------------------------------------------

    def _begin(self) -> None:
        self._acq_origin = bench_now() + self._config.trigdelay_s
        self._sent = 0
        self._events = 0

    def _finish(self, command: str) -> None:
        """``stop``: what is due goes out, then the end of acquisition and the replies."""
        if self._acq_origin is not None:
            self._emit_due(final=True)
        self._reply(command)
        self._write(f"{p.PROMPT}Acquisition completed\r\n".encode())

    def _stream(self) -> None:
        while not self._stop.wait(CHUNK_S):
            with self._lock:
                if self._acq_origin is not None:
                    self._emit_due(final=False)

    def _emit_due(self, *, final: bool) -> None:
        c = self._config
        assert self._acq_origin is not None
        told = min(bench_now(), self.feed.told_until())
        due = int(max(0.0, told - self._acq_origin) * self.rate)
        limit = c.acqtime_s * c.freq_hz
        ended = due >= limit
        due = int(min(due, limit))
        if due > self._sent:
            self._write(self._chunk(self._sent, due))
            self._sent = due
        if ended or final:
            if c.binary:
                self._write(p.metadata(p.META_END))
            elif ended:
                self._write(b"end\r\n")
            if ended and not final:
                self._write(f"{p.PROMPT}Acquisition completed\r\n".encode())
            self._acq_origin = None

    def _chunk(self, first: int, stop: int) -> bytes:
        c = self._config
        index = np.arange(first, stop)
        t = self.bench_time(index)
        watts = self.feed.mean_power(t, 1.0 / self.rate)
        amps = watts / c.volt_v * (1.0 + self.gain_error)
        if self.noise_std_a > 0:
            amps = amps + self._rng.normal(0.0, self.noise_std_a, size=amps.shape)
        values = amps * c.volt_v / c.freq_hz if c.energy else amps
        edges: set[int] = set()
        if c.event_edge:  # edge-triggered: a pulse shorter than a sample still counts
            wanted = 1 if c.event_edge == "ris" else 0
            lat = self.event_latency_s
            for t_edge, level in self.feed.edges(float(self.bench_time(first - 1)) - lat,
                                                 float(self.bench_time(stop)) - lat):
                k = int(np.ceil((t_edge + lat - self._acq_origin) * self.rate))
                if level == wanted and first <= k < stop and k >= 1:
                    edges.add(k - first)
        inserts: dict[int, bytes] = {}  # records that go before sample k of this chunk
        for k in range((-first) % c.freq_hz, len(values), c.freq_hz):
            if first + k:
                inserts[k] = self._timestamp(first + k)
        for k in sorted(edges):
            self._events += 1
            text = f"event {self._events % 100:02d} ris"
            record = p.metadata(p.META_INFO, text.encode()) if c.binary else \
                (text + "\r\n").encode()
            inserts[k] = inserts.get(k, b"") + record
        out = bytearray()
        bounds = sorted({0, *inserts, len(values)})
        for a, b in itertools.pairwise(bounds):
            out += inserts.get(a, b"")
            segment = values[a:b]
            out += p.encode_binary(segment) if c.binary else \
                b"".join(p.encode_ascii(v) for v in segment.tolist())
        return bytes(out)

    def _timestamp(self, sample: int) -> bytes:
        ms = round(sample * 1000 / self._config.freq_hz)
        make = p.timestamp_binary if self._config.binary else p.timestamp_ascii
        return make(ms, 0)
