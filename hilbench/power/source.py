"""The power-source interface shared by external instruments (DMM) and internal ones (RAPL,
on-board monitors reported by agents, Intel SoC Watch).

A source is configured, armed, started and stopped around a phase; while acquiring, ``read()``
drains the samples gathered so far, already mapped onto the orchestrator timeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np

T = TypeVar("T")


@dataclass(frozen=True)
class SourceInfo:
    """What a source declares about itself, stored with the run."""

    name: str
    unit: Literal["W", "A", "V"]
    time_resolution_s: float  # sample interval (or counter granularity)
    # accuracy as ± (relative * reading + absolute), in the source's unit
    accuracy_relative: float = 0.0
    accuracy_absolute: float = 0.0
    supply_voltage_v: float | None = None  # set when the unit is "A": watts = amps * volts
    domains: tuple[str, ...] = ()  # e.g. ("package-0", "dram-0") or ("total system",)
    simulated: bool = False  # True: the readings come from a model, not a measurement
    simulation: str = ""  # what is simulated, one line
    # Marker support (optional; see hilbench.power.markers). The period of the instrument's own
    # sample clock when its samples are evenly spaced on it, and the bound on how late a marker
    # edge on a digital input shows in its stream (trigger/input latency, as the instrument's
    # data sheet or a loop-back measurement states it). None: the source does not say.
    sample_period_s: float | None = None
    marker_latency_s: float | None = None
    marker_channels: tuple[str, ...] = ()  # digital inputs recorded in the sample stream
    # one reading's least significant step, in the source's unit (0: not stated); constant
    # readings still carry half of it, so no figure reads ± 0
    resolution: float = 0.0
    # True when each reading is the mean from its own stamp to the next reading's stamp (an
    # energy counter polled, as RAPL): the readings tile time however late a poll came, so a
    # long spacing loses nothing and is not counted as a gap in a window's coverage.
    readings_tile_time: bool = False


@dataclass
class SampleBatch:
    """Timestamped samples on the orchestrator clock (seconds) with their values."""

    t: np.ndarray
    values: np.ndarray

    @classmethod
    def empty(cls) -> SampleBatch:
        return cls(np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass
class Health:
    """Problems seen while acquiring; any of them makes the affected run invalid."""

    overloads: int = 0
    dropped: int = 0
    overflow: bool = False
    messages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.overloads or self.dropped or self.overflow or self.messages)


class InstrumentFault(RuntimeError):
    """An instrument could not deliver trustworthy samples; the run is marked invalid."""


class PowerSourceError(RuntimeError):
    """An instrument or counter could not deliver trustworthy samples; the message says why."""


def check_settings(what: str, settings: Mapping[str, Any], known: set[str]) -> None:
    """Refuse unknown keys in an instrument's settings table, naming them (a typo must not
    silently fall back to a default)."""
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"unknown {what} setting(s) {unknown} (known: {sorted(known)})")


def settings_from_mapping(cls: type[T], values: Mapping[str, Any], *, where: str,
                          instrument: str, tuples: tuple[str, ...] = ("domains",)) -> T:
    """An instrument's settings dataclass from a campaign table: unknown keys refused by name,
    list values of the ``tuples`` fields made tuples, and a bad value's ValueError prefixed
    with ``where``."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown {instrument} setting(s) {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(known))})")
    values = {k: tuple(v) if k in tuples else v for k, v in values.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None


@runtime_checkable
class PowerSource(Protocol):
    info: SourceInfo

    def configure(self) -> None:
        """Apply the settings given at construction; may talk to the instrument."""

    def arm(self) -> None:
        """Prepare an acquisition so that ``start`` begins it with minimal latency."""

    def start(self) -> None:
        """Begin acquiring; the orchestrator-clock time of the first sample is recorded."""

    def read(self) -> SampleBatch:
        """Samples gathered since the previous ``read`` (may be empty)."""

    def stop(self) -> SampleBatch:
        """End the acquisition and return the remaining samples."""

    def health(self) -> Health:
        """Overloads, dropped samples, overflows since ``start``."""

    def close(self) -> None:
        """Release the instrument."""
