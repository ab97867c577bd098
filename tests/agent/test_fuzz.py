"""Fuzz a real agent process: 10 600 generated and mutated messages, then a handshake and its RSS.

Hypothesis generates headers and payload descriptors of every msgpack shape (right keys with
wrong types, wrong keys, huge and negative sizes, bools for ints); a seeded mutator flips,
cuts and splices the protocol's own test vectors. A `shutdown` or driver command that happens
to come out valid is not sent. The agent must still be running, answer a handshake, and not
have grown.
"""

from __future__ import annotations

import itertools
import random

import psutil
import pytest
import zmq
from hypothesis import HealthCheck, given, settings

from hilbench.orchestrator.client import AgentClient
from hilbench.wire import codec
from hilbench.wire.codec import Message, ProtocolError
from tests.subprocesses import announced_agent
from tests.wire.message_strategies import generated, mutate, pack

PROTO_V = codec.PROTOCOL_VERSION  # the protocol version these messages speak

GENERATED = 600  # hypothesis examples, one message each (generation costs ~20 ms a message)
WARM_UP = 2_000  # mutated messages before the memory baseline
MUTATED = 8_000  # mutated messages after it
RSS_GROWTH_LIMIT = 64 * 1024 * 1024


def _harmless(frames: list[bytes]) -> bool:
    """False for a valid shutdown, and for valid driver commands: a random but well-formed
    ``load`` makes the cpu driver do real work (a graph of 2**31 nodes, say); the driver's own
    tests check its arguments. ``noop`` still takes the worker path."""
    try:
        msg = codec.decode(frames)
    except ProtocolError:
        return True
    return not (msg.type == codec.REQUEST and msg.cmd in ("shutdown", "load", "run", "configure"))


@pytest.fixture
def agent_process():
    args = ("--driver", "cpu", "--id", "fuzzed", "--bind", "tcp://127.0.0.1:0")
    with announced_agent(*args) as agent:
        yield agent


@pytest.mark.slow
def test_ten_thousand_bad_messages_leave_the_agent_serving_and_small(agent_process):
    proc, endpoint = agent_process
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.setsockopt(zmq.RCVTIMEO, 60_000)
    sock.connect(endpoint)
    sock.send_multipart(codec.encode(Message(type="hello", id="h", body={"versions": [PROTO_V]})))
    sent = 0
    syncs = itertools.count()

    def send(frames: list[bytes]) -> None:
        nonlocal sent
        if _harmless(frames):
            sock.send_multipart(frames)
            sent += 1
        while sock.poll(0):
            sock.recv_multipart()

    def handled() -> None:
        """Returns once the agent has handled all sent: it answers a request sent after them."""
        cid = f"sync-{next(syncs)}"
        sock.send_multipart(codec.encode(Message(type="request", id=cid, cmd="echo")))
        while True:
            frames = sock.recv_multipart()
            if frames[0] and codec.decode(frames).id == cid:  # (b"", error): a req_socket reply
                return

    @settings(
        max_examples=GENERATED,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(generated)
    def fuzz(message: tuple[dict, list[bytes]]) -> None:
        send(pack(*message))

    fuzz()
    assert proc.poll() is None, "the agent died"
    rng = random.Random(10)
    for _ in range(WARM_UP):
        send(mutate(rng))
    handled()
    # After the warm-up: the driver has imported what its commands need (numba, samplers).
    rss_before = psutil.Process(proc.pid).memory_info().rss
    for i in range(MUTATED):
        send(mutate(rng))
        if i % 1000 == 0:
            assert proc.poll() is None, "the agent died"
    handled()
    sock.close()
    assert sent >= 10_000
    with AgentClient(endpoint, "fuzzed") as client:
        status = client.request("status").body
        assert client.info["agent_id"] == "fuzzed"
    assert proc.poll() is None
    print(f"sent {sent}, agent status after: {status}")
    assert status["bad_messages"] >= sent // 2
    assert status["internal_errors"] == 0, "an unforeseen exception: see the incident in the log"
    growth = psutil.Process(proc.pid).memory_info().rss - rss_before
    assert growth < RSS_GROWTH_LIMIT, f"agent grew by {growth / 2**20:.0f} MiB"
