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
from hilbench.contracts.remote import RemoteDevice
from hilbench.wire.link import AgentError
from hilbench.workloads.asc.contract import (
    MAX_SAMPLE_LIST,
    AscHeldReply,
    AscLoadModel,
    AscLoadSample,
    AscLoadSampleList,
    AscLoadStream,
    AscModelReply,
    AscSampleResult,
    AscSamples,
    AscSamplesResult,
    AscSingleStream,
    AscStreamReply,
    AscUnload,
    AscUnloadStream,
)
from hilbench.workloads.asc.dataset import CLASSES
from hilbench.workloads.asc.remote import RemoteAscDevice

# Where a sample's device time of each stage is kept (SampleRecord, a sample's reply, events).
STAGE_FIELDS = {"preprocessing": "preprocess_s", "inference": "inference_s"}
SAMPLE_TIMEOUT_S = 60.0  # one sample takes milliseconds; this only catches a hung device
# Audio one ``samples`` request carries (128 one-second samples at 16 kHz): the round trip is
# shared by that many samples, and the agent holds no more than this for the list.
SAMPLE_LIST_BYTES = 8 * 1024 * 1024

def send_model(device: RemoteDevice, model: Any) -> AscModelReply:
    """Put the int8 model into the device: JSON metadata plus its integer arrays (a NIR
    graph: its file's bytes, only to a device that declares it runs NIR graphs)."""
    from hilbench.workloads.asc.nir.model import NirAscModel

    if isinstance(model, NirAscModel):
        from hilbench.workloads.asc.procedures.nir import require_nir_device

        require_nir_device(device)
    arrays = model.arrays()
    names = sorted(arrays)
    return RemoteAscDevice(device).load_model(
        AscLoadModel(workload="asc", meta=model.metadata(), arrays=names),
        [np.ascontiguousarray(arrays[n]) for n in names])


def load_sample(device: RemoteDevice, index: int, audio: np.ndarray) -> AscHeldReply:
    """Put one 1 s sample (float32) into device memory under ``index`` (untimed)."""
    return RemoteAscDevice(device).load_sample(AscLoadSample(workload="asc", index=int(index)),
                                               np.ascontiguousarray(audio, dtype=np.float32))


def unload_sample(device: RemoteDevice, index: int) -> AscHeldReply:
    """Free the device memory that sample ``index`` holds."""
    return RemoteAscDevice(device).free_sample(AscUnload(workload="asc", index=int(index)))


def load_stream(device: RemoteDevice, indices: Sequence[int], audio: np.ndarray
                ) -> AscStreamReply:
    """Give the device k consecutive 1 s samples to play one after another (untimed)."""
    return RemoteAscDevice(device).load_stream(
        AscLoadStream(workload="asc", indices=[int(i) for i in indices]),
        np.ascontiguousarray(audio, dtype=np.float32))


def unload_stream(device: RemoteDevice) -> AscStreamReply:
    return RemoteAscDevice(device).free_stream(AscUnloadStream(workload="asc"))


@dataclass(frozen=True)
class SampleRecord:
    """One single-stream sample: device timings, prediction and the orchestrator round trip."""

    index: int
    predicted: int
    preprocess_s: float | None  # None: the device cannot measure it (says why in the reply)
    inference_s: float
    # Orchestrator clock. One request per sample: its run request sent .. reply received (load
    # not included). A sample list: this sample's share of the list's run request→reply window,
    # split at the device's sample ends, the transport both ways shared equally; the shares
    # add up to the window.
    round_trip_s: float
    t_done: float
    window: tuple[float, float] | None = None  # the request that ran it: sent, reply received

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
    on_sample: Callable[[SampleRecord, AscSampleResult], None] | None = None,
) -> list[SampleRecord]:
    """For each sample i of ``audio`` (N, samples): load it, run it, unload it; the next one
    only after the previous finished. Only the run is timed (on the device).

    An agent that offers ``samples`` (protocol version 3) does this beside the device over
    lists of samples, with no round trip between two samples; otherwise it takes three
    requests per sample."""
    if uses_sample_lists(device):
        return _run_sample_lists(device, audio, on_sample)
    records = []
    handle = RemoteAscDevice(device)
    with device.waiting(timeout_s=SAMPLE_TIMEOUT_S):
        for index in range(audio.shape[0]):
            load_sample(device, index, audio[index])
            t_issue = now()
            result = handle.run_sample(AscSingleStream(workload="asc", index=index))
            t_done = now()
            unload_sample(device, index)
            checked_answer(device.name, result, index, "")
            record = SampleRecord(
                index=index,
                predicted=result.predicted,
                preprocess_s=result.preprocess_s,
                inference_s=result.inference_s,
                round_trip_s=t_done - t_issue,
                t_done=t_done,
                window=(t_issue, t_done),
            )
            records.append(record)
            if on_sample is not None:
                on_sample(record, result)
    return records


def uses_sample_lists(device: RemoteDevice) -> bool:
    """Whether single stream on ``device`` runs in sample lists (its agent offers them)."""
    asc = device.capabilities.asc
    return asc is not None and "samples" in asc.modes


