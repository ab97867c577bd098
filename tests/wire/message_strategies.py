"""Message generators shared by the agent fuzz test and the decoder agreement test.

Hypothesis strategies build headers and payload descriptors of every msgpack shape (right keys
with wrong types, wrong keys, huge and negative sizes, bools for ints); ``mutate`` flips, cuts
and splices the protocol's own test vectors.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgpack
from hypothesis import strategies as st

from hilbench.wire import codec

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "protocols/vectors/agent_messages.json").read_text()
)
SEED_FRAMES = [
    [bytes.fromhex(h) for h in v["frames_hex"]]
    for v in VECTORS["valid"] + VECTORS["invalid"]
    if v["frames_hex"]
]

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


def pack(header: dict, payloads: list[bytes]) -> list[bytes]:
    return [msgpack.packb(header, use_bin_type=True), *payloads]


def mutate(rng: random.Random) -> list[bytes]:
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
