"""Fuzz a real agent process: 10 600 generated and mutated messages, then a handshake and its RSS.

Hypothesis generates headers and payload descriptors of every msgpack shape (right keys with
wrong types, wrong keys, huge and negative sizes, bools for ints); a seeded mutator flips,
cuts and splices the protocol's own test vectors. A `shutdown` or driver command that happens
to come out valid is not sent. The agent must still be running, answer a handshake, and not
have grown.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import msgpack
import psutil
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hilbench.orchestrator.client import AgentClient
from hilbench.wire import codec
from hilbench.wire.codec import Message, ProtocolError
from tests.subprocesses import announced_agent

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "protocols/vectors/agent_messages.json").read_text()
)
SEED_FRAMES = [
    [bytes.fromhex(h) for h in v["frames_hex"]]
    for v in VECTORS["valid"] + VECTORS["invalid"]
    if v["frames_hex"]
]
GENERATED = 600  # hypothesis examples, one message each (generation costs ~20 ms a message)
WARM_UP = 2_000  # mutated messages before the memory baseline
MUTATED = 8_000  # mutated messages after it
RSS_GROWTH_LIMIT = 64 * 1024 * 1024

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=12)
    | st.binary(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=6,
)
sizes = st.integers(min_value=-2, max_value=8) | st.integers(min_value=2**31, max_value=2**64 - 1)
shapes = (
    st.lists(sizes | st.booleans(), max_size=4)
    | st.builds(lambda n, d: [d] * n, st.integers(30, 70), sizes)
    | values
)
dtypes = st.sampled_from(["<f4", "|u1", "<i8", "|b1", "|O", "V8", "(2,)<f4", "<M8", "<U4", "zz"])
descriptors = st.fixed_dictionaries({"dtype": dtypes | values, "shape": shapes}) | values
good = {
    "proto": st.just("hilbench-agent"),
    "v": st.sampled_from([1, True, 1.0, 2]),
    "type": st.sampled_from(sorted(codec.MESSAGE_TYPES)),
    "id": st.sampled_from(["f", None]),
    "cmd": st.sampled_from(["echo", "noop", "status", "stop", "load", "run", "configure", None]),
    "body": st.dictionaries(st.text(max_size=6), values, max_size=3),
    "payloads": st.lists(descriptors, max_size=3),
}
headers = st.fixed_dictionaries(
    {key: strategy | values for key, strategy in good.items()},
    optional={"extra": values},
)
generated = st.tuples(headers, st.lists(st.binary(max_size=64), max_size=3))


def _pack(header: dict, payloads: list[bytes]) -> list[bytes]:
    return [msgpack.packb(header, use_bin_type=True), *payloads]


def _mutate(rng: random.Random) -> list[bytes]:
    frames = [bytearray(f) for f in rng.choice(SEED_FRAMES)]
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if frames and frames[0] and roll < 0.5:  # flip bytes in a frame
            f = rng.choice(frames) or frames[0]
            if f:
                f[rng.randrange(len(f))] = rng.randrange(256)
        elif roll < 0.65 and frames:  # cut a frame short
            f = rng.choice(frames)
            del f[rng.randrange(len(f) + 1) :]
        elif roll < 0.8:  # add or drop a payload frame
            if rng.random() < 0.5 or len(frames) < 2:
                frames.append(bytearray(rng.randbytes(rng.randrange(32))))
            else:
                frames.pop()
        else:  # splice in the header of another vector
            frames[0] = bytearray(rng.choice(SEED_FRAMES)[0])
    return [bytes(f) for f in frames] or [b""]


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
    sock.send_multipart(codec.encode(Message(type="hello", id="h", body={"versions": [1]})))
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
        send(_pack(*message))

    fuzz()
    assert proc.poll() is None, "the agent died"
    rng = random.Random(10)
    for _ in range(WARM_UP):
        send(_mutate(rng))
    handled()
    # After the warm-up: the driver has imported what its commands need (numba, samplers).
    rss_before = psutil.Process(proc.pid).memory_info().rss
    for i in range(MUTATED):
        send(_mutate(rng))
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
