"""The Python codec against the language-neutral test vectors in protocols/vectors/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hilbench.wire import codec
from hilbench.wire.codec import Message, ProtocolError

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "protocols" / "vectors" / "agent_messages.json").read_text())


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda v: v["name"])
def test_valid_vector_decodes_to_its_stated_form(vector):
    frames = [bytes.fromhex(h) for h in vector["frames_hex"]]
    msg = codec.decode(frames)
    want = vector["decoded"]
    assert (msg.type, msg.id, msg.cmd, msg.body) == (
        want["type"],
        want["id"],
        want["cmd"],
        want["body"],
    )
    assert len(msg.arrays) == len(want["arrays"])
    for got, exp in zip(msg.arrays, want["arrays"], strict=False):
        assert got.dtype == np.dtype(exp["dtype"])
        assert list(got.shape) == exp["shape"]
        assert got.tolist() == exp["values"]


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda v: v["name"])
def test_encoder_reproduces_vector_frames_exactly(vector):
    want = vector["decoded"]
    arrays = [np.array(a["values"], dtype=a["dtype"]).reshape(a["shape"]) for a in want["arrays"]]
    msg = Message(
        type=want["type"], id=want["id"], cmd=want["cmd"], body=want["body"], arrays=arrays
    )
    assert [bytes(f).hex() for f in codec.encode(msg)] == vector["frames_hex"]


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: v["name"])
def test_invalid_vector_raises_its_error_code(vector):
    frames = [bytes.fromhex(h) for h in vector["frames_hex"]]
    with pytest.raises(ProtocolError) as info:
        codec.decode(frames)
    assert info.value.code == vector["error"]


def test_the_contract_tables_follow_the_structs(monkeypatch):
    """A contract change the document does not show is caught (then the --check of
    tests/wire/test_vectors_everywhere.py fails)."""
    from hilbench.contracts.spec import render, replace_tables
    from hilbench.workloads.qubo import contract as qubo

    document = (ROOT / "protocols" / "agent-protocol.md").read_text(encoding="utf-8")
    assert replace_tables(document) == document
    assert "| `timeout_s` | float (≥ 0.001, ≤ 1000) | yes |" in render()
    monkeypatch.setattr(qubo.FixedTimeout, "__doc__", "changed")
    assert replace_tables(document) != document


def test_arrays_decode_without_copying_the_payload():
    arr = np.arange(16 * 1024, dtype=np.float32)
    frames = codec.encode(Message(type="reply", id="z", arrays=[arr]))
    buf = bytearray(bytes(frames[1]))
    msg = codec.decode([frames[0], buf])
    buf[0:4] = np.float32(42.0).tobytes()  # the decoded array is a view of the frame
    assert msg.arrays[0][0] == 42.0


def test_payload_limit_is_enforced():
    arr = np.zeros(1000, dtype=np.uint8)
    frames = codec.encode(Message(type="request", id="q", cmd="load", arrays=[arr]))
    with pytest.raises(ProtocolError) as info:
        codec.decode(frames, max_payload_bytes=999)
    assert info.value.code == "too_large"


def test_object_arrays_cannot_be_sent():
    with pytest.raises(ProtocolError):
        codec.encode(Message(type="reply", id="o", arrays=[np.array([object()])]))
