"""Every power figure of a run can be recomputed from the raw samples and events it stored."""

from __future__ import annotations

import pytest

from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from tests.campaign_toml import write_campaign
from tests.figures import measured, power_again
from tests.orchestrator.test_instrument_faults import meter_campaign
from tests.subprocesses import run_campaign, unit_runs

pytestmark = pytest.mark.slow


@pytest.mark.serial  # power against the truth through a timed link: alone
def test_avg_power_is_recomputed_from_stored_samples_and_device_times(tmp_path):
    db = tmp_path / "t.sqlite"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=3) as meter:
        path = write_campaign(tmp_path, meter_campaign(meter, seeds=[0, 1]))
        proc = run_campaign(path, db, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        runs = unit_runs(store)
        assert len(runs) == 2
        for run in runs:
            recomputed = power_again(store, run["uid"], "dmm", "A")
            metrics, result = recomputed.metrics, recomputed.result
            power, timeout, start = metrics["avg_power_w"], recomputed.timeout, recomputed.start
            # The window is the fixed runtime from the device's own start, mapped with the
            # stored clock offset: [start, start + timeout].
            assert power["meta"]["window"][0] == pytest.approx(start, abs=1e-9)
            assert power["meta"]["window"][1] - start == pytest.approx(timeout, abs=1e-9)
            assert recomputed.sample_meta["supply_voltage_v"] == 12.0
            assert measured(power) == pytest.approx(recomputed.again.mean_w, rel=1e-12)
            # solving until the device's end, idle after it until the timeout; the solver's own
            # set-up in its call (declared untimed work, outside its timed region) draws the
            # solving power too
            solving = min(metrics["actual_s"]["value"] + (result.get("untimed_s") or 0.0),
                          timeout)
            truth = (SIMULATED_CPU.watts("solving") * solving
                     + SIMULATED_CPU.watts("idle") * (timeout - solving)) / timeout
            # the truth within the figure's stated 95 % uncertainty (the unread end of the
            # window, where the solver went idle, is part of it), which stays a tight one
            assert abs(measured(power) - truth) <= power["uncertainty"], power["meta"]["budget"]
            # (the meter reads 4 ms of every 10 ms: up to 6 ms at each end stay unread)
            assert power["uncertainty"] < 0.03 * truth
            energy = measured(metrics["energy_j"])
            assert energy == pytest.approx(measured(power) * timeout)  # × the fixed runtime
