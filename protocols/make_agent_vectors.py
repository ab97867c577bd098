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
from hilbench.workloads.asc.vectors import fixed_model

OUT = Path(__file__).parent / "vectors" / "agent_messages.json"


def _valid() -> list[tuple[str, Message]]:
    return [
        ("hello", Message(type="hello", id="1", body={"versions": [1]})),
        ("heartbeat", Message(type="heartbeat", body={"busy": None})),
        ("ping", Message(type="ping", id="p-7", body={"t1": 1234.567891})),
        (
            "pong",
            Message(type="pong", id="p-7", body={"t1": 1234.567891, "t2": 99.5, "t3": 99.50001}),
        ),
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
        *_workload_messages(),
    ]


def _workload_messages() -> list[tuple[str, Message]]:
    """The workload bodies of protocols/agent-protocol.md ("QUBO workload", "Workload messages:
    ASC"), one example each, so an implementer sees exact keys, types and payloads."""
    state = np.array([1, 0, 1], dtype=np.uint8)
    audio = np.linspace(-0.5, 0.5, 8, dtype="<f4")  # a real sample holds 1 s at the model's rate
    model = fixed_model()  # the reference int8 model: a model load a device can really take
    model_arrays = model.arrays()
    names = sorted(model_arrays)
    return [
        ("qubo_run_fixed_timeout", Message(type="request", id="q-1", cmd="run", body={
            "workload": "qubo", "mode": "fixed_timeout", "solver": "anytime",
            "timeout_s": 0.01, "seed": 0})),
        ("qubo_run_reply_with_state", Message(type="reply", id="q-1", body={
            "cost": -2, "requested_s": 0.01, "actual_s": 0.00998, "t_start": 12.5,
            "t_end": 12.50998}, arrays=[state])),
        ("qubo_tts_reply", Message(type="reply", id="q-2", body={
            "cost": -2, "requested_s": 1.0, "actual_s": 0.004, "t_start": 20.0, "t_end": 20.004,
            "reached": [{"gap": 0.1, "t_s": 0.001, "cost": -2}]}, arrays=[state])),
        ("asc_load_model", Message(type="request", id="s-0", cmd="load", body={
            "workload": "asc", "part": "model", "meta": model.metadata(), "arrays": names},
            arrays=[np.ascontiguousarray(model_arrays[n]) for n in names])),
        ("asc_load_model_reply", Message(type="reply", id="s-0", body={
            "classes": list(model.classes), "input_frames": model.input_frames,
            "input_filters": model.input_filters, "sample_rate": model.mfe_config.sample_rate,
            "weight_bytes": model.weight_bytes, "sample_capacity": 1})),
        ("asc_load_sample", Message(type="request", id="s-1", cmd="load", body={
            "workload": "asc", "part": "sample", "index": 7}, arrays=[audio])),
        ("asc_load_sample_reply", Message(type="reply", id="s-1", body={
            "index": 7, "held": [7], "capacity": 1})),
        ("asc_run_single_stream", Message(type="request", id="s-2", cmd="run", body={
            "workload": "asc", "mode": "single_stream", "index": 7})),
        ("asc_single_stream_reply", Message(type="reply", id="s-2", body={
            "index": 7, "predicted": 2, "scores": [-31, 4, 57, -12], "preprocess_s": 0.000233,
            "inference_s": 0.000283, "t_start": 40.0, "t_end": 40.000521})),
        ("asc_run_repeat", Message(type="request", id="s-3", cmd="run", body={
            "workload": "asc", "mode": "repeat", "stage": "inference", "duration_s": 60.0,
            "index": 7})),
        ("asc_repeat_reply", Message(type="reply", id="s-3", body={
            "stage": "inference", "index": 7, "iterations": 211000, "mean_s": 0.000284,
            "std_error_s": 1.1e-08, "t_start": 41.0, "t_end": 101.000137,
            "stopped_early": False})),
        ("asc_unload_sample", Message(type="request", id="s-4", cmd="load", body={
            "workload": "asc", "part": "unload", "index": 7})),
        ("asc_unload_sample_reply", Message(type="reply", id="s-4", body={
            "index": 7, "held": []})),
        ("asc_load_stream", Message(type="request", id="s-6", cmd="load", body={
            "workload": "asc", "part": "stream", "indices": [7, 8]},
            arrays=[np.stack([audio, audio[::-1]])])),
        ("asc_load_stream_reply", Message(type="reply", id="s-6", body={
            "stream_samples": 2, "indices": [7, 8]})),
        ("asc_run_stream", Message(type="request", id="s-7", cmd="run", body={
            "workload": "asc", "mode": "stream", "stage": "preprocessing", "duration_s": 10.0})),
        ("asc_stream_reply", Message(type="reply", id="s-7", body={
            "stream_samples": 2, "indices": [7, 8], "stage": "preprocessing",
            "iterations": 42900, "mean_s": 0.000233, "std_error_s": 2.0e-08, "t_start": 102.0,
            "t_end": 112.000101, "stopped_early": False})),
        ("asc_unload_stream", Message(type="request", id="s-8", cmd="load", body={
            "workload": "asc", "part": "unload_stream"})),
        ("asc_unload_stream_reply", Message(type="reply", id="s-8", body={
            "stream_samples": 0})),
        ("asc_second_sample_refused", codec.error_message(
            "device_full", "the device holds 1 sample (capacity 1): unload index 7 first",
            "s-5")),
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
        ("empty_header_frame", [b""], "bad_frame"),
        ("type_is_a_list", [_raw_header(type=["request"])], "bad_header"),
        ("type_is_a_map", [_raw_header(type={"a": 1})], "bad_header"),
        ("v_is_a_bool", [_raw_header(v=True)], "bad_header"),
        ("v_is_a_float", [_raw_header(v=1.0)], "bad_header"),
        ("missing_key", [_raw_header(payloads=...)], "bad_header"),
        ("id_not_a_string", [_raw_header(id=7)], "bad_header"),
        ("id_too_long", [_raw_header(id="x" * (codec.MAX_ID_CHARS + 1))], "bad_header"),
        ("cmd_in_a_heartbeat", [_raw_header(type="heartbeat", id=None, cmd="run")], "bad_header"),
        ("body_not_a_map", [_raw_header(body=[1])], "bad_header"),
        ("bin_in_body", [_raw_header(body={"b": b"xy"})], "bad_frame"),
        ("ext_in_body", [_raw_header(body={"e": msgpack.ExtType(1, b"z")})], "bad_frame"),
        ("payloads_not_an_array", [_raw_header(payloads={})], "bad_payload"),
        (
            "shape_holds_a_bool",
            [_raw_header(payloads=[{"dtype": "|u1", "shape": [True]}]), b"\x00"],
            "bad_payload",
        ),
        (
            "shape_negative",
            [_raw_header(payloads=[{"dtype": "|u1", "shape": [-1]}]), b""],
            "bad_payload",
        ),
        (
            "shape_too_many_dimensions",
            [_raw_header(payloads=[{"dtype": "|u1", "shape": [1] * 65}]), b"\x00"],
            "bad_payload",
        ),
        (
            "shape_2_pow_64_minus_1",
            [_raw_header(payloads=[{"dtype": "|u1", "shape": [2**64 - 1]}]), b"\x00"],
            "too_large",
        ),
        (
            "shape_empty_but_huge",
            [_raw_header(payloads=[{"dtype": "<f8", "shape": [0, 2**62]}]), b""],
            "too_large",
        ),
        (
            "dtype_subarray",
            [_raw_header(payloads=[{"dtype": "(2,)<f4", "shape": [1]}]), b"\x00" * 8],
            "bad_payload",
        ),
        (
            "dtype_too_long",
            [_raw_header(payloads=[{"dtype": "<" + "f" * 40, "shape": [1]}]), b"\x00"],
            "bad_payload",
        ),
        (
            "descriptor_extra_key",
            [_raw_header(payloads=[{"dtype": "|u1", "shape": [1], "x": 1}]), b"\x00"],
            "bad_payload",
        ),
    ]


