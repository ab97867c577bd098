"""Reading Loihi 2's on-chip power and time probes from Lava's profiler into plain numbers.

On a Loihi 2 host, ``lava.utils.profiler.Profiler.init(Loihi2HwCfg)`` returns the Loihi2HWProfiler
of Intel's lava-loihi extension (INRC members only, so it is not installed here).
lava-optimization 0.3.0 creates it when ``SolverConfig(probe_time=True, probe_energy=True)`` and
hands it back as ``SolverReport.profiler``. Its result API, as its users call it (e.g.
NECOTIS/TemporalLearningInRSNNs, ``loihi_experiment/delay.py``; lava-optimization's
``solver_benchmarker.py``):

- ``power_breakdown()`` -> (total, dynamic, static, vdd, vdd_m, vdd_io) in watts
- ``energy_breakdown()`` -> the same six, in microjoules
- ``execution_time`` -> time per algorithmic time step, in microseconds

The rails: VDD feeds the neuro cores' logic, VDD_M their SRAM, VDD_IO the chip's I/O. The board,
its FPGA and the host are on none of them, so a figure from these probes covers the chip only.
This file needs only numpy (it runs inside the Lava child process as well as in tests);
probe_source.py turns its readings into a hilbench power source.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RAILS = {
    "vdd": "VDD: neuro-core logic",
    "vdd_m": "VDD_M: neuro-core SRAM",
    "vdd_io": "VDD_IO: chip I/O",
}
COVERS = "Loihi 2 chip rails VDD, VDD_M, VDD_IO; not the board, its FPGA or the host"
_BREAKDOWN = ("total", "dynamic", "static", "vdd", "vdd_m", "vdd_io")


def read_profiler(profiler: Any) -> dict[str, Any]:
    """Power (W), energy (J) per rail and per-step time (s) from a Loihi 2 profiler."""
    if profiler is None:
        raise RuntimeError("on-chip probes were asked for, but Lava created no profiler")
    power = dict(zip(_BREAKDOWN, (float(v) for v in profiler.power_breakdown()), strict=True))
    energy_uj = dict(zip(_BREAKDOWN, (float(v) for v in profiler.energy_breakdown()), strict=True))
    step_us = np.asarray(getattr(profiler, "execution_time", []), dtype=np.float64).reshape(-1)
    return {
        "power_w": power,
        "energy_j": {k: v * 1e-6 for k, v in energy_uj.items()},
        "step_s": (step_us * 1e-6).tolist(),
    }
