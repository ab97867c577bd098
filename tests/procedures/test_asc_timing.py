"""An ASC device's claimed timed region is checked against the orchestrator's own window: a
sample said to have run before it was asked for fails its run as ``timing_inconsistent``."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from hilbench.agent.driver import DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.store import Store
from tests.agent_thread import serving
from tests.cpu_wrapper import CpuWrapper
from tests.subprocesses import unit_runs


class BackdatingDriver(CpuWrapper):
    """The cpu driver; sample 0's single-stream reply claims it ran a second earlier (the first
    of its sample list: no earlier sample to overlap, so the orchestrator's window catches it)."""

    name: ClassVar[str] = "backdating"

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        reply = self.inner.run(params, stop)
        body = dict(reply.body)
        if params.get("mode") == "single_stream" and params.get("index") == 0:
            body["t_start"] -= 1.0
            body["t_end"] -= 1.0
        return DriverResult(body, reply.arrays)



def test_a_backdated_sample_fails_its_run_as_timing_inconsistent(tmp_path, asc_cache,
                                                                   monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(asc_cache))
    runtime = AgentRuntime(BackdatingDriver(str(tmp_path / "no-powercap")), "back",
                           bind="tcp://127.0.0.1:*", heartbeat_s=0.1, liveness=20)
    with serving(runtime):
        campaign = parse_campaign({
            "agents": [{"id": "a", "driver": "backdating", "address": runtime.endpoint}],
            "asc": [{"agent": "a", "fixture": True, "model": "packaged", "limit": 1,
                     "power": False}],
        }, "asc-timing.toml")
        outcome = CampaignRunner(campaign, tmp_path / "r.sqlite").run()
    assert outcome.failed == 1
    with Store(tmp_path / "r.sqlite") as store:
        [run] = unit_runs(store)
    assert run["status"] == "fail"
    assert "timing_inconsistent: sample 0: the claimed timed region starts" in run["reason"]
    assert "before the request was sent" in run["reason"]
