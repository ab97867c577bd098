"""A real agent runtime serving a driver on a loopback ZeroMQ socket in a thread, with a
connected client: how tests drive an in-process device (a stand-in HDK, a test device) through
the same messages an orchestrator sends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.client import AgentClient


@contextmanager
def served(driver: Any, agent_id: str, liveness: int = 50) -> Iterator[AgentClient]:
    runtime = AgentRuntime(driver, agent_id, bind="tcp://127.0.0.1:*", heartbeat_s=0.1,
                           liveness=liveness)
    thread = threading.Thread(target=runtime.serve, daemon=True)
    thread.start()
    assert runtime.wait_ready()
    client = AgentClient(runtime.endpoint, agent_id)
    client.connect()
    try:
        yield client
    finally:
        client.close()
        runtime.request_shutdown()
        thread.join(5)
