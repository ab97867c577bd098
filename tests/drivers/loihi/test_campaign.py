"""examples/qubo-loihi.toml, cut to one size and seed: the loihi agent (spawned from the Lava
environment, real Lava on its CPU back end) beside the cpu driver on the same workloads; every
Lava answer is checked by the orchestrator and labelled simulated in the stored runs and table."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.store import Store
from tests.campaign_toml import patient
from tests.figures import measured
from tests.subprocesses import run_campaign, unit_runs

# the example, given 600 s; serial: its Lava runs are checked against the link bound
pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(900)]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "qubo-loihi.toml"


def test_the_loihi_example_compares_lava_with_the_cpu_solvers(tmp_path, lava_python):
    text = patient(EXAMPLE.read_text())
    for old, new in [
        ('python = "../.venv-loihi/bin/python"', f'python = "{lava_python}"'),
        ("nodes = [25, 50]", "nodes = [25]"),
        ("seeds = [0, 1]", "seeds = [0]"),
        ("timeouts_s = [0.5, 2.0]", "timeouts_s = [0.5, 1.0]"),  # each solver's two budgets
    ]:
        assert old in text
        text = text.replace(old, new)
    campaign = tmp_path / "qubo-loihi.toml"
    campaign.write_text(text)
    db = tmp_path / "r.sqlite"
    proc = run_campaign(campaign, db, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store(db) as store:
        runs = unit_runs(store)
        lava = [r for r in runs if r["params"]["solver"] == "lava"]
        assert len(lava) == 2 and len(runs) == 6
        assert all(r["status"] == "success" for r in runs)
        for run in lava:
            assert run["simulated"]
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            assert metrics["feasible"]["value"] == 1.0  # the orchestrator's own check
            assert 0 <= measured(metrics["bks_gap"]) <= 1
            assert metrics["requested_s"]["value"] in (0.5, 1.0)
            assert metrics["avg_power_w"]["value"] is None
            assert "CPU back end" in metrics["avg_power_w"]["meta"]["reason"]
    table = proc.stdout
    assert "lava" in table and "sa" in table and "tabu" in table
    assert "simulated" in table.lower()
