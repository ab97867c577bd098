"""Talking ASC to an agent: model, one sample at a time in device memory, streams.

The messages are those of ``protocols/agent-protocol.md`` ("ASC"). A device may hold a single
sample (an Arduino has 256 KB of RAM), so single stream is load → run → unload per sample; only
the run is timed, on the device's own clock.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.clock import now
from hilbench.contracts.asc import (
    AscLoadModel,
    AscLoadSample,
    AscLoadStream,
    AscSampleResult,
    AscSingleStream,
    AscUnload,
    AscUnloadStream,
)
from hilbench.contracts.base import to_wire
from hilbench.contracts.remote import RemoteDevice

SAMPLE_TIMEOUT_S = 60.0  # one sample takes milliseconds; this only catches a hung device

def send_model(device: RemoteDevice, model: Any) -> dict[str, Any]:
    """Put the int8 model into the device: JSON metadata plus its integer arrays."""
    arrays = model.arrays()
    names = sorted(arrays)
    reply = device.asc.load_asc(
        AscLoadModel(workload="asc", meta=model.metadata(), arrays=names),
        [np.ascontiguousarray(arrays[n]) for n in names])
    return to_wire(reply)


def load_sample(device: RemoteDevice, index: int, audio: np.ndarray) -> dict[str, Any]:
    """Put one 1 s sample (float32) into device memory under ``index`` (untimed)."""
    reply = device.asc.load_asc(AscLoadSample(workload="asc", index=int(index)),
                                [np.ascontiguousarray(audio, dtype=np.float32)])
    return to_wire(reply)


def unload_sample(device: RemoteDevice, index: int) -> dict[str, Any]:
    """Free the device memory that sample ``index`` holds."""
    return to_wire(device.asc.load_asc(AscUnload(workload="asc", index=int(index)), []))


def load_stream(device: RemoteDevice, indices: Sequence[int], audio: np.ndarray
                ) -> dict[str, Any]:
    """Give the device k consecutive 1 s samples to play one after another (untimed)."""
    reply = device.asc.load_asc(
        AscLoadStream(workload="asc", indices=[int(i) for i in indices]),
        [np.ascontiguousarray(audio, dtype=np.float32)])
    return to_wire(reply)


def unload_stream(device: RemoteDevice) -> dict[str, Any]:
    return to_wire(device.asc.load_asc(AscUnloadStream(workload="asc"), []))


@dataclass(frozen=True)
class SampleRecord:
    """One single-stream sample: device timings, prediction and the orchestrator round trip."""

    index: int
    predicted: int
    preprocess_s: float | None  # None: the device cannot measure it (says why in the reply)
    inference_s: float
    round_trip_s: float  # orchestrator: run request sent .. reply received (load not included)
    t_done: float

    @property
    def device_s(self) -> float:
        return (self.preprocess_s or 0.0) + self.inference_s

    @property
    def overhead_s(self) -> float:
        """Harness time per sample: everything the device did not report as its own."""
        return self.round_trip_s - self.device_s


def run_single_stream(
    device: RemoteDevice,
    audio: np.ndarray,
    on_sample: Callable[[SampleRecord, dict], None] | None = None,
) -> list[SampleRecord]:
    """For each sample i of ``audio`` (N, samples): load it, run it, unload it; the next one
    only after the previous finished. Only the run is timed (on the device)."""
    records = []
    handle = device.asc
    with device.waiting(timeout_s=SAMPLE_TIMEOUT_S):
        for index in range(audio.shape[0]):
            load_sample(device, index, audio[index])
            t_issue = now()
            result = handle.run_asc(AscSingleStream(workload="asc", index=index))
            t_done = now()
            unload_sample(device, index)
            assert isinstance(result, AscSampleResult)
            record = SampleRecord(
                index=index,
                predicted=result.predicted,
                preprocess_s=result.preprocess_s,
                inference_s=result.inference_s,
                round_trip_s=t_done - t_issue,
                t_done=t_done,
            )
            records.append(record)
            if on_sample is not None:
                on_sample(record, to_wire(result))
    return records


def mean_and_std_error(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(n) if n > 1 else 0.0)
