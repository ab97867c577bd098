"""The single-stream procedure keeps each device-reported time with its own stage, loads one
sample at a time into a device that holds one, and stores every figure from the records."""

from __future__ import annotations

import statistics
import threading
from typing import Any, ClassVar

import numpy as np
import pytest

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.clock import now
from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import DocumentStream, Metric
from hilbench.orchestrator.phases import RunContext
from hilbench.workloads.asc.procedures.device import run_single_stream
from hilbench.workloads.asc.procedures.single_stream import emit_single_stream_metrics
from tests.agent_thread import served

PRE_S, INF_S = 0.004, 0.001  # what the device reports: distinct, so a swap shows


class OneSampleDevice:
    """A device holding one sample, reporting fixed stage times (like a µs timer would)."""

    name: ClassVar[str] = "one-sample"

    def __init__(self) -> None:
        self.held: int | None = None
        self.loads: list[int] = []

    def capabilities(self) -> dict[str, Any]:
        return {"simulated": True, "simulation": "test device",
                "asc": {"sample_capacity": 1}}

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return DriverResult({})

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        if params["part"] == "sample":
            if self.held is not None and self.held != params["index"]:
                raise DriverError("holds one sample", "device_full")
            self.held = params["index"]
            self.loads.append(params["index"])
            return DriverResult({"index": self.held, "held": [self.held], "capacity": 1})
        if params["part"] == "unload":
            self.held = None
            return DriverResult({"index": params["index"], "held": []})
        raise DriverError("unexpected", "bad_arguments")

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        index = params["index"]
        if index != self.held:
            raise DriverError(f"sample {index} not held", "not_loaded")
        t_start = now()  # the agent's clock, as a device's timestamps would be
        return DriverResult({"index": index, "predicted": index % 4, "scores": [0, 1, 2, 3],
                             "preprocess_s": PRE_S * (1 + index), "inference_s": INF_S,
                             "t_start": t_start, "t_end": now()})

    def close(self) -> None:
        pass


@pytest.fixture
def device_client():
    device = OneSampleDevice()
    with served(device, "one") as client:
        yield device, client


def test_each_time_stays_with_its_stage_and_every_metric_follows(device_client):
    device, client = device_client
    audio = np.zeros((4, 16), dtype=np.float32)
    records = run_single_stream(RemoteDevice(client), audio)
    assert device.loads == [0, 1, 2, 3]  # one at a time, each after the previous unloaded
    assert [r.preprocess_s for r in records] == [PRE_S * (1 + i) for i in range(4)]
    assert all(r.inference_s == INF_S for r in records)

    docs: list[Any] = []
    ctx = RunContext(DocumentStream([docs.append]), "run")
    labels = np.array([0, 1, 0, 3])
    emit_single_stream_metrics(ctx, records, labels, ["a", "a", "b", "b"])
    metrics = {d.name: d for d in docs if isinstance(d, Metric)}
    assert set(metrics) == {"accuracy", "preprocess_time_s", "inference_time_s",
                            "harness_overhead_median_s", "harness_overhead_p99_s", "samples"}
    assert metrics["preprocess_time_s"].value == pytest.approx(PRE_S * 2.5)
    assert metrics["preprocess_time_s"].uncertainty == pytest.approx(
        statistics.stdev(PRE_S * (1 + i) for i in range(4)) / 2)
    assert metrics["inference_time_s"].value == pytest.approx(INF_S)
    assert metrics["inference_time_s"].uncertainty == 0
    assert metrics["accuracy"].value == 0.75  # predicted 0,1,2,3 against labels 0,1,0,3
    assert metrics["samples"].value == 4
    overhead = sorted(r.round_trip_s - r.device_s for r in records)
    assert metrics["harness_overhead_median_s"].value == pytest.approx(statistics.median(overhead))


def test_a_device_that_cannot_time_preprocessing_gives_no_preprocessing_figure(device_client):
    device, client = device_client
    run = device.run

    def without_preprocessing(params, stop):
        result = run(params, stop)
        result.body.update(preprocess_s=None, preprocess_reason="simulation has no AFE timer")
        return result

    device.run = without_preprocessing
    records = run_single_stream(RemoteDevice(client), np.zeros((2, 16), dtype=np.float32))
    assert all(r.preprocess_s is None and r.device_s == INF_S for r in records)
    assert all(r.overhead_s == pytest.approx(r.round_trip_s - INF_S) for r in records)
    docs: list[Any] = []
    emit_single_stream_metrics(RunContext(DocumentStream([docs.append]), "run"), records,
                               np.array([0, 1]), ["a", "a"])
    metrics = {d.name: d for d in docs if isinstance(d, Metric)}
    assert metrics["preprocess_time_s"].value is None
    assert "does not measure" in metrics["preprocess_time_s"].meta["reason"]
    assert metrics["inference_time_s"].value == pytest.approx(INF_S)


def test_no_records_is_an_error_not_a_figure():
    from hilbench.workloads.asc.procedures.device import mean_and_std_error

    with pytest.raises(ValueError, match="no values"):
        mean_and_std_error([])
    assert mean_and_std_error([2.0]) == (2.0, 0.0)
