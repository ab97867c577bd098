"""A real agent runtime serving a driver on a loopback ZeroMQ socket in a thread, with a
connected client: how tests drive an in-process device (a stand-in HDK, a test device) through
the same messages an orchestrator sends."""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
from collections.abc import Callable, Iterator
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


@contextmanager
def serving_apart(make_runtime: Callable[[], AgentRuntime]) -> Iterator[str]:
    """The runtime ``make_runtime()`` builds, serving in a child process until the block ends;
    yields its endpoint. Used where the run's timing is checked: an agent in the test's own
    process shares its GIL with the orchestrator, and a reply waited several milliseconds for
    it (0.5-8 ms past the link's measured bound)."""
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve_child, args=(make_runtime, theirs), daemon=True)
    process.start()
    try:
        if not ours.poll(60):
            raise RuntimeError("the test agent did not start in 60 s")
        endpoint = ours.recv()
        if endpoint is None:
            raise RuntimeError("the test agent's runtime was not ready in 30 s")
        yield endpoint
    finally:
        with contextlib.suppress(OSError):
            ours.send("stop")
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join(5)


def _serve_child(make_runtime: Callable[[], AgentRuntime], theirs: Any) -> None:
    """The child's side of :func:`serving_apart`: serve until the parent says stop."""
    runtime = make_runtime()
    thread = threading.Thread(target=runtime.serve, daemon=True)
    thread.start()
    theirs.send(runtime.endpoint if runtime.wait_ready(30) else None)
    with contextlib.suppress(EOFError):
        theirs.recv()  # until the parent says stop, or its end closes
    runtime.request_shutdown()
    thread.join(5)
