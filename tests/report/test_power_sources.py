"""Every power figure names its source, and an agent's own claim is never printed as a plain
measured power: the agent here is written from protocols/ alone (tests/spec_agent.py, its own
process) and claims 0.001 W, ``{measured: true, avg_power_w: 0.001, source: "spec"}``, with no
instrument in the campaign."""

from __future__ import annotations

import math
import re
import threading

import pytest

from hilbench.agent.runtime import AgentRuntime
from hilbench.contracts.power import PowerReport, StatedAccuracy
from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.report.campaign_data import load_campaign_data
from hilbench.report.render import render_text
from hilbench.report.summary import summary_tables
from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from hilbench.workloads.qubo.contract import QuboRun, Solved
from hilbench_drivers.cpu import CpuDriver
from tests.agent_thread import serving_apart
from tests.campaign_toml import agent, campaign, keysight, qubo, write_campaign
from tests.procedures.test_qubo_timing import TIMEOUT_S, runs_by_seed, spec_agent, spec_campaign
from tests.subprocesses import hilbench, run_campaign, unit_runs

pytestmark = pytest.mark.serial  # asserts honest runs verified on time: alone (tests/alone.py)

CLAIM = "0.001000"
RUNTIME_S = 0.2  # the claimed watts as the summary prints them (4 significant digits)


def test_an_agents_power_claim_without_an_instrument_is_labelled_everywhere(tmp_path):
    """Both seeds solve for the whole timeout (a claim covering the fixed runtime; one that
    does not is left out, test_qubo_timing). The orchestrator stores no power of its own
    (avg_power_w and energy_j have none, saying why); the claim is the agent's report,
    agent_avg_power_w, with its uncertainty not stated. summary and report show it only
    beside "agent report" and "uncertainty not stated"; the leaderboard has no row that could
    carry it."""
    db = tmp_path / "claim.sqlite"
    with spec_agent("0:slow:1.0", "1:slow:1.0", power_w=0.001) as endpoint:
        proc = run_campaign(spec_campaign(tmp_path, endpoint, [0, 1], "claim"), db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = runs_by_seed(db)
    for run in runs.values():
        assert run["status"] == "success"
        m = run["metrics"]
        assert m["avg_power_w"]["value"] is None and m["energy_j"]["value"] is None
        assert m["avg_power_w"]["meta"]["reason"].startswith("no instrument measured this run")
        reported = m["agent_avg_power_w"]
        assert reported["value"] == 0.001 and reported["uncertainty"] is None
        assert reported["meta"]["power_source"] == {
            "kind": "agent", "name": "spec", "agent": "spec", "uncertainty": "not stated",
            "description": ""}
        assert m["stopped_early"]["value"] == 0.0
        assert m["agent_energy_j"]["value"] == 0.001 * TIMEOUT_S
    summary = hilbench("summary", "claim", "--db", db, "--width", "200").stdout
    labelled = f"{CLAIM} (agent report)"
    assert labelled in summary and "uncertainty not stated" in summary, summary
    assert summary.count(CLAIM) == summary.count(labelled)  # never a plain figure
    assert "agent spec's own report (spec)" in summary
    report = tmp_path / "report"
    done = hilbench("report", "claim", "--db", db, "--system", "examples/system.toml",
                    "--out", report)
    assert done.returncode == 0, done.stderr
    for name in ("report.md", "report.html"):
        text = (report / name).read_text()
        assert labelled in text and "uncertainty not stated" in text, name
        assert len(re.findall(re.escape(CLAIM), text)) == text.count(labelled), name
    board = hilbench("leaderboard", "claim", "--db", db, "--system", "examples/system.toml",
                     "--format", "csv")
    assert "0.001" not in board.stdout
    with Store(db) as store:
        assert len(unit_runs(store)) == 2


class ReportingDriver(CpuDriver):
    """The cpu driver, reporting its own power too: ``claims[seed]`` watts, ± 5 % stated."""

    def __init__(self, claims: dict[int, float], **options: str) -> None:
        super().__init__(**options)
        self.claims = claims

    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        solved = super().solve(body, stop)
        solved.reply.power = PowerReport(
            measured=True, source="rapl", avg_power_w=self.claims[body.seed],
            accuracy=StatedAccuracy(relative=0.05, basis="test claim"))
        return solved


def test_an_agents_report_beside_an_instrument_is_shown_with_their_agreement(tmp_path):
    """The simulated meter reads the truth (38 W while solving, 12 W idle); the agent reports
    38 W for seed 0 and 60 W for seed 1, each ± 5 % stated. The instrument's figure over the
    fixed runtime is the headline; each report is stored beside it with E_n against the
    instrument over the report's own window, the solving time (ISO 13528): seed 0 agrees,
    seed 1 is flagged; the summary shows both."""
    db = tmp_path / "both.sqlite"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=3) as meter:
        sim = f"{meter.host}:{meter.port}"
        # The agent in a process of its own, so its "idle" does not wait for this process's
        # GIL on its way to the meter (the test still failed once in CI with it: the meter
        # computes readings lazily, and a late "idle" misses those computed before it came).
        with serving_apart(lambda: AgentRuntime(ReportingDriver({0: 38.0, 1: 60.0}, sim_meter=sim),
                                                "cpu0", bind="tcp://127.0.0.1:*")) as endpoint:
            path = write_campaign(tmp_path, campaign(
                agent("cpu0", "cpu", spawn=False, address=endpoint),
                qubo(nodes=[25], densities=[0.1], seeds=[0, 1], solvers=["sa"],
                     timeouts_s=[RUNTIME_S]),
                keysight(meter.resource, instrument_id="dmm0",
                         settings={"range": 10.0, "nplc": 0.02, "sample_interval_s": 0.001}),
                name="both"))
            outcome = CampaignRunner(load_campaign(path), db).run()
    assert (outcome.completed, outcome.failed) == (2, 0)
    with Store(db) as store:
        runs = {r["params"]["seed"]: {m["name"]: m for m in store.metrics(r["uid"])}
                for r in store.runs()}
        campaign_uid = store.campaigns()[0]["uid"]
    for seed, claim in ((0, 38.0), (1, 60.0)):
        m = runs[seed]
        assert m["overrun"]["value"] == 0.0, m["actual_s"]  # (a loaded host can overrun)
        assert m["avg_power_w"]["meta"]["power_source"]["kind"] == "simulation"
        a = m["actual_s"]["value"]  # the fixed runtime: solving, then idle if SA ends early
        truth = (38.0 * min(a, RUNTIME_S) + 12.0 * max(0.0, RUNTIME_S - a)) / RUNTIME_S
        assert abs(m["avg_power_w"]["value"] - truth) <= m["avg_power_w"]["uncertainty"]
        reported = m["agent_avg_power_w"]
        assert reported["value"] == claim and reported["uncertainty"] > 0
        assert reported["meta"]["power_source"]["kind"] == "agent"
        found = reported["meta"]["agreement"]
        measured = found["instrument_w"]
        assert found["en"] == pytest.approx(
            abs(claim - measured) / math.hypot(reported["uncertainty"],
                                               found["instrument_uncertainty_w"]))
        assert found["flagged"] is (seed == 1) is (found["en"] > 1)
    [table] = summary_tables(load_campaign_data(db, campaign_uid))
    text = render_text(table, 200)
    assert "agent report W" in text  # the column beside the instrument's power
    assert "DISAGREES with the instrument: E_n up to" in text and "(1/2 runs above 1)" in text
    assert "power source: simulated meter dmm0" in text
