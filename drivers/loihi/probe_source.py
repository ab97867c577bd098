"""Loihi 2's on-chip probe readings (probes.py) as a hilbench power source, and the driver's
``power`` reply entry built from it: one path from probe to reply."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from hilbench.power.source import Health, PowerSourceError, SampleBatch, SourceInfo
from hilbench_drivers.loihi.probes import COVERS, RAILS

# Intel publishes no accuracy for these probes; the figures carry none rather than a made-up one.
ACCURACY = "not published by Intel (none assumed)"
SOURCE_NAME = "loihi2-probes"


class LoihiProbeSource:
    """Loihi 2's on-chip probes as a :class:`hilbench.power.source.PowerSource`.

    The probes are read once, after Lava's run, so :meth:`record` feeds one run's readings in
    and ``read``/``stop`` hand them out as samples: one per algorithmic time step, stamped at the
    step's start on the agent clock, each the run's average chip power (the probes give energy
    per run, time per step). The samples therefore integrate to exactly the probes' energy. On
    the CPU back end there are no probes: ``configure`` raises with :attr:`reason`, and
    :meth:`report` says why nothing was measured.
    """

    def __init__(self, available: bool = True, reason: str | None = None) -> None:
        if not available and not reason:
            raise ValueError("an unavailable probe source must say why")
        self.available = available
        self.reason = None if available else reason
        self.info = SourceInfo(
            name=SOURCE_NAME,
            unit="W",
            time_resolution_s=0.0,  # one time step; known once a run has been recorded
            domains=tuple(label.split(":")[0] for label in RAILS.values()),
            simulated=False,
        )
        self._health = Health()
        self._profile: dict[str, Any] | None = None
        self._pending: tuple[np.ndarray, np.ndarray] | None = None
        self._durations = np.empty(0)
        self._started = False

    # --- PowerSource ------------------------------------------------------------------------
    def configure(self) -> None:
        if not self.available:
            raise PowerSourceError(f"{SOURCE_NAME}: {self.reason}")

    def arm(self) -> None:
        self.configure()

    def start(self) -> None:
        self.arm()
        self._profile, self._pending, self._health = None, None, Health()
        self._started = True

    def record(self, profile: dict[str, Any], t_start: float) -> None:
        """Take one run's probe readings (from :func:`read_profiler`); the run began at
        ``t_start`` on the agent clock."""
        if not self._started:
            raise PowerSourceError(f"{SOURCE_NAME}: record() called before start()")
        steps = np.asarray(profile.get("step_s") or [], dtype=np.float64)
        energy = profile["energy_j"]["total"]
        if steps.size == 0 or steps.sum() <= 0:
            total_w = profile["power_w"]["total"]
            if total_w <= 0:
                raise PowerSourceError(
                    f"{SOURCE_NAME}: the probes gave neither step times nor power"
                )
            steps = np.array([energy / total_w])
        self._profile = profile
        starts = t_start + np.concatenate(([0.0], np.cumsum(steps)[:-1]))
        self._pending = (starts, np.full(steps.size, energy / steps.sum()))
        self._durations = steps
        self.info = replace(self.info, time_resolution_s=float(steps.mean()))

    def read(self) -> SampleBatch:
        if self._pending is None:
            return SampleBatch.empty()
        t, w = self._pending
        self._pending = None
        return SampleBatch(t, w)

    def stop(self) -> SampleBatch:
        self._started = False
        return self.read()

    def health(self) -> Health:
        return self._health

    def close(self) -> None:
        self._started, self._pending = False, None

    # --- the driver's reply -----------------------------------------------------------------
    def report(self, samples: SampleBatch | None = None) -> dict[str, Any]:
        """The ``power`` reply entry: energy and average power from the samples this source
        gave (``samples``), per-rail energy and static/dynamic split from the probes."""
        if not self.available:
            return {"measured": False, "source": None, "reason": self.reason}
        if self._profile is None or samples is None or len(samples) == 0:
            reason = "no probe readings recorded"
            return {"measured": False, "source": SOURCE_NAME, "reason": reason}
        duration = float(self._durations.sum())
        energy = float(np.dot(samples.values, self._durations))
        rails = self._profile["energy_j"]
        return {
            "measured": True,
            "source": SOURCE_NAME,
            "simulated": self.info.simulated,
            "domains": {rail: rails[rail] for rail in RAILS},
            "rails": dict(RAILS),
            "covers": COVERS,
            "accuracy": ACCURACY,
            "time_resolution_s": self.info.time_resolution_s,
            "samples": len(samples),
            "energy_j": energy,
            "duration_s": duration,
            "avg_power_w": energy / duration,
            "static_power_w": self._profile["power_w"]["static"],
            "dynamic_power_w": self._profile["power_w"]["dynamic"],
        }