def _run_sample_lists(
    device: RemoteDevice,
    audio: np.ndarray,
    on_sample: Callable[[SampleRecord, AscSampleResult], None] | None,
) -> list[SampleRecord]:
    """Single stream in lists of samples run by the agent (``samples``)."""
    records: list[SampleRecord] = []
    n = audio.shape[0]
    per_list = sample_list_size(audio[0])
    for first in range(0, n, per_list):
        indices = list(range(first, min(n, first + per_list)))
        load_sample_list(device, indices, audio[first:first + per_list])
        reply, sent, received = run_sample_list(device, indices)
        results = reply.results
        span = results[-1].t_end - results[0].t_start if results else 0.0
        # What lies outside the agent's span (the request and reply in transit), shared
        # equally by the list's samples.
        outside = (received - sent - span) / len(results) if results else 0.0
        t_done, previous_end = sent, None
        for result in results:
            # This sample's share of the window: from the previous sample's end to its own
            # (agent clock; the offset cancels), plus its part of the transport.
            share = outside + (result.t_end - result.t_start if previous_end is None
                               else result.t_end - previous_end)
            previous_end = result.t_end
            t_done += share
            record = SampleRecord(
                index=result.index,
                predicted=result.predicted,
                preprocess_s=result.preprocess_s,
                inference_s=result.inference_s,
                round_trip_s=share,
                t_done=t_done,
                window=(sent, received),
            )
            records.append(record)
            if on_sample is not None:
                on_sample(record, result)
        if reply.stopped_early:  # a stop reached the agent: no figure from part of the set
            raise AgentError(device.name, "stopped",
                             f"the agent stopped the sample list after {len(results)} of "
                             f"{len(indices)} samples", {"samples_done": len(records)})
    return records


def sample_list_size(sample: np.ndarray) -> int:
    """Samples per sample list: as many as fit the list's byte budget, within the contract."""
    return max(1, min(MAX_SAMPLE_LIST, SAMPLE_LIST_BYTES // max(1, sample.nbytes)))


def load_sample_list(device: RemoteDevice, indices: list[int], audio: np.ndarray) -> None:
    """Loading is untimed (LoadGen loads its sample library before issuing queries): the
    list's audio travels before the run, which carries only the indices."""
    chunk = np.ascontiguousarray(audio, dtype=np.float32)
    RemoteAscDevice(device).load_sample_list(
        AscLoadSampleList(workload="asc", indices=indices), chunk)


def run_sample_list(device: RemoteDevice, indices: list[int],
                    poll: Callable[[], None] | None = None
                    ) -> tuple[AscSamplesResult, float, float]:
    """Single stream over a loaded list; the reply checked (order, one sample after the
    other), with the orchestrator's request→reply window (sent, received)."""
    with device.waiting(poll, timeout_s=SAMPLE_TIMEOUT_S * len(indices)):
        reply = RemoteAscDevice(device).run_samples(AscSamples(workload="asc", indices=indices))
    assert device.window is not None
    sent, received = device.window
    _check_list(device.name, indices, reply.results, reply.stopped_early)
    return reply, sent, received


def _check_list(agent: str, indices: list[int], results: list[AscSampleResult],
                stopped_early: bool) -> None:
    """The reply to a sample list answers the samples asked, in order, one after another."""
    if len(results) > len(indices) or (len(results) < len(indices) and not stopped_early):
        raise AgentError(agent, "bad_reply",
                         f"asked for {len(indices)} samples, the reply has {len(results)}",
                         {"key": "results"})
    previous = None
    for k, (index, result) in enumerate(zip(indices, results, strict=False)):
        checked_answer(agent, result, index, f"results[{k}]")
        if previous is not None and result.t_start < previous.t_end:
            raise AgentError(agent, "timing_inconsistent",
                             f"sample {index} starts {previous.t_end - result.t_start:.6f} s "
                             f"before sample {previous.index} ended: single stream runs one "
                             "sample after the other",
                             {"t_start": result.t_start, "previous_t_end": previous.t_end})
        previous = result


def checked_answer(agent: str, result: AscSampleResult, index: int, key: str) -> None:
    """A sample's answer must be for that sample (an answer for another one would be scored
    against the wrong label) and name one of the task's classes; either is ``bad_reply``
    naming the key. ``key``: where the result sits in the reply (``results[3]``; empty: the
    reply itself)."""
    where = f"{key}." if key else ""
    if result.index != index:
        raise AgentError(agent, "bad_reply",
                         f"{key or 'the reply'} is sample {result.index}, not {index}",
                         {"key": f"{where}index"})
    if result.predicted >= len(CLASSES):
        raise AgentError(agent, "bad_reply",
                         f"{key or 'the reply'} (sample {index}) predicts class "
                         f"{result.predicted}, not one of the task's {len(CLASSES)} classes "
                         f"(0 … {len(CLASSES) - 1})", {"key": f"{where}predicted"})


def mean_and_std_error(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(n) if n > 1 else 0.0)
