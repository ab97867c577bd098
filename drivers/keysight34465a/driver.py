"""Keysight 34465A as a :class:`hilbench.power.source.PowerSource`, over any VISA resource.

The meter paces itself: ``SAMPle:SOURce TIMer`` takes reading *i* at ``INIT`` + i × interval,
stores it in reading memory, and the driver drains memory in chunks with ``R?`` while the
window runs (not ``READ?`` per sample, whose round trips would set the pace instead). Sample
*i* is stamped ``t0 + i × interval`` on the orchestrator clock, where ``t0`` is
:func:`hilbench.clock.now` right after ``INIT`` was sent; the time the write took and the
meter's trigger latency are the alignment uncertainty (:attr:`Keysight34465A.t0_uncertainty_s`
holds the part that is measurable here). Each timestamp marks the start of a reading's
integration, which lasts ``settings.aperture_s``.

Anything that makes samples untrustworthy either raises :class:`PowerSourceError` (SCPI errors
while configuring, timeouts, a lost connection, malformed replies) or is recorded in
:meth:`Keysight34465A.health` (overloads, reading-memory overflow, missing readings, SCPI
errors during acquisition), which marks the run invalid.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import socket
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from hilbench.clock import now
from hilbench.power.align import IntervalEstimate, estimate_interval
from hilbench.power.markers import MarkerEdges
from hilbench.power.source import Health, PowerSourceError, SampleBatch, SourceInfo

from .scpi import (
    ReplyError,
    format_number,
    mask_overloads,
    parse_block,
    parse_error,
    parse_int,
    parse_readings,
)
from .settings import FACTS, Keysight34465ASettings

SIMULATED_FIRMWARE = "hilbench-sim"  # the firmware field of the simulated meter's *IDN?
SUPPORTED_MODELS = ("34465A", "34470A")  # the Truevolt models with SAMPle:SOURce TIMer
QUES_SAMPLE_TIMING = 4
QUES_MEMORY_OVERFLOW = 16384
# Bound on the sample timer's error assumed when estimating the real interval (a conservative
# placeholder, like the accuracy defaults: take the figure from the unit's data sheet).
TIMEBASE_PPM = 100.0
MAX_ERRORS_PER_CHECK = 25  # the error queue holds 20; stop reading a runaway reply stream

T = TypeVar("T")


def _import_pyvisa() -> ModuleType:
    try:
        import pyvisa
    except ImportError:
        raise PowerSourceError(
            "the Keysight 34465A driver needs pyvisa; "
            "install it with: pip install hilbench[keysight]"
        ) from None
    return pyvisa


class Keysight34465A:
    """Keysight 34465A DMM measuring DC current (or voltage) as a timed, buffered stream.

    ``resource`` is any VISA resource string (``TCPIP::host::INSTR``,
    ``TCPIP::host::5025::SOCKET``, ``USB0::…::INSTR``, ``GPIB0::22::INSTR``);
    ``visa_library`` selects the VISA backend (``""`` = pyvisa's default, ``"@py"`` =
    pyvisa-py, ``"file.yaml@sim"`` = pyvisa-sim). The constructor does no I/O.
    """

    # What the simulated bench meter takes from this driver (hilbench.sim.instrument_facts).
    facts = FACTS

    def __init__(
        self,
        resource: str,
        settings: Keysight34465ASettings,
        *,
        visa_library: str = "",
    ) -> None:
        self.resource = resource
        self.settings = settings
        self.visa_library = visa_library
        s = self.settings
        in_amps = s.function == "current" or s.shunt_ohms is not None
        self.info = SourceInfo(
            name=f"Keysight 34465A at {resource}",
            unit="A" if in_amps else "V",
            time_resolution_s=s.sample_interval_s,
            accuracy_relative=s.accuracy_reading,
            accuracy_absolute=s.accuracy_range * s.range / (s.shunt_ohms or 1.0),
            supply_voltage_v=s.supply_voltage_v if in_amps else None,
            domains=s.domains,
            sample_period_s=s.sample_interval_s,
            marker_latency_s=s.trigger_latency_s if s.trigger == "external" else None,
            marker_channels=("ext",) if s.trigger == "external" else (),
            resolution=s.resolution,
        )
        self.t0: float | None = None
        self.t0_uncertainty_s: float | None = None
        self.interval_estimate: IntervalEstimate | None = None
        self.idn: str | None = None
        self._rm: Any = None
        self._inst: Any = None
        self._configured = False
        self._acquiring = False
        self._received = 0
        self._failure: str | None = None
        self._health = Health()
        self._trigger_edges: list[MarkerEdges] = []
        self.options: tuple[str, ...] = ()

    @classmethod
    def from_config(
        cls, resource: str | None, settings: Mapping[str, Any], *, visa_library: str = ""
    ) -> Keysight34465A:
        """Build from a campaign's instrument table; ``ValueError`` names any bad setting."""
        if not resource:
            raise ValueError("the Keysight 34465A needs a VISA resource string")
        values = Keysight34465ASettings.from_mapping(
            dict(settings), where=f"settings of the Keysight 34465A at {resource}"
        )
        return cls(resource, values, visa_library=visa_library)

    # --- PowerSource -----------------------------------------------------------------------

    def configure(self) -> None:
        """Open the resource and apply the settings, checking ``SYST:ERR?`` after each step."""
        s = self.settings
        self._open()
        self.idn = self._query("*IDN?")
        model = self.idn.split(",")[1].strip() if self.idn.count(",") >= 1 else self.idn
        if model not in SUPPORTED_MODELS:
            raise PowerSourceError(
                f"{self.resource} identifies as {self.idn!r}, not a Keysight "
                f"{' or '.join(SUPPORTED_MODELS)} (timed sampling needs one of those)"
            )
        fields = [f.strip() for f in self.idn.split(",")]
        if len(fields) >= 4 and fields[3] == SIMULATED_FIRMWARE:
            # hilbench's simulated bench meter identifies itself by its firmware field.
            self.info = dataclasses.replace(
                self.info,
                simulated=True,
                simulation=f"readings from hilbench's simulated 34465A at {self.resource}",
            )
        if s.dig_option:  # asked only when needed: a meter's dialogue stays as it was
            self.options = tuple(o.strip().upper() for o in self._query("*OPT?").split(","))
        if s.dig_option and "DIG" not in self.options:
            raise PowerSourceError(
                f"{self.resource} reports options {','.join(self.options)!r}, without DIG: "
                f"NPLC {s.nplc:g} needs the digitizing option; use nplc >= 0.02 or set "
                "dig_option = false")
        self._send_checked("*RST")
        self._send_checked("*CLS")
        line_hz = float(self._query("SYST:LFR?"))
        if not math.isclose(line_hz, s.line_frequency_hz):
            raise PowerSourceError(
                f"{self.resource} runs on {line_hz:g} Hz mains but the settings say "
                f"{s.line_frequency_hz:g} Hz; fix line_frequency_hz (it sets the integration time)"
            )
        fn = "CURR" if s.function == "current" else "VOLT"
        rng = format_number(s.range)
        for command in (
            f"CONF:{fn}:DC {rng}",
            f"SENS:{fn}:DC:RANG:AUTO OFF",
            f"SENS:{fn}:DC:RANG {rng}",
            f"SENS:{fn}:DC:NPLC {format_number(s.nplc)}",
            f"SENS:{fn}:DC:ZERO:AUTO {'ON' if s.autozero else 'OFF'}",
            *(("TRIG:SOUR EXT", f"TRIG:SLOP {'POS' if s.trigger_slope == 'positive' else 'NEG'}")
              if s.trigger == "external" else ("TRIG:SOUR IMM",)),
            "TRIG:DEL 0",
            "TRIG:COUN 1",
            "SAMP:SOUR TIM",
            f"SAMP:TIM {format_number(s.sample_interval_s)}",
        ):
            self._send_checked(command)
        minimum = float(self._query("SAMP:TIM? MIN"))
        if s.sample_interval_s < minimum * (1 - 1e-9):
            raise PowerSourceError(
                f"{self.resource} says its shortest sample interval for these settings is "
                f"{minimum:g} s; {s.sample_interval_s:g} s was requested"
            )
        self._query("*OPC?")
        self._configured = True

    def arm(self) -> None:
        """Set the sample count for the longest window and clear stale status bits."""
        if not self._configured:
            raise PowerSourceError(f"{self.resource}: arm() called before configure()")
        self._write("ABOR")
        self._query("STAT:QUES:EVEN?")  # reading clears bits left from earlier runs
        self._send_checked(f"SAMP:COUN {self.settings.sample_count}")
        self._health = Health()
        self._received = 0
        self.t0 = None
        self._trigger_edges = []

    def start(self) -> None:
        """Send ``INIT``; the readings' time base starts when the instrument parsed it.

        That moment lies between sending ``INIT`` and the reply to the ``SYST:ERR?`` that
        follows it (the instrument handles commands in order), so ``t0`` is the middle of that
        span and ``t0_uncertainty_s`` half its width.
        """
        if not self._configured:
            raise PowerSourceError(f"{self.resource}: start() called before configure()")
        before = now()
        self._write("INIT")
        self.t0 = now()
        self.t0_uncertainty_s = self.t0 - before
        self._acquiring = True
        self._raise_on_errors("INIT")
        after = now()
        self.t0 = (before + after) / 2
        self.t0_uncertainty_s = (after - before) / 2
        if self.settings.trigger == "external":
            self.t0 = self.t0_uncertainty_s = None  # known once the trigger's burst arrives

    def read(self) -> SampleBatch:
        """Drain reading memory; also checks the overflow and timing-violation status bits."""
        if not self._acquiring:
            return SampleBatch.empty()
        batch = self._drain()
        self._check_status()
        if self._received >= self.settings.sample_count:
            self._note(
                f"acquisition on {self.resource} reached its {self.settings.sample_count} "
                f"readings; windows longer than max_window_s={self.settings.max_window_s:g} s "
                "are not covered"
            )
        return batch

    def stop(self) -> SampleBatch:
        """Abort, drain what is left, and check that no readings went missing."""
        if not self._acquiring:
            return SampleBatch.empty()
        # The meter stops counting when it parses ABOR: between sending it and the reply to
        # the *OPC? behind it (commands are handled in order).
        before = now()
        self._write("ABOR")
        self._query("*OPC?")
        after = now()
        t_abort, abort_half_width = (before + after) / 2, (after - before) / 2
        batch = self._drain()
        self._acquiring = False
        self._check_status()
        for code, message in self._pending_errors():
            self._note(f'{self.resource} reported SCPI error {code},"{message}" while acquiring')
        if self.t0 is None:
            self._note(f"{self.resource}: no edge on Ext Trig started the burst during the "
                       "acquisition (is the device's marker pin wired, and the slope right?)")
            return batch
        self._check_count(t_abort, abort_half_width)
        self._estimate_interval(t_abort, abort_half_width)
        return batch

    def _estimate_interval(self, t_abort: float, abort_half_width_s: float) -> None:
        """The meter's real interval from the readings it had finished by ``ABOR`` (its own
        count) and when that was: a drifting timebase shows here. The batches returned by
        ``read``/``stop`` keep the nominal stamps; the campaign restamps them with this
        estimate (:meth:`hilbench.power.align.IntervalEstimate.restamp`) and puts its residual
        into the timing budget."""
        s = self.settings
        assert self.t0 is not None
        self.interval_estimate = None
        if self._received >= 2 and not self._health.dropped and self._received < s.sample_count:
            try:
                self.interval_estimate = estimate_interval(
                    self._received,
                    self.t0,
                    t_abort,
                    s.sample_interval_s,
                    s.aperture_s,
                    time_half_width_s=abort_half_width_s,
                    timebase_ppm=TIMEBASE_PPM,
                )
            except ValueError:
                self.interval_estimate = None

    def health(self) -> Health:
        h = self._health
        return Health(h.overloads, h.dropped, h.overflow, list(h.messages))

    def close(self) -> None:
        """Release the instrument (aborting a running acquisition); safe to call twice."""
        if self._inst is not None:
            if self._acquiring and self._failure is None:
                with contextlib.suppress(Exception):
                    self._inst.write("ABOR")
            with contextlib.suppress(Exception):
                self._inst.close()
        if self._rm is not None:
            with contextlib.suppress(Exception):
                self._rm.close()
        self._inst = None
        self._rm = None
        self._acquiring = False
        self._configured = False

    def __enter__(self) -> Keysight34465A:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- acquisition helpers ---------------------------------------------------------------

    def _drain(self) -> SampleBatch:
        chunk = self.settings.chunk
        parts: list[np.ndarray] = []
        while True:
            command = f"R? {chunk}"
            # read the clock only while an external trigger's burst is awaited: a cassette
            # replays the orchestrator's clock readings in order, so none may be added
            waiting = self.t0 is None
            before = now() if waiting else 0.0
            reply = self._query(command)
            after = now() if waiting else 0.0
            try:
                values = parse_readings(parse_block(reply))
            except ReplyError as err:
                self._fail(f"malformed reply from {self.resource} to {command!r}: {err}")
            if waiting and len(values):
                self._anchor_external(len(values), before, after)
            parts.append(values)
            if len(values) < chunk:
                break
        values = np.concatenate(parts) if parts else np.empty(0)
        return self._to_batch(values)

    def _anchor_external(self, n: int, before: float, after: float) -> None:
        """The first readings of an externally triggered burst: ``n`` of them were complete
        when the meter answered (by ``after``) and the next one was not when it was asked (at
        ``before``), which bounds when reading 0 began; the trigger edge is its sample 0."""
        s = self.settings
        lo = before - n * s.sample_interval_s - s.aperture_s
        hi = after - (n - 1) * s.sample_interval_s - s.aperture_s
        self.t0, self.t0_uncertainty_s = (lo + hi) / 2, (hi - lo) / 2
        level = 1 if s.trigger_slope == "positive" else 0
        self._trigger_edges.append(MarkerEdges(np.array([0]), np.array([level]), "ext"))

    def markers(self) -> list[MarkerEdges]:
        """The Ext Trig edge that started the burst (sample 0), once; [] without one."""
        edges, self._trigger_edges = self._trigger_edges, []
        return [MarkerEdges.concat(edges, "ext")] if self.info.marker_channels else []

    def _to_batch(self, raw: np.ndarray) -> SampleBatch:
        if self.t0 is None:  # an external trigger not seen yet: no readings either
            return SampleBatch.empty()
        values, overloads = mask_overloads(raw)
        if overloads:
            self._health.overloads += overloads
            self._note(
                f"{self.resource}: readings over the {format_number(self.settings.range)} "
                f"{'A' if self.settings.function == 'current' else 'V'} range (overload); "
                "they are NaN, choose a larger range"
            )
        if self.settings.shunt_ohms is not None:
            values = values / self.settings.shunt_ohms
        assert self.t0 is not None
        index = self._received + np.arange(len(values), dtype=np.float64)
        self._received += len(values)
        return SampleBatch(t=self.t0 + index * self.settings.sample_interval_s, values=values)

    def _check_status(self) -> None:
        command = "STAT:QUES:EVEN?"
        bits = self._parse(command, self._query(command), parse_int)
        if bits & QUES_MEMORY_OVERFLOW:
            self._health.overflow = True
            self._note(
                f"reading memory of {self.resource} overflowed: the oldest readings were lost, "
                "so sample times after the gap are unknown; read more often or sample slower"
            )
        if bits & QUES_SAMPLE_TIMING:
            self._note(
                f"{self.resource} reported a sample-timing violation: readings were not taken "
                f"every {self.settings.sample_interval_s:g} s"
            )

    def _check_count(self, t_abort: float, abort_half_width_s: float) -> None:
        """Compare readings received with those the meter must have taken by ``ABOR``.

        The meter parsed ``INIT`` no later than ``t0 + t0_uncertainty_s`` and ``ABOR`` no
        earlier than ``t_abort - abort_half_width_s``: only readings due within that shortest
        span are owed. A slow round trip on a loaded host widens both ends; counting from
        their midpoints called readings missing that the meter never owed."""
        s = self.settings
        assert self.t0 is not None
        init_half_width_s = self.t0_uncertainty_s or 0.0
        elapsed = t_abort - abort_half_width_s - (self.t0 + init_half_width_s) - s.aperture_s
        expected = (
            0 if elapsed < 0 else min(s.sample_count, math.floor(elapsed / s.sample_interval_s) + 1)
        )
        missing = expected - self._received
        slack = 2 + math.ceil(0.05 / s.sample_interval_s)  # ABOR and trigger latency
        if missing > slack or (self._health.overflow and missing > 0):
            self._health.dropped += missing
            self._note(
                f"{self.resource}: expected at least {expected} readings by ABOR, received "
                f"{self._received} ({missing} missing; INIT known to ± "
                f"{format_number(init_half_width_s)} s, ABOR to ± "
                f"{format_number(abort_half_width_s)} s)"
            )

    # --- I/O --------------------------------------------------------------------------------

    def _open(self) -> None:
        if self._inst is not None:
            return
        pyvisa = _import_pyvisa()
        try:
            self._rm = pyvisa.ResourceManager(self.visa_library)
            self._inst = self._rm.open_resource(
                self.resource,
                read_termination="\n",
                write_termination="\n",
                timeout=round(self.settings.timeout_s * 1000),
            )
        except (pyvisa.errors.Error, OSError, ValueError) as err:
            raise PowerSourceError(f"cannot open {self.resource}: {err}") from err
        if self.resource.upper().endswith("::SOCKET"):
            self._disable_nagle(pyvisa)
        self._failure = None

    def _disable_nagle(self, pyvisa: ModuleType) -> None:
        """Send small commands at once on raw sockets.

        Otherwise a command followed by ``SYST:ERR?`` waits for the meter's delayed ACK
        (~40 ms per step) and ``INIT`` leaves late. pyvisa-py 0.8 does not accept
        VI_ATTR_TCPIP_NODELAY, so its session's socket is set directly when the attribute fails.
        """
        try:
            self._inst.set_visa_attribute(pyvisa.constants.VI_ATTR_TCPIP_NODELAY, True)
            return
        except Exception:  # backends differ in how they refuse an unknown attribute
            pass
        with contextlib.suppress(Exception):
            session = self._inst.visalib.sessions[self._inst.session]
            session.interface.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _write(self, command: str) -> None:
        self._io(command, lambda inst: inst.write(command))

    def _query(self, command: str) -> str:
        return str(self._io(command, lambda inst: inst.query(command))).strip()

    def _io(self, command: str, action: Callable[[Any], T]) -> T:
        if self._failure is not None:
            raise PowerSourceError(f"{self.resource} is unusable after: {self._failure}")
        if self._inst is None:
            raise PowerSourceError(f"{self.resource} is not open; call configure() first")
        pyvisa = _import_pyvisa()
        try:
            return action(self._inst)
        except pyvisa.errors.VisaIOError as err:
            if err.error_code == pyvisa.constants.StatusCode.error_timeout:
                self._fail(
                    f"no answer from {self.resource} to {command!r} within "
                    f"{self.settings.timeout_s:g} s (instrument hung or connection lost)"
                )
            self._fail(f"I/O error talking to {self.resource} ({command!r}): {err}")
        except (OSError, EOFError) as err:
            self._fail(f"connection to {self.resource} lost during {command!r}: {err}")
        raise AssertionError("unreachable")

    def _fail(self, reason: str) -> None:
        """Mark the instrument unusable (its replies may now be out of step) and raise."""
        self._failure = reason
        self._note(reason)
        raise PowerSourceError(reason)

    def _send_checked(self, command: str) -> None:
        self._write(command)
        self._raise_on_errors(command)

    def _raise_on_errors(self, command: str) -> None:
        errors = self._pending_errors()
        if errors:
            text = "; ".join(f'{code},"{message}"' for code, message in errors)
            raise PowerSourceError(f"{self.resource} reported {text} after {command!r}")

    def _pending_errors(self) -> list[tuple[int, str]]:
        errors: list[tuple[int, str]] = []
        for _ in range(MAX_ERRORS_PER_CHECK):
            code, message = self._parse("SYST:ERR?", self._query("SYST:ERR?"), parse_error)
            if code == 0:
                break
            errors.append((code, message))
        return errors

    def _parse(self, command: str, reply: str, parser: Callable[[str], T]) -> T:
        try:
            return parser(reply)
        except ReplyError as err:
            self._fail(f"unexpected reply from {self.resource} to {command!r}: {err}")
        raise AssertionError("unreachable")

    def _note(self, message: str) -> None:
        if message not in self._health.messages:
            self._health.messages.append(message)
