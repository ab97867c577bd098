"""The simulated bench meter follows the device of an agent started by hand (``address``) as it
follows a spawned one: the link goes to the agent in ``configure {sim_meter}``. An agent that
cannot take it refuses the campaign before any run — never idle power reported as active."""

from __future__ import annotations

import pytest

from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.runner import CampaignRunner, CampaignSetupError
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from hilbench_drivers.cpu import CpuDriver
from tests.agent.conftest import SleepyDriver
from tests.agent_thread import serving, serving_apart
from tests.campaign_toml import keysight, write_campaign
from tests.subprocesses import unit_runs

CAMPAIGN = """
[campaign]
name = "address-sim"
timing_attempts = 10

[[agents]]
id = "cpu0"
driver = "cpu"
address = "{address}"

[[qubo]]
agent = "cpu0"
nodes = [25]
densities = [0.05]
seeds = [0]
solvers = ["anytime"]
timeouts_s = [0.2]
"""


def campaign_file(tmp_path, address):
    meter = keysight(simulate="simulated-cpu", noise_std_w=0.05,
                     settings={"range": 10.0, "nplc": 0.02, "autozero": False,
                               "sample_interval_s": 0.001})
    return write_campaign(tmp_path, CAMPAIGN.format(address=address) + meter)


@pytest.mark.serial
@pytest.mark.slow
def test_an_agent_started_by_hand_drives_the_simulated_meter(tmp_path):
    from hilbench.agent.runtime import AgentRuntime

    def runtime() -> AgentRuntime:  # in a process of its own, as a hand-started agent is
        return AgentRuntime(CpuDriver(rapl_root=str(tmp_path / "no-powercap")), "cpu0",
                            bind="tcp://127.0.0.1:*")

    with serving_apart(runtime) as endpoint:
        campaign = load_campaign(campaign_file(tmp_path, endpoint))
        outcome = CampaignRunner(campaign, tmp_path / "a.sqlite").run()
    assert outcome.completed == 1
    with Store(tmp_path / "a.sqlite") as store:
        (run,) = unit_runs(store)
        power = {m["name"]: m for m in store.metrics(run["uid"])}["avg_power_w"]
    solving = SIMULATED_CPU.watts("solving")
    assert solving > SIMULATED_CPU.watts("idle") + 20  # 38 W against 12 W: not to be confused
    assert power["value"] == pytest.approx(solving, abs=max(3 * power["uncertainty"], 0.5))


def test_an_agent_that_cannot_follow_the_meter_refuses_the_campaign(tmp_path):
    from hilbench.agent.runtime import AgentRuntime

    runtime = AgentRuntime(SleepyDriver(), "cpu0", bind="tcp://127.0.0.1:*")
    with serving(runtime):
        campaign = load_campaign(campaign_file(tmp_path, runtime.endpoint))
        with pytest.raises(CampaignSetupError, match="cannot follow agent cpu0") as refused:
            CampaignRunner(campaign, tmp_path / "b.sqlite").run()
    assert "idle power as active" in str(refused.value)
    with Store(tmp_path / "b.sqlite") as store:
        assert unit_runs(store) == []
