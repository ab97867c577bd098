"""Where each stage of a pipeline ran: the input of
:func:`hilbench.power.stage_attribution.attribute_stage_power`.

Why its own module: the procedure builds it from the agent's per-sample times and the
estimator only reads it, so the checks that make it trustworthy (sorted, disjoint, finite)
live with the data, where a bad schedule is refused before any fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

OTHER = "between"  # the remainder state: time inside the window that no stage covers
OVERLAP_TOLERANCE_S = 1e-9  # stages that touch may overlap by rounding, not more


@dataclass(frozen=True)
class StageSchedule:
    """Where each stage ran, on the orchestrator timeline (agent times already mapped by the
    phase's clock offset). Intervals of all stages are disjoint; time inside the window that
    no stage covers is the remainder state :data:`OTHER` (load/unload, harness, round trips)."""

    starts: dict[str, np.ndarray]
    ends: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        if set(self.starts) != set(self.ends) or not self.starts:
            raise ValueError(f"schedule needs the same stages in starts and ends, got "
                             f"{sorted(self.starts)} and {sorted(self.ends)}")
        if OTHER in self.starts:
            raise ValueError(f"{OTHER!r} is the time no stage covers; it cannot be a stage")
        starts, ends = {}, {}
        for stage in self.starts:
            s = np.asarray(self.starts[stage], dtype=np.float64)
            e = np.asarray(self.ends[stage], dtype=np.float64)
            if s.ndim != 1 or s.shape != e.shape:
                raise ValueError(f"stage {stage!r}: starts and ends must be 1-D of equal length, "
                                 f"got {s.shape} and {e.shape}")
            if not (np.isfinite(s).all() and np.isfinite(e).all()):
                raise ValueError(f"stage {stage!r}: interval times must be finite numbers")
            bad = np.flatnonzero(e < s)
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"stage {stage!r}: interval {i} ends ({e[i]} s) before it "
                                 f"starts ({s[i]} s)")
            bad = np.flatnonzero(s[1:] < e[:-1])
            if bad.size:
                i = int(bad[0]) + 1
                raise ValueError(f"stage {stage!r}: intervals must be sorted and disjoint; "
                                 f"interval {i} starts at {s[i]} s, before {i - 1} ends")
            starts[stage], ends[stage] = s, e
        object.__setattr__(self, "starts", starts)  # float arrays; the caller's dicts untouched
        object.__setattr__(self, "ends", ends)
        s, e, kind = self.merged()
        bad = np.flatnonzero(s[1:] < e[:-1] - OVERLAP_TOLERANCE_S)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"stages overlap: {self.stages[kind[i]]!r} runs until {e[i]} s, "
                             f"{self.stages[kind[i + 1]]!r} starts at {s[i + 1]} s")

    @classmethod
    def consecutive(cls, t_start: np.ndarray, durations: Mapping[str, np.ndarray]
                    ) -> StageSchedule:
        """Stages that run back to back from each sample's ``t_start``, in ``durations``' order
        (the single-stream pipeline: pre-processing, then inference)."""
        t = np.asarray(t_start, dtype=np.float64)
        starts, ends = {}, {}
        for stage, d in durations.items():
            starts[stage] = t
            t = t + np.asarray(d, dtype=np.float64)
            ends[stage] = t
        return cls(starts, ends)

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(self.starts)

    def mean_duration_s(self, stage: str) -> float:
        d = self.ends[stage] - self.starts[stage]
        return float(d.mean()) if d.size else 0.0

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Intervals of all stages sorted by start: starts, ends, stage index."""
        kind = np.concatenate([np.full(self.starts[k].size, i) for i, k in enumerate(self.stages)])
        s = np.concatenate([self.starts[k] for k in self.stages])
        e = np.concatenate([self.ends[k] for k in self.stages])
        order = np.argsort(s, kind="stable")
        return s[order], e[order], kind[order]
