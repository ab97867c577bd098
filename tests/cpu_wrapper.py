"""The cpu driver behind a wrapper, for tests of a device that misbehaves one way: a subclass
overrides the one call it changes, everything else is the real driver's."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverResult
from hilbench_drivers.cpu import CpuDriver


class CpuWrapper:
    name: ClassVar[str] = "cpu-wrapper"

    def __init__(self, rapl_root: str) -> None:
        self.inner = CpuDriver(rapl_root=rapl_root)

    def capabilities(self) -> dict[str, Any]:
        return self.inner.capabilities()

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return self.inner.configure(params)

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        return self.inner.load(params, arrays)

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        return self.inner.run(params, stop)

    def close(self) -> None:
        self.inner.close()


def run_asc_unit(driver: Any, store: Path, **table: Any) -> dict[str, Any]:
    """One ``[[asc]]`` single-stream unit (one clip of the fixture, no power) against
    ``driver`` behind a real agent runtime on loopback, in a process of its own; the run the
    unit ended with (a loaded host's unverified attempts before it are left out)."""
    from hilbench.agent.runtime import AgentRuntime
    from hilbench.orchestrator.campaign import parse_campaign
    from hilbench.orchestrator.runner import CampaignRunner
    from hilbench.store import Store
    from tests.agent_thread import serving_apart
    from tests.campaign_toml import TEST_TIMING_ATTEMPTS
    from tests.subprocesses import unit_runs

    def runtime() -> AgentRuntime:
        return AgentRuntime(driver, "liar", bind="tcp://127.0.0.1:*", heartbeat_s=0.1,
                            liveness=20)

    with serving_apart(runtime) as endpoint:
        campaign = parse_campaign({
            "campaign": {"timing_attempts": TEST_TIMING_ATTEMPTS},
            "agents": [{"id": "a", "driver": driver.name, "address": endpoint}],
            "asc": [{"agent": "a", "fixture": True, "model": "packaged", "limit": 1,
                     "power": False, **table}],
        }, "asc-unit.toml")
        CampaignRunner(campaign, store).run()
    with Store(store) as opened:
        [run] = unit_runs(opened)
    return run
