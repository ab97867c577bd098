"""The ASC vectors say what hilbench really sends and answers: each request vector's body has the
keys hilbench's ASC procedure sends, each reply vector the keys and value types of the cpu
driver's reply, exchanged through a real agent; the refused second sample is `device_full`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hilbench.contracts.remote import RemoteDevice
from hilbench.orchestrator.client import AgentClient
from hilbench.wire.link import AgentError
from hilbench.workloads.asc.procedures import device as asc_device
from hilbench.workloads.asc.vectors import fixed_model
from hilbench_drivers.cpu import CpuDriver
from tests.agent_thread import served

VECTORS = Path(__file__).resolve().parents[2] / "protocols" / "vectors" / "agent_messages.json"
MODEL = fixed_model()


def kind(value: Any) -> str:
    """A value's JSON kind; int and float are both numbers (a device may count either)."""
    if value is None or isinstance(value, bool):
        return repr(value) if value is None else "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


# Keys a reply may carry beside a vector's (protocols/agent-protocol.md): the runtime's
# agent_elapsed_s on every reply, and a device's optional own power reading over a window.
# agent_elapsed_s, power: informative; detail: the contract's map of device-specific extras
OPTIONAL_REPLY_KEYS = {"agent_elapsed_s", "power", "detail"}


def shape(body: dict[str, Any], leave_out: set[str] = frozenset()) -> dict[str, str]:
    return {key: kind(value) for key, value in body.items() if key not in leave_out}


class Recorder:
    """Every request the ASC procedure code sends through ``client``, with the reply body or the
    error code, in order."""

    def __init__(self, client: AgentClient) -> None:
        self.exchanges: list[tuple[str, dict[str, Any], Any]] = []
        self._request = client.request
        client.request = self.request  # type: ignore[method-assign]

    def request(self, cmd: str, body: dict[str, Any], *args: Any, **kw: Any) -> Any:
        try:
            reply = self._request(cmd, body, *args, **kw)
        except AgentError as exc:
            self.exchanges.append((cmd, body, exc.code))
            raise
        self.exchanges.append((cmd, body, reply.body))
        return reply

    def find(self, cmd: str, **match: Any) -> tuple[dict[str, Any], Any]:
        for c, body, answer in self.exchanges:
            if c == cmd and all(body.get(k) == v for k, v in match.items()):
                return body, answer
        raise AssertionError(f"no {cmd} {match} was sent")


@pytest.fixture(scope="module")
def exchange(tmp_path_factory) -> Recorder:
    rate = MODEL.mfe_config.sample_rate
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal((2, rate))).astype(np.float32)
    driver = CpuDriver(rapl_root=str(tmp_path_factory.mktemp("no-powercap")))
    with served(driver, "cpu0") as client:
        rec = Recorder(client)
        device = RemoteDevice(client)
        asc_device.send_model(device, MODEL)
        asc_device.run_single_stream(device, audio)  # a sample list: load it, run samples
        asc_device.load_sample(device, 0, audio[0])  # one sample over the wire (version 2)
        client.request("run", {"workload": "asc", "mode": "single_stream", "index": 0})
        asc_device.unload_sample(device, 0)
        asc_device.load_sample(device, 0, audio[0])
        with pytest.raises(AgentError):
            asc_device.load_sample(device, 1, audio[1])
        # The power procedure's window bodies (hilbench/workloads/asc/procedures/power.py).
        client.request("run", {"workload": "asc", "stage": "inference", "duration_s": 0.05,
                               "mode": "repeat", "index": 0}, timeout_s=30)
        asc_device.unload_sample(device, 0)
        asc_device.load_stream(device, [0, 1], audio)
        client.request("run", {"workload": "asc", "stage": "preprocessing", "duration_s": 0.05,
                               "mode": "stream"}, timeout_s=30)
        asc_device.unload_stream(device)
    driver.close()
    return rec


def vectors() -> dict[str, dict[str, Any]]:
    return {v["name"]: v["decoded"] for v in json.loads(VECTORS.read_text())["valid"]}


# vector pair -> the request that the recorded exchange must hold
PAIRS = {
    ("asc_load_model", "asc_load_model_reply"): ("load", {"part": "model"}),
    ("asc_load_sample", "asc_load_sample_reply"): ("load", {"part": "sample", "index": 0}),
    ("asc_run_single_stream", "asc_single_stream_reply"): ("run", {"mode": "single_stream"}),
    ("asc_run_repeat", "asc_repeat_reply"): ("run", {"mode": "repeat"}),
    ("asc_unload_sample", "asc_unload_sample_reply"): ("load", {"part": "unload"}),
    ("asc_load_stream", "asc_load_stream_reply"): ("load", {"part": "stream"}),
    ("asc_run_stream", "asc_stream_reply"): ("run", {"mode": "stream"}),
    ("asc_unload_stream", "asc_unload_stream_reply"): ("load", {"part": "unload_stream"}),
    ("asc_load_sample_list", "asc_load_sample_list_reply"): ("load", {"part": "sample_list"}),
    ("asc_run_samples", "asc_samples_reply"): ("run", {"mode": "samples"}),
}


@pytest.mark.parametrize("pair", list(PAIRS), ids=[p[0] for p in PAIRS])
def test_asc_vector_matches_what_hilbench_sends_and_the_driver_answers(exchange, pair):
    request_name, reply_name = pair
    cmd, match = PAIRS[pair]
    sent, answer = exchange.find(cmd, **match)
    request, reply = vectors()[request_name], vectors()[reply_name]
    assert request["type"] == "request" and request["cmd"] == cmd
    assert shape(request["body"]) == shape(sent)
    assert reply["type"] == "reply" and reply["id"] == request["id"]
    assert shape(reply["body"]) == shape(answer, leave_out=OPTIONAL_REPLY_KEYS)


def test_the_second_sample_vector_is_the_error_the_driver_gives(exchange):
    _sent, code = exchange.find("load", part="sample", index=1)
    error = vectors()["asc_second_sample_refused"]
    assert error["type"] == "error" and error["body"]["code"] == code == "device_full"


def test_the_model_load_vector_is_a_model_a_device_takes():
    model = vectors()["asc_load_model"]
    arrays = [np.array(a["values"], dtype=a["dtype"]).reshape(a["shape"]) for a in model["arrays"]]
    driver = CpuDriver(rapl_root="/nonexistent")
    try:
        body = driver.load(model["body"], arrays).body
    finally:
        driver.close()
    assert body == vectors()["asc_load_model_reply"]["body"]
