"""Power instruments of a campaign: opened once, acquiring in step with each measured phase.

An instrument is found through the ``hilbench.instruments`` entry-point group, or is the
simulated bench meter (``simulate = "<power model>"``), which hilbench starts itself on loopback
and which the measured agent's driver tells what its device is doing. During a phase, samples are
drained from the instrument whenever the orchestrator waits (so long windows never overflow the
instrument's memory) and emitted as ``Samples`` documents; a health problem fails the run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench.clock import now
from hilbench.documents import Event, Samples
from hilbench.orchestrator.spawn import SpawnedProcess, SpawnError, spawn_announcing
from hilbench.power.align import IntervalEstimate
from hilbench.power.marker_record import MarkerEdges, recorded_markers
from hilbench.power.registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from hilbench.power.registry import instrument_class
from hilbench.power.source import (
    InstrumentFault,
    PowerSource,
    PowerSourceError,
    SampleBatch,
    SourceInfo,
)

# Where these names stood before issue 32 moved them down to power/ (the power arithmetic and
# the instrument registry); kept importable from here until their users import them there.
from hilbench.power.timing import DEFAULT_START_UNCERTAINTY_S as DEFAULT_START_UNCERTAINTY_S
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE, SIMULATED_CPU, DevicePowerModel
from hilbench.sim.xylo_power import XYLO_AUDIO_2

log = logging.getLogger(__name__)

POWER_MODELS: dict[str, DevicePowerModel] = {
    m.name: m for m in (ARDUINO_NANO_33_BLE, SIMULATED_CPU, XYLO_AUDIO_2)
}


@dataclass(frozen=True)
class InstrumentSpec:
    id: str
    driver: str
    measures: str  # agent id whose device this instrument measures
    resource: str | None = None
    visa_library: str = ""
    simulate: str | None = None  # power-model name: start the simulated bench meter
    noise_std_w: float = 0.0
    drift_ppm: float = 0.0  # the simulated meter's timebase error
    gain_error: float = 0.0  # the simulated meter's calibration error (a deliberate one)
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class Instrument:
    spec: InstrumentSpec
    source: PowerSource
    # the simulated meter's process, or a simulating plugin's bench (``address``, ``stop``)
    meter: SpawnedProcess | Any = None

    @property
    def info(self) -> SourceInfo:
        return self.source.info

    @property
    def simulated(self) -> bool:
        """Readings from a power model (the simulated bench meter, or a source that says so)."""
        return self.spec.simulate is not None or bool(getattr(self.info, "simulated", False))

    @property
    def simulation(self) -> str:
        if self.spec.simulate is not None and isinstance(self.meter, SpawnedProcess):
            return (f"{self.info.name} readings from the simulated bench meter (power model "
                    f"{self.spec.simulate})")
        return str(getattr(self.info, "simulation", "") or "simulated readings")

    @property
    def description(self) -> str:
        """The instrument's name as figures cite it; a simulated one says so."""
        return f"{self.info.name} (simulated)" if self.simulated else self.info.name

    @property
    def sim_address(self) -> str | None:
        """host:port that a simulated device reports its state to."""
        return self.meter.address if self.meter is not None else None


def _start_simulated_meter(spec: InstrumentSpec, log_dir: Path | None) -> SpawnedProcess:
    """The simulated meter runs as a process of its own, like a real DMM: sharing the
    orchestrator's interpreter would delay its timing by whatever the orchestrator is doing."""
    if spec.simulate not in POWER_MODELS:
        raise InstrumentFault(
            f"instrument {spec.id}: unknown power model {spec.simulate!r} "
            f"(known: {sorted(POWER_MODELS)})"
        )
    args = ["sim-meter", "--model", str(spec.simulate), "--noise", str(spec.noise_std_w),
            "--drift-ppm", str(spec.drift_ppm), "--gain-error", str(spec.gain_error)]
    try:
        return spawn_announcing(f"simulated meter {spec.id}", args, log_dir=log_dir)
    except SpawnError as exc:
        raise InstrumentFault(str(exc)) from exc


