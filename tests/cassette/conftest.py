"""One small campaign on the simulated bench (a CPU agent read by the simulated Keysight over
TCP), recorded as a cassette; the cassette and audit tests read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from tests.campaign_toml import qubo, write_campaign
from tests.orchestrator.test_instrument_faults import meter_campaign
from tests.subprocesses import run_campaign

CAMPAIGNS = Path(__file__).resolve().parents[1] / "cassettes" / "campaigns"


@pytest.fixture(scope="package")
def recorded(tmp_path_factory) -> tuple[Path, Path, Path]:
    """``(campaign file, store, cassette folder)`` of three QUBO runs measured by the meter."""
    tmp = tmp_path_factory.mktemp("recorded")
    db, cassette = tmp / "s.sqlite", tmp / "cassette"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=3) as meter:
        # Beside the two fixed-timeout runs, one time-to-solution run long enough for the
        # meter's readings (every 10 ms) to cover the time to each gap: SA's first read,
        # where both gaps are reached, takes ~0.4 s at 40 000 sweeps (at the default 1 000 it
        # came at ~31 ms, and 3 readings covered 94 % of that window or more by chance: the
        # audit test of tts_energy_j failed once in CI).
        tts = qubo(scenario="time_to_solution", nodes=[1000], densities=[0.05], seeds=[0],
                   gaps=[0.3, 0.2], max_time_s=5.0, timeouts_s=None)
        text = meter_campaign(meter, seeds=[0, 1], agent_options={"num_sweeps": 40_000})
        path = write_campaign(tmp, text + "\n" + tts)
        proc = run_campaign(path, db, "--record", str(cassette), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return path, db, cassette


@pytest.fixture(scope="package")
def recorded_asc(tmp_path_factory) -> Path:
    """The store of a tiny ASC campaign (one single-stream run of 10 samples and one power run
    of 0.5 s windows, the CPU agent read by the simulated Keysight): the campaign that
    tests/cassettes/asc-cpu was recorded from."""
    tmp = tmp_path_factory.mktemp("recorded-asc")
    db = tmp / "s.sqlite"
    proc = run_campaign(CAMPAIGNS / "asc-cpu.toml", db, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return db
