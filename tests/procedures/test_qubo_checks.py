"""The orchestrator checks every QUBO answer itself: a wrong claimed cost fails the run, an
infeasible state is recorded as such and never averaged into a gap, an overrun is flagged.

A real agent runtime on a loopback ZeroMQ socket hosts the real cpu driver behind a wrapper that
tampers with its reply the way a faulty solver would.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import numpy as np
import pytest

from hilbench.agent.driver import DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.clock import now
from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.store import Store
from hilbench.workloads.qubo import SparseQubo, edges_in_graph
from hilbench.workloads.qubo.report.table import gap_rows
from tests.agent_thread import serving_apart
from tests.campaign_toml import TEST_TIMING_ATTEMPTS
from tests.cpu_wrapper import CpuWrapper
from tests.figures import measured
from tests.subprocesses import unit_runs

pytestmark = pytest.mark.serial  # asserts honest runs verified on time: alone (tests/alone.py)


class TamperingDriver(CpuWrapper):
    """The cpu driver, with its replies altered according to ``fault``."""

    name: ClassVar[str] = "tampering"

    def __init__(self, fault: str, rapl_root: str) -> None:
        super().__init__(rapl_root)
        self.fault = fault
        self.matrix: np.ndarray | None = None

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        self.matrix = arrays[0]
        return self.inner.load(params, arrays)

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        reply = self.inner.run(params, stop)
        body, state = dict(reply.body), reply.arrays[0]
        if self.fault == "wrong_cost":
            body["cost"] -= 1  # claims one node more than its state holds
        elif self.fault == "infeasible" and params["seed"] == 1:  # all nodes, honest cost
            state = np.ones_like(state)
            body["cost"] = SparseQubo.from_matrix(self.matrix).cost(state)
        elif self.fault == "slow":  # the solver kept going 30 ms past the deadline
            time.sleep(0.03)
            body["t_end"] = now()  # honest: its region ends when the extra work did
            body["actual_s"] = body["t_end"] - body["t_start"]
        return DriverResult(body, [state])


@pytest.fixture
def tampering_agent(request, tmp_path):
    def runtime() -> AgentRuntime:
        return AgentRuntime(TamperingDriver(request.param, str(tmp_path / "no-powercap")),
                            "tamper", bind="tcp://127.0.0.1:*", heartbeat_s=0.1, liveness=20)

    with serving_apart(runtime) as endpoint:
        yield endpoint


def run_campaign(tmp_path, address: str, seeds=(0, 1), timeout_s=0.01) -> tuple[Store, Any]:
    campaign = parse_campaign(
        {
            "agents": [{"id": "a", "driver": "tampering", "address": address}],
            "qubo": [
                {
                    "agent": "a",
                    "nodes": [25],
                    "densities": [0.1],
                    "seeds": list(seeds),
                    "solvers": ["tabu"],
                    "timeouts_s": [timeout_s],
                }
            ],
            "campaign": {"timing_attempts": TEST_TIMING_ATTEMPTS},
        },
        "checks.toml",
    )
    db = tmp_path / "r.sqlite"
    outcome = CampaignRunner(campaign, db).run()
    return db, outcome


@pytest.mark.parametrize("tampering_agent", ["wrong_cost"], indirect=True)
def test_a_wrong_claimed_cost_fails_the_run_and_names_both_costs(tmp_path, tampering_agent):
    db, outcome = run_campaign(tmp_path, tampering_agent, seeds=(0,))
    assert outcome.failed == 1 and outcome.completed == 0
    with Store(db) as store:
        [run] = unit_runs(store)
        assert run["status"] == "fail"
        assert "bad_solution" in run["reason"] and "claimed cost" in run["reason"]
        [check] = store.events(run["uid"], name="solution_check")
        assert "but its returned state costs" in check["data"]["error"]
        assert store.events(run["uid"], name="solve_result")  # the raw reply is kept


@pytest.mark.parametrize("tampering_agent", ["infeasible"], indirect=True)
def test_an_infeasible_state_has_its_own_status_and_no_gap(tmp_path, tampering_agent):
    db, outcome = run_campaign(tmp_path, tampering_agent, timeout_s=0.1)
    assert outcome.completed == 2
    with Store(db) as store:
        campaign_uid = store.campaigns()[0]["uid"]
        metrics = {
            run["params"]["seed"]: {m["name"]: m for m in store.metrics(run["uid"])}
            for run in unit_runs(store)
        }
    bad, good = metrics[1], metrics[0]
    assert bad["feasible"]["value"] == 0.0 and bad["feasible"]["meta"]["status"] == "infeasible"
    assert bad["violated_edges"]["value"] == edges_in_graph(25, 0.1)  # all nodes: every edge
    assert bad["bks_gap"]["value"] is None and bad["bks_gap"]["meta"]["status"] == "infeasible"
    assert good["feasible"]["value"] == 1.0 and measured(good["bks_gap"]) == 0.0
    [row] = gap_rows(db, campaign_uid)
    assert row.runs == 2 and row.feasible == 1 and row.feasible_fraction == 0.5
    # the infeasible run is not averaged in (nor the good one, had a loaded machine made it late)
    expected = None if good["overrun"]["value"] else 0.0
    assert row.mean_gap == row.worst_gap == expected


@pytest.mark.parametrize("tampering_agent", ["slow"], indirect=True)
def test_an_overrun_is_flagged_in_the_run_and_the_table(tmp_path, tampering_agent):
    db, outcome = run_campaign(tmp_path, tampering_agent, seeds=(0,))
    assert outcome.completed == 1
    with Store(db) as store:
        campaign_uid = store.campaigns()[0]["uid"]
        [run] = unit_runs(store)
        metrics = {m["name"]: m for m in store.metrics(run["uid"])}
    assert metrics["overrun"]["value"] == 1.0
    assert metrics["actual_s"]["value"] >= 0.03  # the 30 ms the solver kept going
    assert metrics["requested_s"]["value"] == 0.01
    [row] = gap_rows(db, campaign_uid)
    assert row.overruns == 1 and row.max_actual_over_requested >= 3
    assert row.on_time == 0 and row.mean_gap is None and row.mean_actual_s is None