def check_instrument_settings(spec: InstrumentSpec) -> str | None:
    """What is wrong with an instrument's driver, model or settings, found without any I/O
    (the driver is built but not configured), or None: a typo is caught when the campaign is
    loaded, before any process starts."""
    if spec.simulate is not None and spec.simulate not in POWER_MODELS:
        return f"unknown power model {spec.simulate!r} (known: {sorted(POWER_MODELS)})"
    try:
        cls = instrument_class(spec.driver)
    except InstrumentFault as exc:
        return str(exc)
    # The simulated meter's address is known only once it runs; the driver only stores it here.
    resource = "the simulated meter" if spec.simulate is not None else spec.resource
    library = "@py" if spec.simulate is not None else spec.visa_library
    try:
        cls.from_config(resource, spec.settings, visa_library=library)
    except (ValueError, TypeError, PowerSourceError) as exc:
        return str(exc)
    return None


def open_instrument(spec: InstrumentSpec, log_dir: Path | None = None) -> Instrument:
    """Start the simulated meter if asked (its log in ``log_dir``), build the driver and
    configure it (I/O happens here)."""
    meter = None
    resource, library = spec.resource, spec.visa_library
    cls = instrument_class(spec.driver)
    if spec.simulate is not None and hasattr(cls, "simulated"):
        return _open_simulated_plugin(spec, cls)
    if spec.simulate is not None:
        meter = _start_simulated_meter(spec, log_dir)
        host, _, port = meter.address.rpartition(":")
        resource, library = f"TCPIP::{host}::{port}::SOCKET", "@py"
    try:
        source = cls.from_config(resource, spec.settings, visa_library=library)
        source.configure()
    except (ValueError, PowerSourceError) as exc:
        if meter is not None:
            meter.stop()
        raise InstrumentFault(f"instrument {spec.id} ({spec.driver}): {exc}") from exc
    return Instrument(spec, source, meter)


def _open_simulated_plugin(spec: InstrumentSpec, cls: Any) -> Instrument:
    """An instrument plugin that simulates itself (``cls.simulated``, e.g. a fast instrument
    with marker inputs): it returns its configured source and the bench the measured device
    reports to (``address``, ``stop``), used as the simulated meter is."""
    if spec.simulate not in POWER_MODELS:
        raise InstrumentFault(f"instrument {spec.id}: unknown power model {spec.simulate!r} "
                              f"(known: {sorted(POWER_MODELS)})")
    try:
        source, bench = cls.simulated(POWER_MODELS[str(spec.simulate)], spec.settings,
                                      noise_std_w=spec.noise_std_w, drift_ppm=spec.drift_ppm,
                                      gain_error=spec.gain_error)
    except (ValueError, PowerSourceError) as exc:
        raise InstrumentFault(f"instrument {spec.id} ({spec.driver}, simulated): {exc}") from exc
    return Instrument(spec, source, bench)


