"""Each malformed message that once killed the agent, and each protocol rule, on a real socket.

Every test ends by checking that the agent still completes a handshake and serves a request.
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar

import msgpack
import numpy as np
import pytest
import zmq

from hilbench.agent.driver import DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.client import AgentClient
from hilbench.wire import codec
from hilbench.wire.codec import Message
from hilbench.wire.link import AgentError
from tests.agent.conftest import SleepyDriver
from tests.agent.test_runtime import raw_socket, recv_non_heartbeat
from tests.agent_thread import serving

PROTO_V = codec.PROTOCOL_VERSION  # the protocol version these messages speak


def header(**fields: Any) -> bytes:
    base = {
        "proto": "hilbench-agent",
        "v": PROTO_V,
        "type": "request",
        "id": "m",
        "cmd": "echo",
        "body": {},
        "payloads": [],
    }
    base.update(fields)
    return msgpack.packb(base, use_bin_type=True)


def still_serving(runtime: AgentRuntime) -> None:
    with AgentClient(runtime.endpoint, heartbeat_s=0.1, liveness=5) as client:
        assert client.request("echo", {"alive": True}).body == {"alive": True}


def exchange(runtime: AgentRuntime, frames: list[bytes], greet: bool = True) -> Message:
    sock = raw_socket(runtime, greet=greet)
    try:
        sock.send_multipart(frames)
        return recv_non_heartbeat(sock)
    finally:
        sock.close()


# The messages of 63–98 bytes that ended the agent before (issue 10), each with the error it gets.
KILLERS = {
    "type_is_a_list": ([header(type=["request"])], "bad_header"),
    "type_is_a_map": ([header(type={"a": 1})], "bad_header"),
    "shape_holds_a_bool": (
        [header(payloads=[{"dtype": "|u1", "shape": [True]}]), b"\x00"],
        "bad_payload",
    ),
    "more_than_64_dimensions": (
        [header(payloads=[{"dtype": "|u1", "shape": [1] * 65}]), b"\x00"],
        "bad_payload",
    ),
    "dimension_2_pow_64_minus_1": (
        [header(payloads=[{"dtype": "|u1", "shape": [2**64 - 1]}]), b"\x00"],
        "too_large",
    ),
    "empty_array_with_a_huge_dimension": (
        [header(payloads=[{"dtype": "<f8", "shape": [0, 2**62]}]), b""],
        "too_large",
    ),
    "v_is_true": ([header(v=True)], "bad_header"),
    "v_is_1_0": ([header(v=1.0)], "bad_header"),
    "id_is_a_map": ([header(id={"x": 1})], "bad_header"),
    "cmd_is_a_list": ([header(cmd=["echo"])], "bad_header"),
    "missing_payloads_key": (
        [
            msgpack.packb(
                {
                    "proto": "hilbench-agent",
                    "v": PROTO_V,
                    "type": "request",
                    "id": "m",
                    "cmd": "echo",
                    "body": {},
                }
            )
        ],
        "bad_header",
    ),
    "dtype_with_subarray": (
        [header(payloads=[{"dtype": "(2,)f4", "shape": [1]}]), b"\x00" * 8],
        "bad_payload",
    ),
    "ext_type_in_body": (
        [
            msgpack.packb(
                {
                    "proto": "hilbench-agent",
                    "v": PROTO_V,
                    "type": "request",
                    "id": "m",
                    "cmd": "echo",
                    "body": {"t": msgpack.ExtType(5, b"xx")},
                    "payloads": [],
                }
            )
        ],
        "bad_frame",
    ),
    "deeply_nested_body": ([header(body={"x": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]})], None),
}


@pytest.mark.parametrize("name", sorted(KILLERS))
def test_malformed_message_gets_its_error_and_the_agent_serves_on(agent, name):
    frames, code = KILLERS[name]
    reply = exchange(agent, frames)
    if code is None:  # well-formed after all: echoed
        assert reply.type == codec.REPLY
    else:
        assert (reply.type, reply.body["code"]) == (codec.ERROR, code)
    still_serving(agent)


def test_a_request_before_hello_is_refused_with_hello_first(agent):
    reply = exchange(agent, [header()], greet=False)
    assert (reply.type, reply.body["code"]) == (codec.ERROR, "hello_first")
    assert reply.id == "m"
    still_serving(agent)


def test_hello_offering_only_unknown_versions_lists_the_supported_ones(agent):
    hello = codec.encode(Message(type="hello", id="h2", body={"versions": [PROTO_V + 1]}))
    reply = exchange(agent, hello, greet=False)
    assert (reply.type, reply.body["code"]) == (codec.ERROR, "unsupported_version")
    assert reply.body["detail"]["supported"] == list(codec.SUPPORTED_VERSIONS)
    still_serving(agent)


def test_hello_picks_the_highest_common_version(agent):
    hello = codec.encode(Message(type="hello", id="h3", body={"versions": [7, 1, PROTO_V]}))
    reply = exchange(agent, hello, greet=False)
    assert (reply.type, reply.body["protocol_version"]) == (codec.WELCOME, PROTO_V)


def test_a_req_socket_is_told_to_use_a_dealer(agent):
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 3000)
    sock.connect(agent.endpoint)
    sock.send_multipart(codec.encode(Message(type="hello", id="r", body={"versions": [PROTO_V]})))
    reply = codec.decode(sock.recv_multipart())
    sock.close()
    assert (reply.type, reply.body["code"]) == (codec.ERROR, "req_socket")
    assert "DEALER" in reply.body["message"]
    still_serving(agent)


class BrokenDriver(SleepyDriver):
    """Driver bugs the runtime cannot foresee: a failing capabilities(), an unsendable reply."""

    name: ClassVar[str] = "broken"

    def capabilities(self) -> dict[str, Any]:
        if getattr(self, "fail_capabilities", False):
            raise RuntimeError("capabilities exploded")
        return {}

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return DriverResult({"handle": object()})  # msgpack cannot encode this


@pytest.fixture
def broken_agent():
    driver = BrokenDriver()
    runtime = AgentRuntime(driver, "broken", bind="tcp://127.0.0.1:*", heartbeat_s=0.1, liveness=5)
    with serving(runtime):
        yield runtime, driver


def test_an_unforeseen_exception_is_an_internal_error_whose_incident_finds_the_traceback(
    broken_agent, caplog
):
    runtime, driver = broken_agent
    caplog.set_level(logging.ERROR, logger="hilbench.agent.runtime")
    driver.fail_capabilities = True
    hello = codec.encode(Message(type="hello", id="h", body={"versions": [PROTO_V]}))
    reply = exchange(runtime, hello, greet=False)
    assert (reply.type, reply.body["code"], reply.id) == (codec.ERROR, "internal", "h")
    incident = reply.body["detail"]["incident"]
    assert incident in reply.body["message"]
    record = next(r for r in caplog.records if incident in r.getMessage())
    assert record.exc_info and "capabilities exploded" in str(record.exc_info[1])
    driver.fail_capabilities = False
    still_serving(runtime)


def test_a_reply_that_cannot_be_encoded_is_an_internal_error(broken_agent):
    runtime, _ = broken_agent
    with AgentClient(runtime.endpoint) as client:
        with pytest.raises(AgentError) as info:
            client.request("configure", {})
        assert info.value.code == "internal"
        assert client.request("status").body["internal_errors"] == 1


def test_noop_goes_through_the_worker_and_returns_its_payload(agent):
    payload = np.arange(300, dtype="<i4").reshape(3, 100)
    with AgentClient(agent.endpoint) as client:
        reply = client.request("noop", {"k": 2}, [payload])
        assert reply.body == {"k": 2}
        assert reply.arrays[0].tolist() == payload.tolist()
        # it is a device command: refused while the worker is busy with a run
        sock = raw_socket(agent, session=client.session)
        sock.send_multipart(
            codec.encode(Message(type="request", id="r", cmd="run",
                                 body={"workload": "sleep", "seconds": 10}))
        )
        with pytest.raises(AgentError) as info:
            client.request("noop", {})
        assert info.value.code == "busy"
        client.request("stop")
        assert recv_non_heartbeat(sock).body["stopped"] is True
        sock.close()


def test_an_orchestrator_silent_past_the_liveness_window_is_greeted_again(agent):
    with AgentClient(agent.endpoint) as client:
        time.sleep(agent.heartbeat_s * agent.liveness * 2.5)  # the agent forgets us meanwhile
        assert client.request("status").body["peers"] == 1  # re-greeted, then served
        time.sleep(agent.heartbeat_s * agent.liveness * 2.5)
        offset = client.clock_offset(probes=2)
        assert abs(offset.offset_s) <= offset.uncertainty_s + 0.01
