"""The largest-workload procedure grows n until the agent refuses or a limit is reached, and
stores the largest size that returned a feasible answer with the reason it stopped."""

from __future__ import annotations

import io
from typing import Any, ClassVar

import numpy as np
import pytest
from rich.console import Console

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.report.summary import print_summary
from hilbench.store import Store
from tests.agent_thread import serving
from tests.cpu_wrapper import CpuWrapper
from tests.subprocesses import unit_runs


class SmallDevice(CpuWrapper):
    """The cpu driver on a device that holds at most 120 nodes: bigger loads are refused."""

    name: ClassVar[str] = "small-device"

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        if arrays[0].shape[0] > 120:
            raise DriverError(f"{arrays[0].shape[0]} nodes do not fit in 120", "device_full")
        return self.inner.load(params, arrays)


@pytest.fixture
def small_device(tmp_path):
    runtime = AgentRuntime(
        SmallDevice(str(tmp_path / "no-powercap")), "small", bind="tcp://127.0.0.1:*",
        heartbeat_s=0.1, liveness=20,
    )
    with serving(runtime):
        yield runtime.endpoint


def run_largest(tmp_path, agent: str, table: str) -> list[dict[str, Any]]:
    path = tmp_path / "largest.toml"
    path.write_text(f'[campaign]\nname = "largest"\n\n{agent}\n\n[[largest_workload]]\n{table}\n')
    db = tmp_path / "r.sqlite"
    outcome = CampaignRunner(load_campaign(path), db).run()
    assert outcome.failed == 0
    summary = io.StringIO()
    print_summary(db, outcome.campaign_uid, Console(file=summary, width=200), "largest")
    assert "largest workload supported" in summary.getvalue()
    found = []
    with Store(db) as store:
        for run in unit_runs(store):
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            attempts = [e["data"] for e in store.events(run["uid"], name="size_attempt")]
            found.append({"run": run, "largest": metrics["largest_nodes"], "attempts": attempts})
    return found


SPAWNED = '[[agents]]\nid = "cpu0"\ndriver = "cpu"\nspawn = true'


@pytest.mark.slow
def test_growth_stops_at_the_configured_ceiling_with_that_reason(tmp_path):
    [result] = run_largest(
        tmp_path, SPAWNED,
        "densities = [1.0]\nstart_nodes = 50\ngrowth = 2.0\nmax_nodes = 300\ntimeout_s = 0.01",
    )
    largest = result["largest"]
    assert largest["value"] == 200  # 50, 100, 200; 400 would pass max_nodes
    assert largest["meta"]["stop_reason"] == "max_nodes"
    assert [a["nodes"] for a in result["attempts"]] == [50, 100, 200]
    # fully connected: the maximum independent set is one node, and it was checked
    assert all(a["check"]["set_size"] == 1 and a["outcome"] == "feasible"
               for a in result["attempts"])


@pytest.mark.slow
def test_growth_stops_before_a_matrix_past_the_memory_limit(tmp_path):
    [result] = run_largest(
        tmp_path, SPAWNED,
        "densities = [0.01]\nstart_nodes = 50\nmemory_limit_bytes = 22500\ntimeout_s = 0.01",
    )
    assert result["largest"]["value"] == 100
    assert result["largest"]["meta"]["stop_reason"] == "memory_limit"
    assert "200²" in result["largest"]["meta"]["detail"]


@pytest.mark.slow
def test_a_refusing_agent_ends_the_search_and_the_last_good_size_is_kept(tmp_path, small_device):
    [result] = run_largest(
        tmp_path, f'[[agents]]\nid = "small"\ndriver = "small-device"\naddress = "{small_device}"',
        "densities = [0.01]\nstart_nodes = 30\ngrowth = 2.0\ntimeout_s = 0.01",
    )
    largest = result["largest"]
    assert largest["value"] == 120  # 30, 60, 120 fit; 240 is refused
    assert largest["meta"]["stop_reason"] == "refused"
    assert "device_full" in largest["meta"]["detail"]
    assert result["attempts"][-1]["nodes"] == 240
    assert result["attempts"][-1]["outcome"] == "refused"


def test_a_reply_breaking_the_contract_ends_the_search_as_failed(tmp_path):
    from tests.spec_agent import SpecAgent

    with SpecAgent(("omit", "actual_s"), faulty_above_nodes=60) as agent:
        [result] = run_largest(
            tmp_path, f'[[agents]]\nid = "spec0"\ndriver = "spec"\naddress = "{agent.address}"',
            'densities = [0.01]\nsolver = "anytime"\nstart_nodes = 30\ngrowth = 2.0\n'
            "timeout_s = 0.01",
        )
    largest = result["largest"]
    assert largest["value"] == 60  # 30 and 60 answered; 120's reply had no actual_s
    assert largest["meta"]["stop_reason"] == "failed"
    assert "bad_reply" in largest["meta"]["detail"] and "actual_s" in largest["meta"]["detail"]
