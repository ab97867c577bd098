"""The fast (msgspec) decoder returns exactly what the checked decoder returns, or defers to it.

``codec.decode`` tries the schema path first and hands anything it does not accept to
``_decode_checked``; errors are therefore the checked decoder's by construction. What must be
shown is that every message the fast path accepts is one the checked decoder accepts, decoded to
the same message, and that the fast path does accept well-formed messages (else it is only a
detour). Encoding with msgspec must write the bytes msgpack writes.
"""

from __future__ import annotations

import random

import msgpack
import numpy as np
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hilbench.wire import codec
from hilbench.wire.codec import Message, ProtocolError
from tests.wire.message_strategies import SEED_FRAMES, generated, mutate, pack, values

PROTO_V = codec.PROTOCOL_VERSION  # the protocol version these messages speak

LIMIT = 1 << 20


def _fast(frames: list) -> Message | None:
    """The fast path's message, or None where it defers to the checked decoder."""
    try:
        return codec._decode_fast(frames, LIMIT)
    except Exception:
        return None


def _outcome(decoder, frames: list) -> tuple:
    """What a decoder made of ``frames``: the message in comparable form, or the error."""
    try:
        msg = decoder(frames, LIMIT)
    except ProtocolError as exc:
        return ("error", exc.code, str(exc), exc.correlation_id)
    arrays = [(a.dtype.str, a.shape, a.tobytes()) for a in msg.arrays]
    # The body packed: NaN != NaN would fail a plain comparison of equal bodies.
    body = msgpack.packb(msg.body, use_bin_type=True)
    return ("ok", msg.type, msg.id, msg.cmd, body, msg.version, arrays)


def _agree(frames: list) -> bool:
    """Assert both decoders agree on ``frames``; True if the fast path itself accepted them."""
    fast = _fast(frames)
    checked = _outcome(codec._decode_checked, frames)
    assert _outcome(codec.decode, frames) == checked
    if fast is not None:
        assert _outcome(lambda f, _limit: fast, frames) == checked, frames
    return fast is not None


dtypes = st.sampled_from(["<f4", "|u1", "<i8", "|b1", ">f8", "<c8", "<u2"])
array_shapes = st.lists(st.integers(0, 4), max_size=3)
ids = st.text(max_size=130) | st.none()
commands = st.text(max_size=66) | st.none()


@st.composite
def well_formed(draw) -> list:
    """Messages close to valid: right keys and types, sizes that mostly match their frames."""
    mtype = draw(st.sampled_from(sorted(codec.MESSAGE_TYPES)))
    descriptors, frames = [], []
    for _ in range(draw(st.integers(0, 3))):
        dtype, shape = draw(dtypes), draw(array_shapes)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        nbytes += draw(st.sampled_from([0, 0, 0, 0, 1, -1])) if nbytes else 0
        descriptors.append({"dtype": dtype, "shape": shape})
        frames.append(bytes(draw(st.binary(min_size=nbytes, max_size=nbytes))))
    header = {
        "proto": "hilbench-agent",
        "v": PROTO_V,
        "type": mtype,
        "id": draw(ids),
        "cmd": draw(commands if mtype == codec.REQUEST else st.sampled_from([None, None, "x"])),
        "body": draw(st.dictionaries(st.text(max_size=6), values, max_size=3) | st.none()),
        "payloads": descriptors,
    }
    return pack(header, frames)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(well_formed())
def test_the_decoders_agree_on_nearly_valid_messages(frames):
    _agree(frames)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated)
def test_the_decoders_agree_on_generated_garbage(message):
    _agree(pack(*message))


@pytest.mark.slow
def test_the_decoders_agree_on_mutated_vectors_and_the_fast_path_takes_the_valid_ones():
    rng = random.Random(20261124)
    for _ in range(20_000):
        _agree(mutate(rng))
    valid = [frames for frames in SEED_FRAMES if _outcome(codec._decode_checked, frames)[0] == "ok"]
    assert len(valid) >= 5
    for frames in valid:  # as bytes and as the zmq.Frames a socket delivers
        assert _agree(frames)
        assert _agree([zmq.Frame(f) for f in frames])


