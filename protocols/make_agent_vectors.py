"""Generate protocols/vectors/agent_messages.json from hilbench's reference codec.

Run: python protocols/make_agent_vectors.py [--check]. With --check, exit 1 if the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgpack
import numpy as np

from hilbench.wire import codec
from hilbench.wire.codec import Message

OUT = Path(__file__).parent / "vectors" / "agent_messages.json"


def _valid() -> list[tuple[str, Message]]:
    return [
        ("hello", Message(type="hello", id="1", body={"versions": [1]})),
        ("heartbeat", Message(type="heartbeat", body={"busy": None})),
        ("ping", Message(type="ping", id="p-7", body={"t1": 123456789012})),
        (
            "request_run",
            Message(
                type="request",
                id="a-2",
                cmd="run",
                body={"mode": "fixed_timeout", "solver": "sa", "timeout_s": 0.01},
            ),
        ),
        (
            "request_load_int8_matrix",
            Message(
                type="request",
                id="a-3",
                cmd="load",
                body={"workload": "qubo", "nodes": 3},
                arrays=[np.array([[-1, 4, 0], [4, -1, 0], [0, 0, -1]], dtype=np.int8)],
            ),
        ),
        (
            "reply_float32_and_int64",
            Message(
                type="reply",
                id="a-4",
                body={"ok": True},
                arrays=[
                    np.array([1.5, -2.25], dtype="<f4"),
                    np.array([[1, 2], [3, 4]], dtype="<i8"),
                ],
            ),
        ),
        ("error", codec.error_message("busy", "agent is busy with 'run'", "a-5")),
    ]


def _raw_header(**fields) -> bytes:
    base = {
        "proto": "hilbench-agent",
        "v": 1,
        "type": "request",
        "id": "x",
        "cmd": "status",
        "body": {},
        "payloads": [],
    }
    base.update(fields)
    return msgpack.packb({k: v for k, v in base.items() if v is not ...}, use_bin_type=True)


def _invalid() -> list[tuple[str, list[bytes], str]]:
    return [
        ("garbage", [b"\xc1\xff\x00garbage"], "bad_frame"),
        ("empty", [], "bad_frame"),
        ("not_a_map", [msgpack.packb([1, 2, 3])], "bad_header"),
        ("wrong_protocol", [_raw_header(proto="other")], "bad_header"),
        ("future_version", [_raw_header(v=99)], "unsupported_version"),
        ("unknown_field", [_raw_header(extra=1)], "bad_header"),
        ("unknown_type", [_raw_header(type="gossip")], "bad_header"),
        ("request_without_cmd", [_raw_header(cmd=None)], "bad_header"),
        ("request_without_id", [_raw_header(id=None)], "bad_header"),
        (
            "payload_count_mismatch",
            [_raw_header(payloads=[{"dtype": "<f4", "shape": [2]}])],
            "bad_payload",
        ),
        (
            "payload_length_mismatch",
            [_raw_header(payloads=[{"dtype": "<f4", "shape": [2]}]), b"\x00" * 7],
            "bad_payload",
        ),
        (
            "object_dtype",
            [_raw_header(payloads=[{"dtype": "|O", "shape": [1]}]), b"\x00" * 8],
            "bad_payload",
        ),
        (
            "dtype_not_a_string",
            [_raw_header(payloads=[{"dtype": ["<f4"], "shape": [1]}]), b"\x00" * 4],
            "bad_payload",
        ),
        (
            "structured_dtype",
            [_raw_header(payloads=[{"dtype": "V8", "shape": [1]}]), b"\x00" * 8],
            "bad_payload",
        ),
        ("oversized_header", [b"\x00" * (codec.MAX_HEADER_BYTES + 1)], "too_large"),
    ]


def build() -> dict:
    valid = []
    for name, msg in _valid():
        frames = [bytes(f) for f in codec.encode(msg)]
        valid.append(
            {
                "name": name,
                "frames_hex": [f.hex() for f in frames],
                "decoded": {
                    "type": msg.type,
                    "id": msg.id,
                    "cmd": msg.cmd,
                    "body": msg.body,
                    "arrays": [
                        {"dtype": a.dtype.str, "shape": list(a.shape), "values": a.tolist()}
                        for a in msg.arrays
                    ],
                },
            }
        )
    invalid = [
        {"name": n, "frames_hex": [f.hex() for f in frames], "error": code}
        for n, frames, code in _invalid()
    ]
    return {
        "protocol": codec.PROTOCOL_NAME,
        "version": codec.PROTOCOL_VERSION,
        "valid": valid,
        "invalid": invalid,
    }


def render() -> str:
    return json.dumps(build(), indent=1) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT}")
