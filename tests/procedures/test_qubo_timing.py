"""QUBO timing the orchestrator checks itself, against an agent it does not run (written from
the protocol spec alone, tests/spec_agent.py, in its own process): a late answer is an overrun
filed as such, never under its nominal timeout; a late answer with forged times is
``timing_inconsistent``; the overrun threshold holds on both sides of its boundary."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hilbench.report.qubo_table import gap_rows
from hilbench.store import Store
from hilbench.store.frames import metrics_frame
from hilbench.workloads.qubo.check import is_overrun
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import hilbench, run_campaign

SPEC_AGENT = Path(__file__).resolve().parents[1] / "spec_agent.py"
TIMEOUT_S = 0.1


@contextmanager
def spec_agent(*rules: str) -> Iterator[str]:
    """The spec-only agent in its own process, with SEED:MODE:FACTOR ``rules``; its endpoint."""
    args = [sys.executable, str(SPEC_AGENT)]
    for rule in rules:
        args += ["--seed-rule", rule]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ENDPOINT "), line
        yield line.split()[1]
    finally:
        proc.kill()
        proc.wait(10)


def spec_campaign(tmp_path: Path, endpoint: str, seeds: list[int], name: str) -> Path:
    return write_campaign(tmp_path, campaign(
        agent("spec", "spec", spawn=False, address=endpoint),
        qubo("spec", nodes=[25], densities=[0.1], seeds=seeds, solvers=["sa"],
             timeouts_s=[TIMEOUT_S]),
        name=name,
    ))


def runs_by_seed(db: Path) -> dict[int, dict]:
    with Store(db) as store:
        out = {}
        for run in store.runs():
            run["metrics"] = {m["name"]: m for m in store.metrics(run["uid"])}
            run["events"] = {e["name"]: e for e in store.events(run["uid"])}
            out[run["params"]["seed"]] = run
        return out


@pytest.mark.parametrize(("requested", "on_time", "late"), [
    (0.1, 0.104, 0.106),  # 5 % of the requested time: 1.04× on time, 1.06× an overrun
    (1e-3, 1.4e-3, 1.6e-3),  # below 10 ms the 0.5 ms floor decides
])
def test_overrun_threshold_on_both_sides_of_its_boundary(requested, on_time, late):
    assert not is_overrun(requested, on_time)
    assert is_overrun(requested, late)


@pytest.mark.serial
@pytest.mark.slow
def test_an_overrun_is_kept_out_of_its_nominal_timeout_everywhere(tmp_path):
    """Seed 1 answers 10× late (a better answer, at 60 W), seeds 2 and 3 at 1.04× and 1.06×:
    the row's gap, power and energy are seeds 0 and 2's alone; 1 and 3 are counted apart."""
    db = tmp_path / "late.sqlite"
    with spec_agent("1:late:10", "2:slow:1.04", "3:slow:1.06") as endpoint:
        proc = run_campaign(spec_campaign(tmp_path, endpoint, [0, 1, 2, 3], "late"), db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = runs_by_seed(db)
    assert [runs[s]["metrics"]["overrun"]["value"] for s in range(4)] == [0.0, 1.0, 0.0, 1.0]
    late = runs[1]["metrics"]
    assert late["overrun_actual_s"]["value"] == pytest.approx(10 * TIMEOUT_S)
    for name in ("bks_gap", "avg_power_w", "energy_j"):
        assert late[name]["value"] is None, name
        assert late[name]["meta"]["excluded"] == "overrun"
    assert late["avg_power_w"]["meta"]["measured"] == 60.0  # kept, but not as a figure
    on_time = [runs[0]["metrics"], runs[2]["metrics"]]
    with Store(db) as store:
        campaign_uid = store.campaigns()[0]["uid"]
    [row] = gap_rows(db, campaign_uid)
    assert (row.runs, row.overruns, row.on_time) == (4, 2, 2)
    assert row.mean_gap == 1.0  # the on-time answers are empty sets; the late one is better
    assert row.mean_power_w == pytest.approx(11.0)  # 10 W and 12 W, not 60 W
    assert row.mean_energy_j == pytest.approx(
        sum(m["avg_power_w"]["value"] * m["actual_s"]["value"] for m in on_time) / 2)
    assert row.mean_actual_s == pytest.approx(
        sum(m["actual_s"]["value"] for m in on_time) / 2)
    assert row.overrun_actual_s == pytest.approx((1.06 * TIMEOUT_S, 10 * TIMEOUT_S))
    frame = metrics_frame(db, campaign_uid).set_index("param.seed")
    assert frame.loc[[0, 2], "bks_gap"].tolist() == [1.0, 1.0]
    assert frame.loc[[1, 3], ["bks_gap", "avg_power_w", "energy_j"]].isna().all().all()
    shown = hilbench("results", "--db", db, "--campaign", "late").stdout
    assert "bks_gap: 1 ± 0 [2]" in shown and "avg_power_w: 11 ± 1 W [2]" in shown, shown
    assert "OVERRUN 2/4" in shown
    summary = proc.stdout
    assert "2/4: 0.106, 1 s" in summary, summary


@pytest.mark.serial
@pytest.mark.slow
def test_a_late_reply_with_forged_times_is_timing_inconsistent(tmp_path):
    """Seed 1 replies 10× late but claims the requested time: that run fails with the reason
    and both figures, the others complete, exit 1; running again resumes without error."""
    db = tmp_path / "forged.sqlite"
    with spec_agent("1:forged:10") as endpoint:
        path = spec_campaign(tmp_path, endpoint, [0, 1, 2], "forged")
        first = run_campaign(path, db)
        second = run_campaign(path, db)
    assert first.returncode == 1, first.stdout + first.stderr
    runs = runs_by_seed(db)
    assert runs[0]["status"] == runs[2]["status"] == "success"
    bad = runs[1]
    assert bad["status"] == "fail" and "timing_inconsistent" in bad["reason"]
    assert "the agent claims 0.100000 s" in bad["reason"]
    check = bad["events"]["timing_check"]["data"]
    assert not check["consistent"]
    assert check["claimed_s"] == pytest.approx(TIMEOUT_S)
    assert check["orchestrator_window_s"] >= 10 * TIMEOUT_S  # the orchestrator's bound
    assert not any(bad["metrics"].get(n) for n in ("bks_gap", "avg_power_w", "energy_j"))
    # An honest run stores the orchestrator's bound beside the agent's claim.
    honest = runs[0]["metrics"]
    assert honest["orchestrator_window_s"]["value"] >= honest["actual_s"]["value"]
    assert honest["orchestrator_window_s"]["meta"]["consistent"] is True
    # The rerun resumes: the two good units are skipped, the forged one is flagged again.
    assert second.returncode == 1, second.stdout + second.stderr
    assert "Traceback" not in second.stderr
    assert "2 resumed from earlier" in second.stdout
    with Store(db) as store:
        assert sum(r["status"] == "fail" for r in store.runs()) == 2