def _hello(versions: list[int], cid: str = "h") -> list[bytes]:
    return [
        bytes(f) for f in codec.encode(Message(type="hello", id=cid, body={"versions": versions}))
    ]


def _request(cmd: str, cid: str, body: dict | None = None) -> list[bytes]:
    msg = Message(type="request", id=cid, cmd=cmd, body=body or {})
    return [bytes(f) for f in codec.encode(msg)]


def _exchanges() -> list[dict]:
    """Behaviour across messages: what an agent answers to a sequence sent on one connection.

    ``socket`` is the client's ZeroMQ socket type; ``expect`` gives the answer's type and, for
    an error, its code (heartbeats in between are skipped).
    """

    def step(frames: list[bytes], mtype: str, code: str | None = None) -> dict:
        return {"send": [f.hex() for f in frames], "expect": {"type": mtype, "code": code}}

    return [
        {
            "name": "request_before_hello",
            "socket": "DEALER",
            "steps": [step(_request("status", "s1"), "error", "hello_first")],
        },
        {
            "name": "ping_before_hello",
            "socket": "DEALER",
            "steps": [
                step(
                    [
                        bytes(f)
                        for f in codec.encode(Message(type="ping", id="p1", body={"t1": 1.0}))
                    ],
                    "error",
                    "hello_first",
                )
            ],
        },
        {
            "name": "hello_then_request",
            "socket": "DEALER",
            "steps": [step(_hello([1]), "welcome"), step(_request("status", "s2"), "reply")],
        },
        {
            "name": "hello_unknown_version",
            "socket": "DEALER",
            "steps": [step(_hello([2]), "error", "unsupported_version")],
        },
        {
            "name": "hello_highest_common_version",
            "socket": "DEALER",
            "steps": [step(_hello([9, 1]), "welcome")],
        },
        {
            "name": "hello_without_versions",
            "socket": "DEALER",
            "steps": [
                step(
                    [bytes(f) for f in codec.encode(Message(type="hello", id="h"))],
                    "error",
                    "bad_arguments",
                )
            ],
        },
        {
            "name": "unknown_command",
            "socket": "DEALER",
            "steps": [
                step(_hello([1]), "welcome"),
                step(_request("format_disk", "u1"), "error", "unknown_command"),
            ],
        },
        {
            "name": "a_reply_is_not_accepted",
            "socket": "DEALER",
            "steps": [
                step(_hello([1]), "welcome"),
                step(
                    [bytes(f) for f in codec.encode(Message(type="reply", id="r"))],
                    "error",
                    "unexpected_type",
                ),
            ],
        },
        {
            "name": "req_socket",
            "socket": "REQ",
            "steps": [step(_hello([1]), "error", "req_socket")],
        },
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
        "exchanges": _exchanges(),
    }


def render() -> str:
    return json.dumps(build(), indent=1) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT}")
