"""A real agent runtime on a real loopback ZeroMQ socket, hosting a small test driver."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import numpy as np
import pytest

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.contracts.base import Contract, Reply, Seconds
from hilbench.contracts.capabilities import Settings
from hilbench.contracts.messages import Workload, register_workload
from tests.agent_thread import serving


class SleepLoad(Contract, tag_field="workload", tag="sleep", kw_only=True):
    """A transport test's workload: any payloads."""

    def check_payloads(self, arrays: list[Any]) -> None:
        pass


class SleepRun(Contract, tag_field="workload", tag="sleep", kw_only=True):
    seconds: Seconds = 0.0


class SleepSettings(Settings, kw_only=True):
    explode: bool = False


class SleepReply(Reply, kw_only=True):
    sum: float | None = None
    slept_s: float | None = None
    stopped: bool | None = None


register_workload("sleep", Workload(load=SleepLoad, run=SleepRun,
                                    replies={SleepLoad: SleepReply, SleepRun: SleepReply}))


class SleepyDriver:
    """Sleeps for the requested time (or until stopped) and reports what it did."""

    name: ClassVar[str] = "sleepy"
    settings: ClassVar[type[Settings]] = SleepSettings

    def __init__(self) -> None:
        self.loaded: list[np.ndarray] = []

    def capabilities(self) -> dict[str, Any]:
        return {"workloads": ["sleep"]}

    def configure(self, params: dict[str, Any]) -> DriverResult:
        if params.get("explode"):
            raise RuntimeError("driver bug")
        return DriverResult({"configured": params})

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        if not arrays:
            raise DriverError("nothing to load", "bad_arguments")
        self.loaded = [a.copy() for a in arrays]
        return DriverResult({"sum": float(sum(a.sum() for a in arrays))})

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        t0 = time.perf_counter()
        stopped = stop.wait(float(params.get("seconds", 0.0)))
        return DriverResult(
            {"slept_s": time.perf_counter() - t0, "stopped": stopped},
            [np.arange(4, dtype=np.int32)],
        )

    def close(self) -> None:
        pass


@pytest.fixture
def agent():
    runtime = AgentRuntime(
        SleepyDriver(), "test-agent", bind="tcp://127.0.0.1:*", heartbeat_s=0.1, liveness=5
    )
    with serving(runtime):
        yield runtime