class PhaseAcquisition:
    """One instrument acquiring through one phase; ``poll`` drains samples into documents."""

    def __init__(self, instrument: Instrument, emit: Any, run_uid: str, phase_uid: str) -> None:
        self.instrument = instrument
        self._emit = emit
        self.run_uid = run_uid
        self.phase_uid = phase_uid
        self.batches: list[SampleBatch] = []
        # How well this acquisition's first-sample time is known (None: the source says not).
        self.t0_uncertainty_s: float | None = None
        # The instrument's real sample interval as learned at stop (None: the source says not).
        self.interval_estimate: IntervalEstimate | None = None
        # Marker edges the instrument recorded in its own stream (a marker source only)
        self.markers: list[MarkerEdges] | None = None

    def start(self) -> None:
        try:
            self.instrument.source.arm()
            self.instrument.source.start()
        except PowerSourceError as exc:
            raise InstrumentFault(f"instrument {self.instrument.spec.id}: {exc}") from exc
        self.t0_uncertainty_s = getattr(self.instrument.source, "t0_uncertainty_s", None)

    def poll(self) -> None:
        try:
            self._keep(self.instrument.source.read())
        except PowerSourceError as exc:
            raise InstrumentFault(f"instrument {self.instrument.spec.id}: {exc}") from exc

    def stop(self) -> SampleBatch:
        """End acquisition; raise InstrumentFault if any sample is untrustworthy."""
        source = self.instrument.source
        try:
            self._keep(source.stop())
        except PowerSourceError as exc:
            raise InstrumentFault(f"instrument {self.instrument.spec.id}: {exc}") from exc
        health = source.health()
        if not health.ok:
            problems = [*health.messages]
            if health.overloads:
                problems.append(f"{health.overloads} overload reading(s)")
            if health.dropped:
                problems.append(f"{health.dropped} dropped sample(s)")
            if health.overflow:
                problems.append("reading memory overflowed")
            raise InstrumentFault(f"instrument {self.instrument.spec.id}: " + "; ".join(problems))
        self.markers = recorded_markers(source, self._emit, self.run_uid, self.phase_uid,
                                        self.instrument.spec.id,
                                        sum(len(b) for b in self.batches))
        if not self.batches:
            return SampleBatch.empty()
        import numpy as np

        batch = SampleBatch(
            np.concatenate([b.t for b in self.batches]),
            np.concatenate([b.values for b in self.batches]),
        )
        return self._restamp(batch, getattr(source, "interval_estimate", None))

    def _restamp(self, batch: SampleBatch, estimate: IntervalEstimate | None) -> SampleBatch:
        """Stamp the readings with the instrument's estimated real interval instead of the
        nominal one, and store what was done as an ``instrument_interval`` event: the stored
        ``Samples`` keep the nominal stamps, and that record turns them into these."""
        if estimate is None or estimate.t0 is None:
            return batch
        self.interval_estimate = estimate
        t = estimate.restamp(batch.t)
        data = {
            "instrument": self.instrument.spec.id,
            **estimate.to_dict(),
            "readings": len(batch),
            "last_shift_s": float(t[-1] - batch.t[-1]),
            "last_residual_s": estimate.stamp_half_width_s(float(t[-1])),
            "restamped": True,
        }
        self._emit(Event(self.run_uid, self.phase_uid, "instrument_interval", now(), data))
        log.info("instrument %s runs %.1f ppm from its nominal interval; readings restamped",
                 self.instrument.spec.id, estimate.drift_ppm)
        return SampleBatch(t, batch.values)

    def _keep(self, batch: SampleBatch) -> None:
        if len(batch) == 0:
            return
        self.batches.append(batch)
        info = self.instrument.info
        self._emit(
            Samples(
                self.run_uid,
                self.phase_uid,
                self.instrument.spec.id,
                info.unit,
                batch.t,
                batch.values,
                {
                    "instrument": info.name,
                    "supply_voltage_v": info.supply_voltage_v,
                    "time_resolution_s": info.time_resolution_s,
                    "t0_uncertainty_s": self.t0_uncertainty_s,
                    # a replay's coverage rule must be the run's (hilbench.cassette.figures)
                    **({"readings_tile_time": True} if info.readings_tile_time else {}),
                },
            )
        )


class InstrumentSet:
    """The campaign's instruments, opened at start and closed at the end."""

    def __init__(self, specs: list[InstrumentSpec], log_dir: Path | None = None) -> None:
        self.specs = specs
        self.log_dir = log_dir  # where a simulated meter's log goes
        self.instruments: dict[str, Instrument] = {}

    def open(self) -> None:
        for spec in self.specs:
            self.instruments[spec.id] = open_instrument(spec, self.log_dir)
            log.info("instrument %s ready: %s", spec.id, self.instruments[spec.id].info.name)

    def measuring(self, agent_id: str) -> list[Instrument]:
        return [i for i in self.instruments.values() if i.spec.measures == agent_id]

    def simulated_meter_for(self, agent_id: str) -> str | None:
        """The id of the simulated meter measuring ``agent_id``'s device, if one does."""
        for spec in self.specs:
            if spec.measures == agent_id and spec.simulate is not None:
                return spec.id
        return None

    def sim_address_for(self, agent_id: str) -> str | None:
        """Where ``agent_id``'s device reports its state: every simulated meter measuring it,
        ``host:port`` separated by commas (each hears every change)."""
        found = [inst.sim_address for spec in self.specs
                 if spec.measures == agent_id and spec.simulate is not None
                 and (inst := self.instruments.get(spec.id)) is not None and inst.sim_address]
        return ",".join(found) or None

    def close(self) -> None:
        for inst in self.instruments.values():
            try:
                inst.source.close()
            except Exception:  # closing must not mask the campaign's outcome
                log.exception("closing instrument %s failed", inst.spec.id)
            if inst.meter is not None:
                inst.meter.stop()
        self.instruments.clear()
