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
def serving(runtime: AgentRuntime) -> Iterator[AgentRuntime]:
    """``runtime`` serving in a daemon thread, ready, until the block ends; then it is shut
    down and its thread joined."""
    thread = threading.Thread(target=runtime.serve, daemon=True)
    thread.start()
    try:
        assert runtime.wait_ready()
        yield runtime
    finally:
        runtime.request_shutdown()
        thread.join(5)


@contextmanager
def served(driver: Any, agent_id: str, liveness: int = 50) -> Iterator[AgentClient]:
    """``driver`` behind a runtime on a loopback port, and a client connected to it."""
    runtime = AgentRuntime(driver, agent_id, bind="tcp://127.0.0.1:*", heartbeat_s=0.1,
                           liveness=liveness)
    with serving(runtime):
        client = AgentClient(runtime.endpoint, agent_id)
        client.connect()
        try:
            yield client
        finally:
            client.close()
