"""Fixed-timeout QUBO power is averaged over the fixed runtime [start, start + timeout] on the
orchestrator's mapping of the run, and energy = that power × timeout (DESIGN.md, "The rules,
precisely"): a solver that stops early is labelled ``stopped_early`` with its time, and its
device is still the system under test until the timeout. Checked against the simulated bench's
truth, with the real cpu driver's SA (in an agent on loopback) stopping honestly before each
timeout."""

from __future__ import annotations

import threading
from pathlib import Path

import msgspec
import pytest

from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.report.campaign_data import load_campaign_data
from hilbench.report.render import render_text
from hilbench.report.summary import summary_tables
from hilbench.report.trials import check_trials
from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from hilbench.workloads.qubo.contract import FixedTimeout, QuboRun, Solved
from hilbench.workloads.qubo.report.table import gap_rows
from hilbench_drivers.cpu import CpuDriver
from tests.agent_thread import serving_apart
from tests.campaign_toml import agent, campaign, keysight, qubo, write_campaign
from tests.subprocesses import unit_runs

pytestmark = pytest.mark.serial  # asserts honest runs verified on time: alone (tests/alone.py)

TIMEOUT_S = 0.1
SOLVING_W = SIMULATED_CPU.watts("solving")
IDLE_W = SIMULATED_CPU.watts("idle")


class EarlyDriver(CpuDriver):
    """The cpu driver's SA, stopped before each fixed timeout: its k-th run solves for
    ``fractions[k]`` of the timeout and says so (its timed region is that long). With
    ``keep_busy`` the device keeps drawing its solving power after the answer, until it is
    next asked anything (hardware that spins on after an early answer): then the power over
    the fixed runtime does not depend on when the solver stopped."""

    def __init__(self, fractions: tuple[float, ...], keep_busy: bool, **options: str) -> None:
        super().__init__(**options)
        self.fractions = fractions
        self.keep_busy = keep_busy
        self.runs = 0

    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        if not isinstance(body, FixedTimeout):
            return super().solve(body, stop)
        fraction = self.fractions[self.runs % len(self.fractions)]
        self.runs += 1
        solved = super().solve(msgspec.structs.replace(body, timeout_s=body.timeout_s * fraction),
                               stop)
        solved.reply.requested_s = body.timeout_s
        if self.keep_busy:
            self._sim_state("solving")
        return solved


def run_early(tmp_path: Path, fractions: tuple[float, ...], keep_busy: bool,
              repetitions: int) -> Path:
    """A campaign of ``repetitions`` fixed-timeout SA runs on the EarlyDriver, read by the
    simulated Keysight every millisecond; the store's path."""
    db = tmp_path / "early.sqlite"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=7) as meter:
        def runtime() -> AgentRuntime:
            driver = EarlyDriver(fractions, keep_busy, sim_meter=f"{meter.host}:{meter.port}")
            return AgentRuntime(driver, "cpu0", bind="tcp://127.0.0.1:*")

        with serving_apart(runtime) as endpoint:
            path = write_campaign(tmp_path, campaign(
                agent("cpu0", "cpu", spawn=False, address=endpoint),
                qubo(nodes=[25], densities=[0.1], seeds=[0], solvers=["sa"],
                     timeouts_s=[TIMEOUT_S]),
                keysight(meter.resource, instrument_id="dmm0",
                         settings={"range": 10.0, "nplc": 0.02, "sample_interval_s": 0.001}),
                name="early", repetitions=repetitions))
            outcome = CampaignRunner(load_campaign(path), db).run()
    assert (outcome.completed, outcome.failed) == (repetitions, 0)
    return db


def stored_runs(db: Path) -> list[dict]:
    with Store(db) as store:
        runs = unit_runs(store)  # the run each unit ended with (not a loaded host's retries)
        for run in runs:
            run["metrics"] = {m["name"]: m for m in store.metrics(run["uid"])}
    return runs


def test_power_over_the_fixed_runtime_makes_energy_repeatable_when_only_the_end_varies(tmp_path):
    """SA stops at 50-75 % of its timeout, differently in each of 5 trials, on a device that
    draws its solving power until the timeout: every run is labelled stopped_early with its
    time; its power (over [start, start + timeout]) is the true solving power within its
    uncertainty; energy = that power × timeout, repeatable within the 5-trial rule, where power
    × actual time would not be."""
    fractions = (0.5, 0.7, 0.6, 0.75, 0.65)
    db = run_early(tmp_path, fractions, keep_busy=True, repetitions=5)
    runs = stored_runs(db)
    assert [r["status"] for r in runs] == ["success"] * 5
    actual = []
    for run in runs:
        m = run["metrics"]
        assert m["overrun"]["value"] == 0.0
        assert m["stopped_early"]["value"] == 1.0
        assert m["stopped_early"]["meta"]["actual_s"] == m["actual_s"]["value"]
        power, energy = m["avg_power_w"], m["energy_j"]
        start, end = power["meta"]["window"]
        # the fixed runtime (start + T − start on the orchestrator's clock, ~1e4 s: ulp 2e-12)
        assert end - start == pytest.approx(TIMEOUT_S, abs=1e-9)
        assert power["meta"]["power_source"]["kind"] == "simulation"  # the simulated meter
        assert power["uncertainty"] > 0
        assert abs(power["value"] - SOLVING_W) <= power["uncertainty"], power
        assert energy["value"] == pytest.approx(power["value"] * TIMEOUT_S, rel=1e-12)
        assert energy["uncertainty"] == pytest.approx(power["uncertainty"] * TIMEOUT_S,
                                                      rel=1e-12)
        actual.append(m["actual_s"]["value"])
    # the old rule (power × actual time) spreads with the end alone: flagged not repeatable
    assert check_trials([SOLVING_W * a for a in actual]).repeatable is False
    with Store(db) as store:
        campaign_uid = store.campaigns()[0]["uid"]
    [row] = gap_rows(db, campaign_uid)
    assert len(row.stopped_early_actual_s) == 5
    assert check_trials(row.trials["energy_j"]).repeatable is True
    data = load_campaign_data(db, campaign_uid)
    [table] = summary_tables(data)
    text = render_text(table, 200)
    assert "5/5: " in text  # the stopped-early column, with their times
    assert not any("FLAG not repeatable" in note and "energy" in note for note in table.notes)


def test_a_device_that_idles_after_an_early_answer_is_measured_idling_until_the_timeout(
        tmp_path):
    """SA stops at 50 % of its timeout and the device idles: the fixed runtime's power holds
    the idle half too (the true (38 W × a + 12 W × (T − a)) / T, within its uncertainty),
    not the solving power the solving window alone would give."""
    db = run_early(tmp_path, (0.5,), keep_busy=False, repetitions=2)
    for run in stored_runs(db):
        m = run["metrics"]
        assert m["stopped_early"]["value"] == 1.0
        a = m["actual_s"]["value"]
        truth = (SOLVING_W * a + IDLE_W * (TIMEOUT_S - a)) / TIMEOUT_S
        power = m["avg_power_w"]
        assert abs(power["value"] - truth) <= power["uncertainty"], (power, truth)
        assert a < 0.8 * TIMEOUT_S  # (SA asked for half the timeout, on a loaded host too)
        # nearer the runtime's truth than the solving power a window to its end would give
        assert abs(power["value"] - truth) < abs(power["value"] - SOLVING_W)
        assert m["energy_j"]["value"] == pytest.approx(power["value"] * TIMEOUT_S, rel=1e-12)
