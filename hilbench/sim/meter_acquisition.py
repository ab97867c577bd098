"""The measuring side of the simulated Keysight 34465A: what it reads and when.

The readings follow the simulated device's state (idle, preprocessing, inference, solving, …)
through a :class:`~hilbench.sim.power_model.DevicePowerModel`, with noise, quantised to the
configured range and integration time, and fall due at the configured sample interval in real
time after ``INIT`` (stretched by the timebase's ``drift_ppm``). They go into a bounded reading
memory that overflows as the real one does. Because the device's true power is known, the meter
can answer what the true energy of any window was, which is what makes the measurement chain's
accuracy testable end to end. The SCPI commands and TCP server that drive this are in
:mod:`hilbench.sim.meter`.

Readings are computed lazily, from the timeline as the device has told it so far. A device that
reports late (:meth:`hilbench.sim.device_link.SimulatedDeviceLink.defer`: single-stream samples
are told in batches) *holds* the meter: it says up to which time its state is told
(:meth:`MeterAcquisition.hold`), and only readings whose aperture ends by then are computed, as
if the instrument had that much latency. A live device whose line is still unread holds the meter
too (:meth:`MeterAcquisition._news_pending`): the line may be a ``HOLD`` at a moment the meter
would otherwise compute past. Once an acquisition has ended (``ABOR`` or its last
reading due), the first request for readings waits up to :data:`HOLD_PATIENCE_S` for the device
to tell past the end; what it still has not told is then computed as it stands, and counted in
:attr:`MeterAcquisition.late_readings` with a warning in the log, so a simulated figure that
rests on a stale timeline never goes unnoticed.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# The meter shares the bench's physical clock with the devices it measures (never offset).
from hilbench.clock import bench_now as now

# The instrument's own facts (ranges, reading time) are the instrument plugin's: one description
# of the 34465A serves the driver that talks to it and the simulator that imitates it.
from hilbench.sim.instrument_facts import meter_facts
from hilbench.sim.power_model import (
    DevicePowerModel,
    StateTimeline,
    quantise,
    simulate_readings,
)

OVERLOAD = 9.9e37  # what a Keysight DMM returns for an over-range reading
OVERRANGE_FACTOR = 1.2  # readings up to 120 % of range are valid

# Questionable-data register bits (Truevolt series).
QUES_VOLTAGE_OVERLOAD = 1
QUES_CURRENT_OVERLOAD = 2
QUES_SAMPLE_TIMING = 4
QUES_MEMORY_OVERFLOW = 16384

# How long a request for readings after an acquisition's end waits for a held device to tell
# past that end. Its link tells within FLUSH_S (0.05 s) while samples run and goes live within
# about 2 × FLUSH_S once they stop, so 0.5 s means it stopped telling; well below the keysight
# driver's I/O timeout (timeout_s, 5 s by default), so the wait does not fail a read.
HOLD_PATIENCE_S = 0.5

log = logging.getLogger(__name__)


@dataclass
class FunctionSettings:
    range: float
    nplc: float = 10.0
    autozero: bool = True
    autorange: bool = True


def _default_functions() -> dict[str, FunctionSettings]:
    return {"CURR": FunctionSettings(range=0.1), "VOLT": FunctionSettings(range=10.0)}


@dataclass
class MeterSettings:
    function: str = "VOLT"
    functions: dict[str, FunctionSettings] = field(default_factory=_default_functions)
    trigger_source: str = "IMM"
    trigger_slope: str = "NEG"  # the 34465A's default
    trigger_delay_s: float = 0.0
    trigger_count: int = 1
    sample_source: str = "IMM"
    sample_timer_s: float = 1.0
    sample_count: int = 1

    @property
    def active(self) -> FunctionSettings:
        return self.functions[self.function]


@dataclass
class Acquisition:
    """One INIT: when readings are due and how many have been put into memory so far."""

    function: str
    range: float
    aperture_s: float
    interval_s: float
    total: int
    resolution: float
    t_init: float
    t_first: float | None  # None while waiting for a BUS trigger
    t_abort: float | None = None
    generated: int = 0
    lost: int = 0

    def ready_count(self, t: float) -> int:
        """Readings whose integration has ended by ``t``."""
        if self.t_first is None:
            return 0
        end = t if self.t_abort is None else min(t, self.t_abort)
        elapsed = end - self.t_first - self.aperture_s
        if elapsed < 0:
            return 0
        return min(self.total, math.floor(elapsed / self.interval_s + 1e-9) + 1)

    @property
    def finished(self) -> bool:
        return self.t_abort is not None or self.generated >= self.total

    def taking_readings(self, t: float) -> bool:
        """Whether readings are still to fall due after ``t`` (by time, not by what a held
        device has let the meter compute)."""
        return self.t_abort is None and self.ready_count(t) < self.total

    def end_time(self) -> float:
        """When the last reading due (by ``ABOR`` or the count) ends its integration."""
        assert self.t_first is not None
        if self.t_abort is not None:
            return self.t_abort
        return self.t_first + (self.total - 1) * self.interval_s + self.aperture_s


class MeterAcquisition:
    """Settings, timeline, due readings and reading memory of one simulated meter.

    The SCPI layer (:class:`hilbench.sim.meter.SimulatedMeter`) builds on it. The public methods
    take ``_lock`` themselves; the underscored ones expect the caller to hold it.
    """

    def __init__(
        self,
        model: DevicePowerModel,
        *,
        noise_std_w: float,
        memory_readings: int,
        line_frequency_hz: float,
        shunt_ohms: float,
        initial_state: str,
        seed: int | None,
        drift_ppm: float,
        gain_error: float = 0.0,
        offset_error: float = 0.0,
        trigger_latency_s: float = 1e-6,
    ) -> None:
        if memory_readings < 1:
            raise ValueError(f"memory_readings must be at least 1, got {memory_readings}")
        if line_frequency_hz not in (50.0, 60.0, 400.0):
            raise ValueError(f"line_frequency_hz must be 50, 60 or 400, got {line_frequency_hz}")
        model.watts(initial_state)  # fail early on an unknown state
        self.model = model
        self.noise_std_w = noise_std_w
        self.memory_readings = memory_readings
        self.line_frequency_hz = float(line_frequency_hz)
        self.shunt_ohms = shunt_ohms
        # The meter's timebase runs slow by this much (fast when negative): its readings come
        # every interval × (1 + drift_ppm·1e-6), the truth a drift-correction test checks.
        self.drift_ppm = float(drift_ppm)
        # Its calibration error, as a real meter has one within its spec: every reading is
        # truth × (1 + gain_error) + offset_error (amps or volts, what it measures).
        self.gain_error = float(gain_error)
        self.offset_error = float(offset_error)
        # How late the rear-panel Ext Trig input starts a burst after the edge (the truth a
        # marker test checks against the driver's stated bound).
        self.trigger_latency_s = float(trigger_latency_s)
        self.marker_edges: list[tuple[float, int]] = []  # (bench time, level) as told
        self._rng = np.random.default_rng(seed)
        self._lock = threading.RLock()
        self._timeline = StateTimeline(initial_state=initial_state, t0=now())
        self._settings = MeterSettings()
        self._acq: Acquisition | None = None
        self._memory: deque[float] = deque(maxlen=memory_readings)
        self._ques_event = 0
        self._stopping = threading.Event()
        # Up to when (bench clock) a held device has told its state; None: it reports live.
        self._told_until: float | None = None
        self.late_readings = 0  # readings computed from a timeline told late (see the module)
        self.late_changes = 0  # live changes that arrived after readings over them were computed
        self._computed_until = -math.inf  # where the last computed reading's aperture ended

    # --- the simulated device --------------------------------------------------------------

    def set_state(self, name: str, t: float | None = None) -> float:
        """Record that the device entered state ``name`` at ``t`` (default: now); returns t."""
        self.model.watts(name)  # raises KeyError naming the known states
        with self._lock:
            stamp = now() if t is None else float(t)
            self._timeline.set(stamp, name)
            if self._told_until is not None and stamp < self._told_until:
                log.warning(
                    "simulated meter: the device told a change to %s at t=%.6f after saying its "
                    "state was told up to t=%.6f (SIM:HOLD): readings before then may miss it",
                    name, stamp, self._told_until)
            elif stamp < self._computed_until:
                self.late_changes += 1
                log.warning(
                    "simulated meter: the device told a change to %s at t=%.6f after the "
                    "readings up to t=%.6f were computed: they miss it", name, stamp,
                    self._computed_until)
            return stamp

    def hold(self, told_until: float) -> None:
        """The device has told its state up to ``told_until`` (bench clock); later changes may
        arrive late, so readings ending after it are not computed yet."""
        with self._lock:
            self._told_until = float(told_until)

    def live(self) -> None:
        """The device reports each change as it happens again: no limit on readings."""
        with self._lock:
            self._told_until = None

    @property
    def told_until(self) -> float | None:
        """Up to when a held device has told its state (None: it reports live)."""
        with self._lock:
            return self._told_until

    @property
    def state(self) -> str:
        with self._lock:
            return self._timeline.state_at(now())

    def true_energy(self, t_start: float, t_end: float) -> float:
        """Joules the simulated device truly used within [t_start, t_end] (monotonic clock)."""
        with self._lock:
            return self._timeline.energy(self.model, t_start, t_end)

    def true_mean_power(self, t_start: float, t_end: float) -> float:
        """Watts the simulated device truly drew on average within [t_start, t_end]."""
        if t_end <= t_start:
            raise ValueError(f"empty window: t_end {t_end} is not after t_start {t_start}")
        return self.true_energy(t_start, t_end) / (t_end - t_start)

    @property
    def init_time(self) -> float | None:
        """When the last INIT arrived (monotonic clock), for checking the driver's alignment."""
        with self._lock:
            return None if self._acq is None else self._acq.t_init

    @property
    def readings_lost(self) -> int:
        """Readings of the current acquisition lost to reading-memory overflow."""
        with self._lock:
            self._advance(now())
            return 0 if self._acq is None else self._acq.lost

    # --- acquisition and readings ------------------------------------------------------------

    def _news_pending(self) -> bool:
        """Whether a line the device sent is still unread (the TCP server knows; in-process
        callers tell their changes directly, so nothing is ever pending here)."""
        return False

    def _untold(self, end: float) -> bool:
        """Whether the device may still tell a change before ``end``: held short of it, or
        live with a line still unread."""
        if self._told_until is None:
            return self._news_pending()
        return self._told_until < end

    def _advance(self, t: float) -> None:
        """Move every reading whose integration has ended by ``t`` into reading memory, as far
        as the device has told its state (:meth:`hold`). A live device with a line still
        unread may be holding the meter in it: nothing is computed until it is read."""
        acq = self._acq
        if acq is None:
            return
        if self._told_until is None and self._news_pending():
            return
        told = t if self._told_until is None else min(t, self._told_until)
        self._materialise(acq, acq.ready_count(told))

    def _catch_up(self) -> None:
        """:meth:`_advance` to now, for a request that reads memory; once the acquisition has
        ended, wait (lock released, at most :data:`HOLD_PATIENCE_S`) for a held device to tell
        past its end, then compute what is still untold from the timeline as it stands."""
        t = now()
        self._advance(t)
        acq = self._acq
        if acq is None or acq.t_first is None or acq.taking_readings(t):
            return
        due = acq.ready_count(t)
        if acq.generated >= due:
            return
        end = acq.end_time()
        deadline = t + HOLD_PATIENCE_S
        while self._untold(end) and now() < deadline and not self._stopping.is_set():
            self._lock.release()
            try:
                time.sleep(0.002)
            finally:
                self._lock.acquire()
        if self._acq is not acq:
            return  # a new INIT (or *RST) on another connection replaced it meanwhile
        self._advance(now())
        untold = due - acq.generated
        if untold > 0:
            told = self._told_until
            self._materialise(acq, due)
            self.late_readings += untold
            log.warning(
                "simulated meter: %d readings up to t=%.6f computed from a device timeline %s "
                "(the device told nothing further within %.1f s): they show what the meter "
                "knew, not what the device did", untold, end,
                "with a line still unread" if told is None else f"told only up to t={told}",
                HOLD_PATIENCE_S)

    def _materialise(self, acq: Acquisition, ready: int) -> None:
        """Compute readings up to index ``ready`` into reading memory."""
        new = ready - acq.generated
        if new <= 0:
            return
        skipped = max(0, new - self.memory_readings)  # would be overwritten at once anyway
        index = np.arange(acq.generated + skipped, ready)
        values = self._readings(acq, index)
        overflow = skipped + max(0, len(self._memory) + len(values) - self.memory_readings)
        if overflow:
            acq.lost += overflow
            self._ques_event |= QUES_MEMORY_OVERFLOW
        self._memory.extend(values.tolist())
        acq.generated = ready
        assert acq.t_first is not None
        self._computed_until = acq.t_first + (ready - 1) * acq.interval_s + acq.aperture_s

    def _readings(self, acq: Acquisition, index: np.ndarray) -> np.ndarray:
        assert acq.t_first is not None
        t_starts = acq.t_first + index * acq.interval_s
        watts = simulate_readings(
            self.model, self._timeline, t_starts, acq.aperture_s, self.noise_std_w, 0.0, self._rng
        )
        amps = watts / self.model.supply_v
        values = amps if acq.function == "CURR" else amps * self.shunt_ohms
        values = values * (1.0 + self.gain_error) + self.offset_error
        values = quantise(values, acq.resolution)
        over = np.abs(values) > acq.range * OVERRANGE_FACTOR
        if over.any():
            values = np.where(over, np.copysign(OVERLOAD, values), values)
            self._ques_event |= (
                QUES_CURRENT_OVERLOAD if acq.function == "CURR" else QUES_VOLTAGE_OVERLOAD
            )
        return values

    def _take(self, count: int) -> list[float]:
        count = min(count, len(self._memory))
        return [self._memory.popleft() for _ in range(count)]

    def _wait_until(self, condition: Callable[[], bool]) -> bool:
        """Poll (releasing the lock) until ``condition`` holds or the meter stops."""
        while not self._stopping.is_set():
            self._catch_up()
            if condition():
                return True
            self._lock.release()
            try:
                time.sleep(0.005)
            finally:
                self._lock.acquire()
        return False

    def _min_interval(self) -> float:
        fn = self._settings.active
        return meter_facts().min_sample_interval_s(fn.nplc, self.line_frequency_hz, fn.autozero)

    def _start_acquisition(self, t_init: float) -> None:
        """Begin the acquisition INIT asks for, with the current settings, at ``t_init``."""
        settings = self._settings
        fn = settings.active
        minimum = self._min_interval()
        interval = settings.sample_timer_s if settings.sample_source == "TIM" else minimum
        if interval < minimum:
            self._ques_event |= QUES_SAMPLE_TIMING
            interval = minimum
        interval *= 1.0 + self.drift_ppm * 1e-6
        self._memory.clear()
        start = t_init + settings.trigger_delay_s
        self._acq = Acquisition(
            function=settings.function,
            range=fn.range,
            aperture_s=fn.nplc / self.line_frequency_hz,
            interval_s=interval,
            total=settings.sample_count * settings.trigger_count,
            resolution=meter_facts().nplc_resolution_ppm[fn.nplc] * 1e-6 * fn.range,
            t_init=t_init,
            t_first=start if settings.trigger_source == "IMM" else None,
        )

    def _abort_acquisition(self) -> None:
        """Stop taking readings now (ABORt); those already due stay in memory."""
        acq = self._acq
        if acq is not None and acq.t_abort is None:
            t = now()
            self._advance(t)
            acq.t_abort = t

    def _external_edge(self, t: float, level: int) -> None:
        """The device's marker pin, wired to Ext Trig, changed to ``level`` at ``t``: with
        ``TRIG:SOUR EXT`` an acquisition waiting for its trigger starts on an edge of the
        configured slope, the trigger latency and delay later."""
        previous = self.marker_edges[-1][1] if self.marker_edges else 0
        self.marker_edges.append((t, level))
        acq = self._acq
        wanted = 1 if self._settings.trigger_slope == "POS" else 0
        if (acq is not None and acq.t_first is None and self._settings.trigger_source == "EXT"
                and level == wanted and previous != level and t >= acq.t_init):
            acq.t_first = t + self.trigger_latency_s + self._settings.trigger_delay_s

    def _bus_trigger(self) -> None:
        """A software trigger (*TRG): readings start after the trigger delay."""
        acq = self._acq
        if acq is not None and acq.t_first is None and self._settings.trigger_source == "BUS":
            acq.t_first = now() + self._settings.trigger_delay_s
