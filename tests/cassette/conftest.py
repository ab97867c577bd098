"""One small campaign on the simulated bench (a CPU agent read by the simulated Keysight over
TCP), recorded as a cassette; the cassette and audit tests read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from tests.campaign_toml import write_campaign
from tests.orchestrator.test_instrument_faults import meter_campaign
from tests.subprocesses import run_campaign


@pytest.fixture(scope="package")
def recorded(tmp_path_factory) -> tuple[Path, Path, Path]:
    """``(campaign file, store, cassette folder)`` of two QUBO runs measured by the meter."""
    tmp = tmp_path_factory.mktemp("recorded")
    db, cassette = tmp / "s.sqlite", tmp / "cassette"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=3) as meter:
        path = write_campaign(tmp, meter_campaign(meter, seeds=[0, 1]))
        proc = run_campaign(path, db, "--record", str(cassette), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return path, db, cassette