def _header(**changes) -> dict:
    header = {
        "proto": "hilbench-agent", "v": PROTO_V, "type": "request", "id": "r-1", "cmd": "noop",
        "body": {}, "payloads": [],
    }
    header.update(changes)
    return header


def _raw_header(pairs: list) -> bytes:
    """A msgpack map written pair by pair (duplicate keys, which a dict cannot hold)."""
    packer = msgpack.Packer(use_bin_type=True)
    out = bytearray(b"\xde" + len(pairs).to_bytes(2, "big"))
    for key, value in pairs:
        out += packer.pack(key) + packer.pack(value)
    return bytes(out)


# Messages msgspec alone would take (or take differently) that the protocol refuses.
TRAPS = {
    "binary in the body": [msgpack.packb(_header(body={"k": b"\x00"}), use_bin_type=True)],
    "extension type in the body": [
        msgpack.packb(_header(body={"k": msgpack.ExtType(1, b"x")}), use_bin_type=True)
    ],
    "integer map key inside the body": [msgpack.packb(_header(body={"k": {1: 2}}))],
    "v a boolean": [msgpack.packb(_header(v=True))],
    "v a float": [msgpack.packb(_header(v=1.0))],
    "a boolean size": [
        msgpack.packb(_header(payloads=[{"dtype": "|u1", "shape": [True]}])), b"\x00"
    ],
    "two negative sizes": [
        msgpack.packb(_header(payloads=[{"dtype": "|u1", "shape": [-2, -2]}])), b"\x00" * 4
    ],
    "an empty array of huge extent": [
        msgpack.packb(_header(payloads=[{"dtype": "<f8", "shape": [0, 2**62, 2**62]}])), b""
    ],
    "id of 129 characters": [msgpack.packb(_header(id="é" * 129))],
    "a descriptor with an extra key": [
        msgpack.packb(_header(payloads=[{"dtype": "|u1", "shape": [1], "x": 0}])), b"\x00"
    ],
    "trailing bytes after the header": [msgpack.packb(_header()) + b"\xc0"],
    "a header over the size limit": [msgpack.packb(_header(body={"k": "x" * 70_000}))],
    "cmd in a ping": [msgpack.packb(_header(type="ping", cmd="noop"))],
    "an object dtype": [
        msgpack.packb(_header(payloads=[{"dtype": "|O", "shape": [1]}])), b"\0" * 8
    ],
    "duplicate key, the last one wrong": [
        _raw_header([*_header().items(), ("v", PROTO_V + 1)])
    ],
}


@pytest.mark.parametrize("case", sorted(TRAPS))
def test_the_fast_path_defers_what_the_protocol_refuses(case):
    frames = TRAPS[case]
    assert _fast(frames) is None
    assert not _agree(frames)
    assert _outcome(codec.decode, frames)[0] == "error"


def test_the_last_of_duplicate_keys_counts_in_both_decoders():
    frames = [_raw_header([*_header(v=True).items(), ("v", PROTO_V)])]
    assert _outcome(codec.decode, frames)[0] == "ok"
    _agree(frames)


def test_ids_are_limited_in_characters_not_bytes():
    frames = [msgpack.packb(_header(id="é" * codec.MAX_ID_CHARS))]  # 256 bytes of UTF-8
    assert _agree(frames)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=6), values, max_size=4))
def test_msgspec_writes_the_bytes_msgpack_writes(body):
    header = _header(body=body)
    assert codec.encode_header(header) == msgpack.packb(header, use_bin_type=True)


def test_numpy_scalars_in_a_reply_body_are_encoded_as_before():
    body = {"energy_j": np.float64(1.5), "label": np.str_("x")}
    frames = codec.encode(Message(type=codec.REPLY, id="r", body=body))
    assert codec.decode(frames).body == {"energy_j": 1.5, "label": "x"}


@pytest.mark.parametrize("depth", [100, 1000, 1021, 1022, 1100])
def test_deeply_nested_bodies_get_one_answer(depth):
    """msgspec and msgpack stop at different nesting depths; the answer is msgpack's."""
    head = msgpack.packb(_header(body={"z": 0}))
    nested = b"\x81\xa1k" + b"\x91" * depth + b"\x80"
    _agree([head.replace(b"\x81\xa1z\x00", nested)])
