"""A cassette of one hour of 1 kHz samples takes at most 1.2x the raw float64 size of its
samples: written through the real recorder as a meter's stream arrives (a batch per 0.25 s
poll, stamps t0 + k*dt as the drivers compute them), read back bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.cassette.reader import Cassette
from hilbench.cassette.recorder import CassetteRecorder
from hilbench.documents import PhaseStop, Samples

RATE_HZ = 1000
SECONDS = 3600
POLL = 250  # readings per drain at the orchestrator's 0.25 s poll


@pytest.mark.slow
def test_one_hour_at_1_khz_takes_at_most_1_2_times_its_float64_size(tmp_path):
    n = RATE_HZ * SECONDS
    rng = np.random.default_rng(0)
    t = 48213.0173 + np.arange(n) * (1.0 / RATE_HZ)
    values = 0.25 + 0.01 * rng.standard_normal(n)  # amps: every bit of the mantissa used
    meta = {"instrument": "synthetic", "supply_voltage_v": 12.0, "time_resolution_s": 1e-3}
    folder = tmp_path / "cassette"
    recorder = CassetteRecorder(folder)
    for at in range(0, n, POLL):
        recorder(Samples("run", "phase", "dmm", "A", t[at: at + POLL],
                         values[at: at + POLL], meta))
    recorder(PhaseStop("phase", "run", float(t[-1]), "success"))
    recorder.close()
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    ratio = size / (8 * n)
    print(f"cassette of {n} samples: {size} bytes, {ratio:.4f} x their float64 size")
    assert ratio <= 1.2
    cassette = Cassette(folder)
    (stream,) = cassette.streams()
    t_back, values_back = cassette.read(stream)
    assert np.array_equal(t_back, t) and np.array_equal(values_back, values)
    assert not cassette.check_hashes()
