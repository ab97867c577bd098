"""ST LPM01A (PowerShield) as a :class:`~hilbench.power.source.PowerSource` with ``eventsrc``
markers, over its serial protocol (:mod:`.protocol`; pyserial is imported only when a port is
opened: ``pip install hilbench[lpm01a]``).

The board supplies the target at ``supply_voltage_v`` and streams its current (or the energy of
each sample period) at ``rate_hz`` on its own timebase. A reader thread parses the stream as it
comes; sample ``k`` is stamped ``t0 + k / rate_hz`` where ``t0`` is the middle of sending
``start`` and its acknowledgement (with ``trigdelay 0``), half that span its uncertainty. Each
event on D7 arrives before the first sample that saw it, so its sample index is the number of
samples before it (MLPerf Tiny's runner counts them the same way): :meth:`Lpm01a.markers`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from hilbench.clock import now
from hilbench.power.markers import MarkerEdges
from hilbench.power.source import Health, PowerSourceError, SampleBatch, SourceInfo

from .protocol import PROMPT, StreamParser, format_frequency
from .settings import Lpm01aSettings

SIMULATED_BOARD = "hilbench-sim"  # the emulator's board id (reply to `powershield`)
REPLAY_PREFIX = "replay:"
MARKER_CHANNEL = "d7"


def open_serial(port: str, baud: int) -> Any:
    """A pyserial port, or a clear error when pyserial is missing."""
    try:
        import serial
    except ImportError:
        raise PowerSourceError("the LPM01A driver needs pyserial; install it with: "
                               "pip install hilbench[lpm01a]") from None
    try:
        return serial.serial_for_url(port, baudrate=baud, timeout=0.05)
    except (serial.SerialException, ValueError, OSError) as exc:
        raise PowerSourceError(f"cannot open the LPM01A at {port}: {exc}") from exc


class Lpm01a:
    """A PowerShield on serial port ``resource`` (``/dev/ttyACM0``, or ``replay:<cassette>``);
    ``port`` overrides how the port is opened. The constructor does no I/O."""

    def __init__(self, resource: str, settings: Lpm01aSettings, *,
                 port: Callable[[], Any] | None = None) -> None:
        self.resource = resource
        self.settings = settings
        self._open_port = port or _port_for(resource, settings.baud)
        s = settings
        energy = s.output == "energy"
        self.info = SourceInfo(
            name=f"ST LPM01A at {resource}",
            unit="W" if energy else "A",
            time_resolution_s=s.sample_period_s,
            accuracy_relative=s.accuracy_relative,
            accuracy_absolute=s.accuracy_absolute,
            supply_voltage_v=None if energy else s.supply_voltage_v,
            domains=s.domains,
            sample_period_s=s.sample_period_s,
            marker_latency_s=s.marker_latency_s if s.event_input != "none" else None,
            marker_channels=(MARKER_CHANNEL,) if s.event_input != "none" else (),
        )
        self.t0: float | None = None
        self.t0_uncertainty_s: float | None = None
        self.interval_estimate = None
        self._serial: Any = None
        self._reader: threading.Thread | None = None
        self._closing = threading.Event()
        self._lines: queue.Queue[str] = queue.Queue()
        self._parser = StreamParser()
        self._lock = threading.Lock()
        self._values: list[float] = []
        self._events: list[int] = []
        self._ended = threading.Event()
        self._acquiring = False
        self._configured = False
        self._taken = 0
        self._health = Health()

    @classmethod
    def from_config(cls, resource: str | None, settings: Mapping[str, Any], *,
                    visa_library: str = "") -> Lpm01a:
        if not resource:
            raise ValueError("the LPM01A needs its serial port as the resource")
        values = Lpm01aSettings.from_mapping(dict(settings),
                                             where=f"settings of the LPM01A at {resource}")
        return cls(resource, values)

    # --- PowerSource -----------------------------------------------------------------------

    def configure(self) -> None:
        s = self.settings
        if self._serial is None:
            self._serial = self._open_port()
            self._closing.clear()
            self._reader = threading.Thread(target=self._read_loop, daemon=True,
                                            name=f"lpm01a:{self.resource}")
            self._reader.start()
        self._command("htc")
        board = self._command("powershield")
        commands = [f"format {s.format}", f"freq {format_frequency(s.rate_hz)}", "acqtime 0",
                    f"output {s.output}", f"volt {round(s.supply_voltage_v * 1000)}m",
                    "trigsrc sw", "trigdelay 0"]
        if s.event_input != "none":
            commands.append(f"eventsrc {s.event_input} {s.event_edge}")
        for command in commands:
            self._command(command)
        if SIMULATED_BOARD in board:
            self.info = dataclasses.replace(
                self.info, simulated=True,
                simulation=f"readings from hilbench's emulated LPM01A at {self.resource}")
        self._configured = True

    def arm(self) -> None:
        if not self._configured:
            raise PowerSourceError(f"LPM01A {self.resource}: arm() called before configure()")
        self._health = Health()
        with self._lock:
            self._values.clear()
            self._events.clear()
        self._taken = 0
        self._ended.clear()

    def start(self) -> None:
        if not self._configured:
            raise PowerSourceError(f"LPM01A {self.resource}: start() called before configure()")
        with self._lock:
            self._parser.begin(binary=self.settings.format == "bin_hexa")
        before = now()
        self._command("start")
        after = now()
        self.t0 = (before + after) / 2
        self.t0_uncertainty_s = (after - before) / 2
        self._acquiring = True

    def read(self) -> SampleBatch:
        if not self._acquiring:
            return SampleBatch.empty()
        return self._batch()

    def stop(self) -> SampleBatch:
        if not self._acquiring:
            return SampleBatch.empty()
        self._command("stop")
        if not self._ended.wait(self.settings.timeout_s):
            self._note(f"LPM01A {self.resource}: no end of acquisition after stop")
        self._wait_line("Acquisition completed")
        self._acquiring = False
        return self._batch()

    def markers(self) -> list[MarkerEdges]:
        if not self.info.marker_channels:
            return []
        with self._lock:
            events, self._events = self._events, []
        level = 1 if self.settings.event_edge == "ris" else 0
        return [MarkerEdges(np.asarray(events, np.int64), np.full(len(events), level),
                            MARKER_CHANNEL)]

    def health(self) -> Health:
        h = self._health
        return Health(h.overloads, h.dropped, h.overflow, list(h.messages))

    def close(self) -> None:
        """Stop an acquisition, release host control and the port; safe to call twice."""
        port, self._serial = self._serial, None
        if port is None:
            return
        with contextlib.suppress(Exception):
            if self._acquiring:
                port.write(b"stop\n")
            port.write(b"hrc\n")
            port.flush()
        self._closing.set()
        if self._reader is not None:
            self._reader.join(timeout=2)
        with contextlib.suppress(Exception):
            port.close()
        self._acquiring = False
        self._configured = False

    def __enter__(self) -> Lpm01a:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the stream ----------------------------------------------------------------------------

    def _read_loop(self) -> None:
        port = self._serial
        while not self._closing.is_set() and port is not None:
            try:
                data = port.read(65536)
            except Exception as exc:  # a lost port fails the run, with its reason
                self._note(f"LPM01A {self.resource}: serial port lost: {exc}")
                return
            if not data:
                continue
            with self._lock:
                parsed = self._parser.feed(data)
                self._values.extend(parsed.values)
                self._events.extend(sample for sample, _, _ in parsed.events)
            for line in parsed.lines:
                self._lines.put(line)
            for error in parsed.errors:
                self._note(f"LPM01A {self.resource} reported: {error}")
            if parsed.overcurrent:
                self._health.overloads += 1
                self._note(f"LPM01A {self.resource}: overcurrent (over 50 mA dynamic range)")
            if parsed.ended:
                self._ended.set()

    def _batch(self) -> SampleBatch:
        with self._lock:
            values, self._values = self._values, []
        if not values or self.t0 is None:
            return SampleBatch.empty()
        index = self._taken + np.arange(len(values), dtype=np.float64)
        self._taken += len(values)
        v = np.asarray(values, dtype=np.float64)
        if self.settings.output == "energy":
            v = v * self.settings.rate_hz  # joules per sample period -> watts
        return SampleBatch(self.t0 + index * self.settings.sample_period_s, v)

    # --- commands ---------------------------------------------------------------------------

    def _command(self, command: str) -> str:
        """Send one command and wait for its ``ack`` (returning what follows it) or ``error``
        (raising with the board's ``Error detail``)."""
        if self._serial is None:
            raise PowerSourceError(f"LPM01A {self.resource} is not open; call configure()")
        try:
            self._serial.write(f"{command}\n".encode())
        except Exception as exc:
            raise PowerSourceError(f"LPM01A {self.resource}: writing {command!r}: {exc}") from exc
        reply = self._wait_line(f"{command}", starts=("ack", "error"))
        if reply.startswith("error"):
            detail = self._wait_line("Error detail", quiet=True)
            raise PowerSourceError(f"LPM01A {self.resource} refused {command!r}: "
                                   f"{detail.replace('Error detail:', '').strip() or reply}")
        return reply[len("ack"):].replace(command, "", 1).strip()

    def _wait_line(self, contains: str, *, starts: tuple[str, ...] = ("",),
                   quiet: bool = False) -> str:
        deadline = time.monotonic() + self.settings.timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.001))
            except queue.Empty:
                if quiet:
                    return ""
                raise PowerSourceError(f"no answer from the LPM01A at {self.resource} "
                                       f"(waited {self.settings.timeout_s:g} s for "
                                       f"{contains!r})") from None
            text = line.replace(PROMPT.strip(), "").strip()
            if contains in text and text.startswith(starts):
                return text

    def _note(self, message: str) -> None:
        if message not in self._health.messages:
            self._health.messages.append(message)


def _port_for(resource: str, baud: int) -> Callable[[], Any]:
    if resource.startswith(REPLAY_PREFIX):
        from .cassette import ReplaySerial

        folder = resource[len(REPLAY_PREFIX):]
        return lambda: ReplaySerial(folder)
    return lambda: open_serial(resource, baud)
