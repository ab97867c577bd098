"""A misbehaving power meter marks the run invalid, with the reason, never a number, and stops
the campaign with exit 3 (like a lost agent); the runs before it keep their figures."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import pytest

from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from tests.campaign_toml import campaign, keysight, measured_agent, qubo, write_campaign
from tests.figures import measured
from tests.subprocesses import hilbench_command, start_campaign, unit_runs, wait_for_run

pytestmark = pytest.mark.slow


def meter_campaign(meter: SimulatedMeter, seeds: Sequence[int] = range(6),
                   agent_options: dict | None = None) -> str:
    """QUBO runs on a spawned CPU agent, their solve phases read from the simulated ``meter``
    by the Keysight driver over TCP."""
    return campaign(
        measured_agent(meter, options=agent_options),
        qubo(seeds=seeds, timeouts_s=[0.3]),
        keysight(
            meter.resource,
            settings={"range": 10.0, "nplc": 0.2, "sample_interval_s": 0.01, "timeout_s": 2.0},
        ),
        name="faulty-meter",
    )


@pytest.mark.parametrize(
    "fault, reason",
    [
        (lambda m: m.inject_error("Settings conflict; simulated fault", code=-221,
                                  on_command="INIT"), "simulated fault"),
        (lambda m: m.stall(), "no answer"),
    ],
    ids=["scpi-error", "hung-instrument"],
)
def test_meter_fault_marks_runs_invalid_and_keeps_good_ones(tmp_path, fault, reason):
    db = tmp_path / "f.sqlite"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.01, seed=1) as meter:
        path = write_campaign(tmp_path, meter_campaign(meter))
        proc = start_campaign(path, db)
        try:
            wait_for_run(db, proc, timeout_s=90)
            fault(meter)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            meter.resume()
    assert proc.returncode == 3, err
    assert "instrument dmm" in err
    assert "to resume: " + shlex.join(hilbench_command("run", path, "--db", db)) in err
    with Store(db) as store:
        runs = unit_runs(store)
        good = [r for r in runs if r["status"] == "success"]
        bad = [r for r in runs if r["status"] == "fail"]
        assert good and len(bad) == 1, "the campaign stops at the first invalid run"
        assert len(good) + len(bad) == len(runs) < 6
        assert bad[0]["reason"].startswith("invalid: instrument dmm")
        assert reason in bad[0]["reason"]
        assert bad[0]["uid"][:8] in err
        assert [c["status"] for c in store.campaigns()] == ["abort"]
        for run in good:
            power = {m["name"]: m for m in store.metrics(run["uid"])}["avg_power_w"]
            assert measured(power) == pytest.approx(SIMULATED_CPU.watts("solving"), rel=0.01)
        for run in bad:  # an invalid run carries no power figure at all
            assert "avg_power_w" not in {m["name"] for m in store.metrics(run["uid"])}
