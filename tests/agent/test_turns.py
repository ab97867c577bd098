"""Turns at the socket: driver calls stay on one thread, and a long command frees the socket."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from hilbench.agent.driver import DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.client import AgentClient
from tests.agent.conftest import SleepyDriver
from tests.agent_thread import serving


class ThreadRecordingDriver(SleepyDriver):
    """Notes the thread of every driver call (vendor SDKs often insist on one thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def configure(self, params: dict[str, Any]) -> DriverResult:
        self.threads.add(threading.get_ident())
        return super().configure(params)

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        self.threads.add(threading.get_ident())
        return super().run(params, stop)


@pytest.mark.serial
def test_short_and_long_commands_run_on_one_driver_thread_while_status_is_answered():
    driver = ThreadRecordingDriver()
    runtime = AgentRuntime(driver, "turns", bind="tcp://127.0.0.1:*", heartbeat_s=0.1)
    with (
        serving(runtime),
        AgentClient(runtime.endpoint) as client,
        AgentClient(runtime.endpoint) as watcher,
    ):
        for _ in range(20):  # short: over before the other thread looks
            client.request("configure", {})
        done: list[float] = []
        long_run = threading.Thread(
            target=lambda: done.append(
                client.request("run", {"workload": "sleep", "seconds": 1.0}).body["slept_s"])
        )
        long_run.start()
        time.sleep(0.2)  # the run is under way: the other thread has the socket
        t0 = time.perf_counter()
        status = watcher.request("status", timeout_s=2)
        waited = time.perf_counter() - t0
        long_run.join(timeout=5)
        for _ in range(5):  # the socket came back to the driver thread
            client.request("configure", {})
    assert status.body["busy_with"] == "run"
    assert waited < 0.5, f"status took {waited:.3f} s while a run was going on"
    assert done and done[0] >= 0.9
    assert len(driver.threads) == 1
    assert threading.get_ident() not in driver.threads
