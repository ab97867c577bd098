"""Single stream over sample lists run by the agent (protocol version 3): each sample still
goes load → run → unload through the driver, one after the other, with no round trip between
two; the orchestrator checks the list's answers and splits its own window among the samples."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np
import pytest

from hilbench.agent.dispatch import Dispatcher
from hilbench.agent.driver import DriverError, DriverResult
from hilbench.clock import now
from hilbench.contracts.remote import RemoteDevice
from hilbench.wire import codec
from hilbench.wire.link import AgentError
from hilbench.workloads.asc.procedures.device import run_single_stream
from tests.agent_thread import served


class LoggingDevice:
    """Holds one sample; logs every driver call; ``fail_at`` makes that sample's run fail;
    ``same_region`` makes every sample claim the same timed region (a forger)."""

    name: ClassVar[str] = "logging"

    def __init__(self, fail_at: int | None = None, same_region: bool = False) -> None:
        self.calls: list[tuple[str, int]] = []
        self.held: int | None = None
        self.fail_at = fail_at
        self.same_region = same_region

    def capabilities(self) -> dict[str, Any]:
        return {"simulated": True, "simulation": "test device", "asc": {"sample_capacity": 1}}

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return DriverResult({})

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        index = params["index"]
        if params["part"] == "sample":
            if self.held is not None:
                raise DriverError("holds one sample", "device_full")
            self.held = index
            self.calls.append(("load", index))
            # the sample's own audio reached the device: its first value is its index
            assert arrays[0][0] == index
            return DriverResult({"index": index, "held": [index], "capacity": 1})
        self.held = None
        self.calls.append(("unload", index))
        return DriverResult({"index": index, "held": []})

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        index = params["index"]
        self.calls.append(("run", index))
        if index == self.fail_at:
            raise DriverError("the device hung up", "device_lost")
        t_start = 5.0 if self.same_region else now()
        t_end = 5.001 if self.same_region else now()
        return DriverResult({"index": index, "predicted": index % 4, "scores": [0, 1, 2, 3],
                             "preprocess_s": 0.0, "inference_s": 0.0, "t_start": t_start,
                             "t_end": t_end})

    def close(self) -> None:
        pass


def _audio(n: int) -> np.ndarray:
    audio = np.zeros((n, 16), dtype=np.float32)
    audio[:, 0] = np.arange(n)
    return audio


def test_each_sample_of_a_list_is_loaded_run_and_unloaded_in_turn_on_the_agent():
    device = LoggingDevice()
    with served(device, "lists") as client:
        assert "samples" in client.capabilities.asc.modes
        remote = RemoteDevice(client)
        records = run_single_stream(remote, _audio(5))
        served_before = client.request("status").body["served"]
        run_single_stream(remote, _audio(5))
        # one list: its audio loaded, then one run request, whatever the samples (+ status)
        assert client.request("status").body["served"] - served_before == 3
    expected = [(step, i) for i in range(5) for step in ("load", "run", "unload")]
    assert device.calls[:15] == expected
    assert [r.index for r in records] == [0, 1, 2, 3, 4]
    assert [r.predicted for r in records] == [0, 1, 2, 3, 0]
    sent, received = records[0].window
    assert all(r.window == (sent, received) for r in records)
    # every sample's wall time is its share of the list's window: together, the whole window
    assert sum(r.round_trip_s for r in records) == pytest.approx(received - sent, abs=1e-9)
    assert all(r.round_trip_s > 0 for r in records)
    assert records[-1].t_done == pytest.approx(received, abs=1e-9)


def test_a_failing_sample_is_named_and_the_device_is_freed():
    device = LoggingDevice(fail_at=2)
    with served(device, "lists") as client, pytest.raises(AgentError) as caught:
        run_single_stream(RemoteDevice(client), _audio(4))
    assert caught.value.code == "device_lost"
    assert "sample 2 (3 of 4 in the list)" in str(caught.value)
    assert device.calls[-2:] == [("run", 2), ("unload", 2)]
    assert device.held is None  # the next list finds the device empty


def test_claimed_regions_that_overlap_are_timing_inconsistent():
    device = LoggingDevice(same_region=True)
    with served(device, "lists") as client, pytest.raises(AgentError) as caught:
        run_single_stream(RemoteDevice(client), _audio(3))
    assert caught.value.code == "timing_inconsistent"
    assert "starts" in str(caught.value) and "before sample 0 ended" in str(caught.value)


def test_a_list_is_refused_without_its_audio_and_a_stop_ends_it_between_samples():
    dispatcher = Dispatcher(LoggingDevice())
    run = {"workload": "asc", "mode": "samples", "indices": [0, 1]}
    with pytest.raises(DriverError) as caught:
        dispatcher.call("run", run, [], threading.Event())
    assert caught.value.code == "not_loaded" and caught.value.key == "indices"
    dispatcher.call("load", {"workload": "asc", "part": "sample_list", "indices": [0, 1]},
                    [_audio(2)], threading.Event())
    stop = threading.Event()
    stop.set()
    reply = dispatcher.call("run", run, [], stop).body
    assert reply == {"results": [], "stopped_early": True}
    assert len(dispatcher.call("run", run, [], threading.Event()).body["results"]) == 2


def test_a_version_2_peer_is_answered_in_version_2_without_sample_lists(monkeypatch):
    """A peer that speaks only version 2: its welcome lists no ``samples``, every message it
    gets says v 2, and single stream takes one request per sample."""
    device = LoggingDevice()
    with served(device, "lists") as client:
        assert client.version == codec.PROTOCOL_VERSION == 4
    monkeypatch.setattr(codec, "SUPPORTED_VERSIONS", (2,))  # this client speaks 2 alone
    with served(device, "v2") as client:
        assert client.version == 2
        assert "samples" not in client.capabilities.asc.modes
        before = len(device.calls)
        records = run_single_stream(RemoteDevice(client), _audio(3))
    assert [r.index for r in records] == [0, 1, 2]
    assert device.calls[before:] == [(step, i) for i in range(3)
                                     for step in ("load", "run", "unload")]
    assert all(r.window[1] - r.window[0] == pytest.approx(r.round_trip_s) for r in records)


def test_a_list_the_agent_stopped_gives_no_figure_from_part_of_the_set():
    from hilbench.orchestrator.local import LocalLink

    link = LocalLink(LoggingDevice())
    link.stop.set()  # as a `stop` command would, before the list's first sample
    seen: list[int] = []
    with pytest.raises(AgentError) as caught:
        run_single_stream(RemoteDevice(link), _audio(3), lambda r, body: seen.append(r.index))
    assert caught.value.code == "stopped"
    assert "after 0 of 3 samples" in str(caught.value) and seen == []


class AnswersAnotherSample(LoggingDevice):
    """Answers sample 2's index (and class) for sample 1 of a list."""

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        reply = super().run(params, stop)
        if params["index"] == 1:
            return DriverResult({**reply.body, "index": 2, "predicted": 2}, reply.arrays)
        return reply


def test_a_list_answering_another_sample_is_a_bad_reply_naming_it():
    """Scored against sample 1's label, sample 2's answer would count as right or wrong at
    random: the reply is refused, naming the result and both indices."""
    seen: list[int] = []
    with served(AnswersAnotherSample(), "other") as client, pytest.raises(AgentError) as caught:
        run_single_stream(RemoteDevice(client), _audio(3), lambda r, body: seen.append(r.index))
    assert caught.value.code == "bad_reply"
    assert "results[1] is sample 2, not 1" in str(caught.value)
    assert caught.value.detail["key"] == "results[1].index"
    assert seen == []  # no sample of the list was scored
