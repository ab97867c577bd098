"""Energy to solution is integrated from the meter's samples up to the reported reach time, and
agrees with the simulated bench's true energy within its stated uncertainty."""

from __future__ import annotations

import pytest

from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from hilbench.workloads.qubo.report.tts_table import tts_rows
from tests.campaign_toml import campaign, keysight, measured_agent, qubo, write_campaign
from tests.subprocesses import run_campaign, unit_runs

# asserts honest runs verified on time: alone (tests/alone.py)
pytestmark = [pytest.mark.slow, pytest.mark.serial]


def tts_campaign(meter: SimulatedMeter) -> str:
    """Time to solution on 1000-node graphs, the spawned CPU agent's solve phases read from
    the simulated ``meter`` every 2 ms."""
    return campaign(
        measured_agent(meter),
        qubo(
            scenario="time_to_solution",
            nodes=[1000],
            densities=[0.05],
            seeds=[0, 1],
            gaps=[0.3, 0.2],
            max_time_s=5.0,
            timeouts_s=None,
        ),
        keysight(
            meter.resource,
            settings={"range": 10.0, "nplc": 0.02, "sample_interval_s": 0.002, "timeout_s": 2.0},
        ),
        name="tts-energy",
    )


@pytest.mark.serial
def test_tts_energy_matches_the_true_energy_within_its_uncertainty(tmp_path):
    db = tmp_path / "tts.sqlite"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=5) as meter:
        path = write_campaign(tmp_path, tts_campaign(meter))
        proc = run_campaign(path, db)
    assert proc.returncode == 0, proc.stderr
    checked = 0
    with Store(db) as store:
        for run in unit_runs(store):
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            [result] = store.events(run["uid"], name="solve_result")
            reached = {entry["gap"]: entry["t_s"] for entry in result["data"]["reached"]}
            for gap in (0.3, 0.2):
                latency = metrics[f"tts_s@{gap:g}"]["value"]
                energy = metrics[f"tts_energy_j@{gap:g}"]
                if latency is None:  # not reached within max_time_s: no energy either
                    assert energy["value"] is None
                    continue
                assert latency == reached[gap]
                if energy["value"] is None:  # too short for two readings: said, not guessed
                    assert "reading" in energy["meta"]["reason"]
                    continue
                # The device solves at a constant true power from t_start on.
                truth = SIMULATED_CPU.watts("solving") * latency
                assert energy["uncertainty"] > 0
                assert abs(energy["value"] - truth) <= energy["uncertainty"], (energy, truth)
                # The window ends at the reach time, not at the end of the run.
                start, end = energy["meta"]["window"]
                assert end - start == pytest.approx(latency, abs=1e-9)
                checked += 1
    assert checked >= 2, "too few reached gaps had energy to compare"
    with Store(db) as store:
        campaign_uid = store.campaigns()[0]["uid"]
    rows = {row.gap: row for row in tts_rows(db, campaign_uid)}
    assert set(rows) == {0.3, 0.2}
    loose = rows[0.3]
    assert loose.runs == 2 and loose.reached == 2
    assert loose.mean_energy_j == pytest.approx(
        SIMULATED_CPU.watts("solving") * loose.mean_latency_s, abs=loose.energy_uncertainty_j
    )
