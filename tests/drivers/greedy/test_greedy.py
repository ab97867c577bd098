"""A driver defined only in tests/ passes the conformance suite and runs a campaign, without a
change to any core file; a driver that breaks the contract fails the suite, naming the check."""

from __future__ import annotations

import threading

from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.store import Store
from hilbench.testing.driver_conformance import check_driver
from hilbench.workloads.qubo.contract import QuboRun, Solved
from tests.agent_thread import serving
from tests.campaign_toml import TEST_TIMING_ATTEMPTS
from tests.drivers.greedy.driver import GreedyDriver
from tests.subprocesses import unit_runs


def test_the_greedy_driver_conforms():
    assert check_driver(GreedyDriver()) == []


class LyingDriver(GreedyDriver):
    """Claims a cost one better than its state's, and a timed region of no length."""

    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        solved = super().solve(body, stop)
        solved.reply.cost -= 1
        solved.reply.actual_s += 1.0
        return solved


def test_a_driver_that_breaks_the_contract_fails_the_suite():
    failures = {f.check: f.reason for f in check_driver(LyingDriver())}
    assert "claimed cost" in failures["qubo greedy: the state and its claimed cost check out"]
    assert "actual_s" in failures["qubo greedy: timing fields agree"]


def test_the_greedy_driver_runs_a_campaign(tmp_path):
    runtime = AgentRuntime(GreedyDriver(), "greedy0", bind="tcp://127.0.0.1:*")
    with serving(runtime):
        campaign = parse_campaign({
            "campaign": {"timing_attempts": TEST_TIMING_ATTEMPTS},  # an instant answer
            "agents": [{"id": "greedy0", "driver": "greedy", "address": runtime.endpoint}],
            "qubo": [{"agent": "greedy0", "nodes": [10, 25], "densities": [0.1],
                      "seeds": [0], "solvers": ["greedy"], "timeouts_s": [0.01]}],
        }, "greedy.toml")
        outcome = CampaignRunner(campaign, tmp_path / "g.sqlite").run()
    assert (outcome.completed, outcome.failed) == (2, 0)
    with Store(tmp_path / "g.sqlite") as store:
        for run in unit_runs(store):
            metrics = {m["name"]: m["value"] for m in store.metrics(run["uid"])}
            assert metrics["feasible"] == 1.0 and metrics["bks_gap"] is not None
