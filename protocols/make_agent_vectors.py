"""Generate protocols/vectors/agent_messages.json from hilbench's reference codec.

Run: python protocols/make_agent_vectors.py [--check]. With --check, exit 1 if the file is stale.
The ASC model in it is the reference vectors' (``fixed_model()``): the same bits on every machine,
so the file is too (tests/wire/test_vectors_everywhere.py runs the check under numpy 1 and 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from hilbench.contracts.base import to_wire
from hilbench.contracts.capabilities import Settings
from hilbench.contracts.spec import replace_tables
from hilbench.wire import codec
from hilbench.wire.codec import Message
from hilbench.workloads.asc import contract as asc
from hilbench.workloads.asc.vectors import fixed_model
from hilbench.workloads.qubo import contract as qubo

OUT = Path(__file__).parent / "vectors" / "agent_messages.json"
SPEC = Path(__file__).parent / "agent-protocol.md"


def _valid() -> list[tuple[str, Message]]:
    return [
        ("hello", Message(type="hello", id="1", body={"versions": [codec.PROTOCOL_VERSION]})),
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
                body=to_wire(qubo.FixedTimeout(workload="qubo", solver="sa", timeout_s=0.01,
                                               seed=0)),
            ),
        ),
        (
            "request_load_int8_matrix",
            Message(
                type="request",
                id="a-3",
                cmd="load",
                body=to_wire(qubo.QuboLoad(nodes=3, density=1.0, seed=0)),
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
    """One example of each workload body of protocols/agent-protocol.md ("Workload contracts"),
    each built from its contract Struct (hilbench/contracts), so an implementer sees exact keys,
    types and payloads, and a vector that breaks its contract cannot be written."""
    state = np.array([1, 0, 1], dtype=np.uint8)
    audio = np.linspace(-0.5, 0.5, 8, dtype="<f4")  # a real sample holds 1 s at the model's rate
    model = fixed_model()  # the reference int8 model: a model load a device can really take
    model_arrays = model.arrays()
    names = sorted(model_arrays)

    def request(cid: str, cmd: str, body: Any, arrays: list[np.ndarray] | None = None) -> Message:
        return Message(type="request", id=cid, cmd=cmd, body=to_wire(body), arrays=arrays or [])

    def reply(cid: str, body: Any, arrays: list[np.ndarray] | None = None) -> Message:
        return Message(type="reply", id=cid, body=to_wire(body), arrays=arrays or [])

    matrix = np.array([[-1, 4, 0], [4, -1, 0], [0, 0, -1]], dtype=np.int8)
    return [
        ("qubo_load", request("q-0", "load", qubo.QuboLoad(
            nodes=3, density=0.67, seed=0, solvers=["anytime"]), [matrix])),
        ("qubo_load_reply", reply("q-0", qubo.QuboLoadReply(
            nodes=3, couplings=1, load_s=0.0002))),
        ("qubo_run_fixed_timeout", request("q-1", "run", qubo.FixedTimeout(
            workload="qubo", solver="anytime", timeout_s=0.01, seed=0))),
        ("qubo_run_reply_with_state", reply("q-1", qubo.QuboRunReply(
            cost=-2, requested_s=0.01, actual_s=0.00998, t_start=12.5, t_end=12.50998),
            [state])),
        ("qubo_run_time_to_solution", request("q-2", "run", qubo.TimeToSolution(
            workload="qubo", solver="anytime", target=-2, gaps=[0.1], max_time_s=1.0, seed=0))),
        ("qubo_tts_reply", reply("q-2", qubo.QuboRunReply(
            cost=-2, requested_s=1.0, actual_s=0.004, t_start=20.0, t_end=20.004,
            reached=[qubo.Reached(gap=0.1, t_s=0.001, cost=-2)]), [state])),
        ("asc_load_model", request("s-0", "load", asc.AscLoadModel(
            workload="asc", meta=model.metadata(), arrays=names),
            [np.ascontiguousarray(model_arrays[n]) for n in names])),
        ("asc_load_model_reply", reply("s-0", asc.AscModelReply(
            classes=list(model.classes), input_frames=model.input_frames,
            input_filters=model.input_filters, sample_rate=model.mfe_config.sample_rate,
            weight_bytes=model.weight_bytes, sample_capacity=1))),
        ("asc_load_sample", request("s-1", "load", asc.AscLoadSample(workload="asc", index=7),
                                    [audio])),
        ("asc_load_sample_reply", reply("s-1", asc.AscHeldReply(index=7, held=[7], capacity=1))),
        ("asc_run_single_stream", request("s-2", "run", asc.AscSingleStream(
            workload="asc", index=7))),
        ("asc_single_stream_reply", reply("s-2", asc.AscSampleResult(
            index=7, predicted=2, scores=[-31, 4, 57, -12], preprocess_s=0.000233,
            inference_s=0.000283, t_start=40.0, t_end=40.000521))),
        ("asc_run_repeat", request("s-3", "run", asc.AscRepeat(
            workload="asc", stage="inference", duration_s=60.0, index=7))),
        ("asc_repeat_reply", reply("s-3", asc.AscWindowResult(
            stage="inference", index=7, iterations=211000, mean_s=0.000284, std_error_s=1.1e-08,
            t_start=41.0, t_end=101.000137, stopped_early=False))),
        ("asc_unload_sample", request("s-4", "load", asc.AscUnload(workload="asc", index=7))),
        ("asc_unload_sample_reply", reply("s-4", asc.AscHeldReply(index=7, held=[]))),
        ("asc_load_stream", request("s-6", "load", asc.AscLoadStream(
            workload="asc", indices=[7, 8]), [np.stack([audio, audio[::-1]])])),
        ("asc_load_stream_reply", reply("s-6", asc.AscStreamReply(
            stream_samples=2, indices=[7, 8]))),
        ("asc_run_stream", request("s-7", "run", asc.AscStream(
            workload="asc", stage="preprocessing", duration_s=10.0))),
        ("asc_stream_reply", reply("s-7", asc.AscWindowResult(
            stream_samples=2, indices=[7, 8], stage="preprocessing", iterations=42900,
            mean_s=0.000233, std_error_s=2.0e-08, t_start=102.0, t_end=112.000101,
            stopped_early=False))),
        ("asc_unload_stream", request("s-8", "load", asc.AscUnloadStream(workload="asc"))),
        ("asc_unload_stream_reply", reply("s-8", asc.AscStreamReply(stream_samples=0))),
        ("asc_load_sample_list", request("s-9", "load", asc.AscLoadSampleList(
            workload="asc", indices=[7, 8]), [np.stack([audio, audio[::-1]])])),
        ("asc_load_sample_list_reply", reply("s-9", asc.AscSampleListReply(indices=[7, 8]))),
        ("asc_run_samples", request("s-10", "run", asc.AscSamples(
            workload="asc", indices=[7, 8]))),
        ("asc_samples_reply", reply("s-10", asc.AscSamplesResult(results=[
            asc.AscSampleResult(index=7, predicted=2, scores=[-31, 4, 57, -12],
                                preprocess_s=0.000233, inference_s=0.000283, t_start=50.0,
                                t_end=50.000521),
            asc.AscSampleResult(index=8, predicted=0, scores=[44, -3, 1, -20],
                                preprocess_s=0.000231, inference_s=0.000281, t_start=50.000552,
                                t_end=50.001069)]))),
        ("asc_second_sample_refused", codec.error_message(
            "device_full", "the device holds 1 sample (capacity 1): unload index 7 first",
            "s-5")),
        ("configure_sim_meter", request("c-1", "configure", Settings(sim_meter="127.0.0.1:5025"))),
        ("bad_arguments_naming_the_key", codec.error_message(
            "bad_arguments", "key 'timeout_s': Expected `float` <= 1000.0", "q-3",
            command="run", key="timeout_s")),
    ]


def _raw_header(**fields) -> bytes:
    base = {
        "proto": "hilbench-agent",
        "v": codec.PROTOCOL_VERSION,
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
            "steps": [step(_hello([codec.PROTOCOL_VERSION]), "welcome"),
                      step(_request("status", "s2"), "reply")],
        },
        {
            "name": "hello_unknown_version",
            "socket": "DEALER",
            "steps": [
                step(_hello([codec.PROTOCOL_VERSION + 1]), "error", "unsupported_version")
            ],
        },
        {
            "name": "hello_highest_common_version",
            "socket": "DEALER",
            "steps": [step(_hello([9, codec.PROTOCOL_VERSION]), "welcome")],
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
                step(_hello([codec.PROTOCOL_VERSION]), "welcome"),
                step(_request("format_disk", "u1"), "error", "unknown_command"),
            ],
        },
        {
            "name": "a_reply_is_not_accepted",
            "socket": "DEALER",
            "steps": [
                step(_hello([codec.PROTOCOL_VERSION]), "welcome"),
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
            "steps": [step(_hello([codec.PROTOCOL_VERSION]), "error", "req_socket")],
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
    spec = SPEC.read_text(encoding="utf-8")
    tables = replace_tables(spec)
    if "--check" in sys.argv:
        stale = []
        if OUT.read_text(encoding="utf-8") != text:
            stale.append(f"{OUT}: not what the codec and contracts generate now")
        if spec != tables:
            stale.append(f"{SPEC}: its contract tables are not the Structs'")
        for line in stale:
            print(line, file=sys.stderr)
        sys.exit(1 if stale else 0)
    OUT.write_text(text)
    SPEC.write_text(tables, encoding="utf-8")
    print(f"wrote {OUT} and the contract tables of {SPEC}")
