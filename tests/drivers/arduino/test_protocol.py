"""The Python side of the serial protocol against the shared frame vectors, and the decoder's
behaviour on garbage and split input."""

from __future__ import annotations

import json
import math
import struct

import pytest

from hilbench_drivers.arduino import protocol as p

from .conftest import REPO

FRAMES = json.loads((REPO / "protocols" / "vectors" / "serial_frames.json").read_text())["frames"]


@pytest.mark.parametrize("vector", FRAMES, ids=[f["name"] for f in FRAMES])
def test_frames_encode_and_decode_as_the_vectors_say(vector):
    payload = bytes.fromhex(vector["payload"])
    encoded = p.encode_frame(vector["type"], vector["seq"], payload)
    assert encoded.hex() == vector["encoded"]
    assert b"\x00" not in encoded[:-1]
    frames = p.FrameDecoder().feed(encoded)
    assert frames == [p.Frame(vector["type"], vector["seq"], payload)]


def test_decoder_reassembles_frames_split_anywhere():
    stream = b"".join(
        p.encode_frame(f["type"], f["seq"], bytes.fromhex(f["payload"])) for f in FRAMES
    )
    decoder = p.FrameDecoder()
    out = []
    for i in range(0, len(stream), 7):
        out += decoder.feed(stream[i : i + 7])
    assert [f.seq for f in out] == [f["seq"] for f in FRAMES]


def test_garbage_is_reported_once_and_the_next_frame_still_decodes():
    decoder = p.FrameDecoder()
    items = decoder.feed(b"\x13\x37garbage\xff\x00" + p.encode_frame(p.MsgType.IDENT, 4, b"x=1"))
    assert isinstance(items[0], p.FrameError)
    assert items[1] == p.Frame(p.MsgType.IDENT, 4, b"x=1")


def test_flipped_bit_fails_the_crc():
    encoded = bytearray(p.encode_frame(p.MsgType.RESULT, 1, bytes(range(1, 30))))
    encoded[10] ^= 0x04
    with pytest.raises(p.FrameError, match="CRC"):
        p.decode_frame(bytes(encoded[:-1]))


def test_overlong_input_without_delimiter_is_dropped():
    decoder = p.FrameDecoder(max_encoded=64)
    items = decoder.feed(b"\x55" * 100)
    assert len(items) == 1 and "without a frame delimiter" in str(items[0])
    assert decoder.pending < 64


def test_repeat_statistics_from_board_sums():
    times_us = [43000, 43010, 42990, 43050, 42950]
    n, s = len(times_us), sum(times_us)
    payload = struct.pack(
        "<BBIIQQII", 1, 0, n, 60_000_000, s, sum(t * t for t in times_us), 42950, 43050
    )
    result = p.parse_repeat(payload)
    mean = s / n
    sd = math.sqrt(sum((t - mean) ** 2 for t in times_us) / (n - 1))
    assert result.mean_s == pytest.approx(mean * 1e-6)
    assert result.std_error_s == pytest.approx(sd / math.sqrt(n) * 1e-6, rel=1e-9)


def test_identity_text_parses_to_fields():
    fields = p.parse_identity(b"board=host-build fw=1.0.0 proto=1 classes=a,b")
    assert fields == {"board": "host-build", "fw": "1.0.0", "proto": "1", "classes": "a,b"}
