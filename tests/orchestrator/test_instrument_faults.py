"""A misbehaving power meter marks the run invalid, with the reason, never a number, and stops
the campaign with exit 3 (like a lost agent); the runs before it keep their figures."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store, StoreError

CAMPAIGN = """
[campaign]
name = "faulty-meter"

[[agents]]
id = "cpu0"
driver = "cpu"
spawn = true
options = {{ sim_meter = "127.0.0.1:{port}" }}

[[qubo]]
agent = "cpu0"
nodes = [10]
densities = [0.1]
seeds = [0, 1, 2, 3, 4, 5]
solvers = ["sa"]
timeouts_s = [0.3]

[[instruments]]
id = "dmm"
driver = "keysight34465a"
measures = "cpu0"
resource = "{resource}"
visa_library = "@py"

[instruments.settings]
function = "current"
range = 10.0
nplc = 0.2
sample_interval_s = 0.01
supply_voltage_v = 12.0
timeout_s = 2.0
"""


def first_success(db, deadline_s: float = 90) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with Store(db) as store:
                if any(r["status"] == "success" for r in store.runs()):
                    return
        except StoreError:
            pass
        time.sleep(0.1)
    raise AssertionError("no run completed")


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
        path = tmp_path / "c.toml"
        path.write_text(CAMPAIGN.format(port=meter.port, resource=meter.resource))
        proc = subprocess.Popen([sys.executable, "-m", "hilbench", "run", str(path), "--db",
                                 str(db), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            first_success(db)
            fault(meter)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            meter.resume()
    assert proc.returncode == 3, err
    assert "instrument dmm" in err and f"to resume: hilbench run {path} --db {db}" in err
    with Store(db) as store:
        runs = store.runs()
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
            assert power["value"] == pytest.approx(SIMULATED_CPU.watts("solving"), rel=0.01)
        for run in bad:  # an invalid run carries no power figure at all
            assert "avg_power_w" not in {m["name"] for m in store.metrics(run["uid"])}
