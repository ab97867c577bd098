"""Agents that dial in (`--connect`): a real ROUTER, real agent runtimes and a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.client import AgentLost, AgentUnreachable
from hilbench.orchestrator.listener import AgentListener
from hilbench.wire import codec
from hilbench.wire.codec import Message
from hilbench.wire.link import AgentError
from tests.agent.conftest import SleepyDriver

BEAT_S = 0.1
LIVENESS = 5


@pytest.fixture
def listener():
    lst = AgentListener(heartbeat_s=BEAT_S, liveness=LIVENESS)
    lst.start()
    yield lst
    lst.close()


@pytest.fixture
def start_agent(listener):
    """Start an in-process agent runtime that connects to the listener; shut all down after."""
    running: list[tuple[AgentRuntime, threading.Thread]] = []

    def start(agent_id: str) -> tuple[AgentRuntime, threading.Thread]:
        runtime = AgentRuntime(SleepyDriver(), agent_id, connect=listener.endpoint,
                               heartbeat_s=BEAT_S, liveness=LIVENESS)
        thread = threading.Thread(target=runtime.serve, daemon=True, name=agent_id)
        thread.start()
        assert runtime.wait_ready()
        running.append((runtime, thread))
        return runtime, thread

    yield start
    for runtime, thread in running:
        runtime.request_shutdown()
        thread.join(5)


def test_handshake_names_the_agent_and_the_listener_lists_it(listener, start_agent):
    start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    assert link.name == "dev-a"
    assert link.address == listener.endpoint
    assert link.info["agent_id"] == "dev-a"
    assert link.info["driver"] == "sleepy"
    assert listener.agents() == ["dev-a"]
    assert listener.wait_for("dev-a", timeout_s=1) is link


def test_requests_carry_arrays_both_ways(listener, start_agent):
    start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    q = np.arange(12, dtype="<f4").reshape(3, 4)
    bits = np.array([-1, 0, 4], dtype="|i1")

    echoed = link.request("echo", {"tag": "x"}, [q, bits], timeout_s=5)
    assert echoed.body == {"tag": "x"}
    assert [a.dtype for a in echoed.arrays] == [q.dtype, bits.dtype]
    np.testing.assert_array_equal(echoed.arrays[0], q)
    np.testing.assert_array_equal(echoed.arrays[1], bits)

    loaded = link.request("load", {"workload": "sleep"}, [q, bits], timeout_s=5)
    assert loaded.body["sum"] == float(q.sum() + bits.sum())
    ran = link.request("run", {"workload": "sleep", "seconds": 0}, timeout_s=5)
    np.testing.assert_array_equal(ran.arrays[0], np.arange(4, dtype=np.int32))


def test_driver_errors_arrive_typed_and_name_the_agent(listener, start_agent):
    start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    with pytest.raises(AgentError, match="dev-a") as err:
        link.request("load", {"workload": "sleep"}, [], timeout_s=5)
    assert err.value.code == "bad_arguments"


def test_interleaved_requests_to_two_agents_never_cross(listener, start_agent):
    start_agent("dev-a")
    start_agent("dev-b")
    a = listener.wait_for("dev-a", timeout_s=5)
    b = listener.wait_for("dev-b", timeout_s=5)
    assert sorted(listener.agents()) == ["dev-a", "dev-b"]
    for i in range(20):
        for link in (a, b) if i % 2 else (b, a):
            payload = np.full(i + 1, i, dtype="<i8")
            reply = link.request("echo", {"to": link.name, "i": i}, [payload], timeout_s=5)
            assert reply.body == {"to": link.name, "i": i}
            np.testing.assert_array_equal(reply.arrays[0], payload)
    assert a.request("status", timeout_s=5).body["agent_id"] == "dev-a"
    assert b.request("status", timeout_s=5).body["agent_id"] == "dev-b"


def test_a_reply_for_one_agent_is_kept_while_waiting_for_another(listener, start_agent):
    start_agent("dev-a")
    start_agent("dev-b")
    a = listener.wait_for("dev-a", timeout_s=5)
    b = listener.wait_for("dev-b", timeout_s=5)
    # Ask B without waiting, then wait on A for longer than B takes to answer.
    b.transport.send_message(
        codec.encode(Message(type=codec.REQUEST, id="b-1", cmd="echo", body={"n": 1}))
    )
    beats_before = b.heartbeats_received
    a.request("run", {"workload": "sleep", "seconds": 0.3}, timeout_s=5)
    # Only waiting on A reads the ROUTER here: B's reply is taken from what those waits filed,
    # without waiting on B (which would hand B's own heartbeats to B's link too). On a loaded
    # host B may answer after the first 0.3 s (README's test command once saw a heartbeat
    # where the reply should be), so A is asked again until B's reply has been filed.
    deadline = time.monotonic() + 5
    while True:
        try:
            frames = b.transport.recv_message(zmq.NOBLOCK)
            break
        except zmq.Again:
            assert time.monotonic() < deadline, "B's reply was not filed while waiting on A"
            a.request("run", {"workload": "sleep", "seconds": 0.1}, timeout_s=5)
    assert b.heartbeats_received > beats_before  # B's heartbeats were seen, not lost
    queued = codec.decode(frames)
    assert (queued.type, queued.id, queued.body) == (codec.REPLY, "b-1", {"n": 1})


def test_a_run_longer_than_the_liveness_window_is_not_mistaken_for_loss(listener, start_agent):
    start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    reply = link.request("run", {"workload": "sleep", "seconds": 2 * BEAT_S * LIVENESS},
                         timeout_s=10)
    assert reply.body["stopped"] is False
    assert link.heartbeats_received > 0


def test_clock_offset_is_zero_within_its_uncertainty_on_one_host(listener, start_agent):
    start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    offset = link.clock_offset(probes=8)
    # Both ends read the same monotonic clock, so the true offset is 0.
    assert abs(offset.offset_s) <= offset.uncertainty_s + 1e-9
    assert offset.probes == 8


def test_an_agent_that_shuts_down_is_lost_and_can_reconnect(listener, start_agent):
    _, thread = start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    body = link.request("shutdown", timeout_s=5).body
    assert body["shutdown"] is True and body["by"].startswith("peer ")  # who asked, logged too
    thread.join(5)  # the agent has closed its socket
    with pytest.raises(AgentLost, match="dev-a") as lost:
        link.request("status", timeout_s=10)
    assert lost.value.agent == "dev-a"
    link.close()

    start_agent("dev-a")
    again = listener.wait_for("dev-a", timeout_s=5)
    assert again is not link
    assert again.request("status", timeout_s=5).body["agent_id"] == "dev-a"


def test_an_agent_that_shut_down_is_waited_for_until_its_next_incarnation_speaks(
        listener, start_agent):
    """Its last heartbeat (naming who shut it down) is recent, but it is gone: a handshake sent
    then reaches no one. The listener waits until the agent is heard again (CI-54: a restarted
    agent not yet connected when the hello went, and the handshake failed after 5 s)."""
    _, thread = start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    link.request("shutdown", timeout_s=5)
    thread.join(5)
    with pytest.raises(AgentLost, match="shut down"):
        link.request("status", timeout_s=10)
    link.close()
    later = threading.Timer(0.3, start_agent, ["dev-a"])  # connects after the wait began
    later.start()
    try:
        again = listener.wait_for("dev-a", timeout_s=5)
        assert again.request("status", timeout_s=5).body["agent_id"] == "dev-a"
    finally:
        later.join(5)


def test_an_agent_alive_but_late_times_out_and_is_not_called_lost(listener, start_agent):
    start_agent("dev-a")
    link = listener.wait_for("dev-a", timeout_s=5)
    with pytest.raises(TimeoutError, match="dev-a"):  # its heartbeats say it lives
        link.request("run", {"workload": "sleep", "seconds": 2 * BEAT_S * LIVENESS},
                     timeout_s=3 * BEAT_S)


def test_an_agent_that_never_connects_is_unreachable(listener, start_agent):
    start_agent("dev-a")
    with pytest.raises(AgentUnreachable) as err:
        listener.wait_for("ghost", timeout_s=0.3)
    assert "ghost" in str(err.value)
    assert listener.endpoint in str(err.value)
    assert "dev-a" in str(err.value)  # who did connect, to spot a typo in the id


def test_wait_for_needs_a_started_listener():
    with pytest.raises(RuntimeError, match="start"):
        AgentListener().wait_for("dev-a", timeout_s=0.1)


def test_a_real_agent_process_connects_serves_and_is_lost_when_killed(listener, tmp_path):
    cmd = [sys.executable, "-m", "hilbench", "agent", "--driver", "cpu",
           "--connect", listener.endpoint, "--id", "cpu-x",
           "--heartbeat", str(BEAT_S), "--liveness", str(LIVENESS)]
    # stderr to a file: an unread pipe could fill up and stall the agent.
    with open(tmp_path / "agent.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    try:
        link = listener.wait_for("cpu-x", timeout_s=60)
        assert link.info["driver"] == "cpu"
        assert link.info["pid"] == proc.pid

        data = np.linspace(0, 1, 1000, dtype="<f8")
        echoed = link.request("echo", {"k": 1}, [data], timeout_s=5)
        np.testing.assert_array_equal(echoed.arrays[0], data)

        offset = link.clock_offset(probes=8)
        assert abs(offset.offset_s) <= offset.uncertainty_s + 1e-9

        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # Its deadline comes before the liveness window ends (as for the link's echoes): a
        # dead agent is still named lost, not late (a late reply fails one run; a lost agent
        # stops the campaign).
        with pytest.raises(AgentLost, match="cpu-x") as lost:
            link.request("status", timeout_s=BEAT_S)
        assert lost.value.agent == "cpu-x"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
