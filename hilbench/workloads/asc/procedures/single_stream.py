"""``asc.single_stream``: the LoadGen single-stream scenario over the test split.

The model is loaded once and one sample run untimed (a warm-up: a device's one-time costs are
no sample's latency); then each test sample is loaded into device memory (untimed), run
(pre-processing and inference timed separately on the device's clock) and unloaded before the
next, so a device that holds one sample can host it. The orchestrator compares the prediction
with the label (classification, not timed) and keeps one ``sample`` event per sample. Results:
accuracy with a clip-aware interval, mean pre-processing and inference time with standard error,
and the harness overhead (wall time per sample minus device time). An agent that offers
``samples`` runs the samples in lists beside the device (load, run, unload each, no round trip
between two); the orchestrator checks each claimed region against the list's window.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hilbench.contracts.base import to_wire
from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import Event, Metric
from hilbench.power.accuracy import clip_accuracy_interval
from hilbench.sdk import RunContext, check_region
from hilbench.workloads.asc.contract import STAGES, AscSampleResult
from hilbench.workloads.asc.procedures.device import (
    STAGE_FIELDS,
    SampleRecord,
    mean_and_std_error,
    run_single_stream,
    sample_list_size,
    send_model,
    uses_sample_lists,
)
from hilbench.workloads.asc.procedures.nir import emit_reference_check
from hilbench.workloads.asc.procedures.timing import (
    PhaseTiming,
    check_request,
    observe_load_unload,
    sample_untimed,
    single_stream_echo,
)

if TYPE_CHECKING:
    from hilbench.workloads.asc.procedures.run import AscResources

STAGE_METRICS = dict(zip(STAGES, ("preprocess_time_s", "inference_time_s"), strict=True))


@dataclass(frozen=True)
class StageTimes:
    """Mean single-stream time of each stage over the test set, as the energy figures use it."""

    run_uid: str
    means: dict[str, tuple[float | None, float | None]]  # stage -> (mean s, standard error s)
    samples: int


def run_single_stream_phase(ctx: RunContext, res: AscResources, device: RemoteDevice
                            ) -> list[SampleRecord]:
    """Load the model, stream the test samples one at a time; one event per sample."""
    test = res.test
    with ctx.phase("load", [device]) as phase:
        t0 = ctx.now()
        model_reply = send_model(device, res.model)
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), {
            "model": to_wire(model_reply),  # the reply stored as JSON in the event
            "load_s": ctx.now() - t0,
        }))
        # One sample first, loaded, run and unloaded like the others but kept out of every
        # figure (LoadGen's warm-up): a device's one-time costs fall on its first run (the cpu
        # device's first sample took 2.5 ms, 7.7x the median: first-touch allocations, FFT
        # plans), which is no sample's latency and biased the mean that energy multiplies and
        # the power windows' loop time is checked against.
        warm = run_single_stream(device, test.slices[:1])[0]
        ctx.emit(Event(ctx.run_uid, phase.uid, "warmup", ctx.now(), {
            "index": warm.index, "preprocess_s": warm.preprocess_s,
            "inference_s": warm.inference_s, "round_trip_s": warm.round_trip_s,
            "note": "untimed warm-up run, in no figure"}))
    labels = test.labels

    # The link idles while a sample works: as long as the device says its warm-up sample
    # took, and never longer than the orchestrator saw it take. A device that claims short
    # gets echoes as warm as its claim (a tighter bound); one that claims long gets no colder
    # echoes than its round trip.
    echo = single_stream_echo(device, len(test), sample_list_size(test.slices[0]),
                              min(warm.device_s, warm.round_trip_s))
    with ctx.phase("single_stream", [device], echo=echo) as phase:
        timing = PhaseTiming(device.name, phase.offsets[device.name],
                             sample_untimed(device.capabilities),
                             lambda: device.link_burst(echo))
        if uses_sample_lists(device):
            timing.list_sample_s = observe_load_unload(ctx, phase, device, 0, test.slices[0])
        # the samples of the request in hand, each with its region on the device's clock
        pending: list[tuple[SampleRecord, tuple[float, float]]] = []

        def check_pending() -> None:
            """The request's samples (one, or a sample list) against its window."""
            if pending:
                records, regions = zip(*pending, strict=True)
                assert records[0].window is not None
                check_request(timing, records[0].window, records, regions)
                pending.clear()

        def on_sample(record: SampleRecord, body: AscSampleResult) -> None:
            # The device's region must lie inside the request→reply window of the request that
            # ran it (its own run request, or the sample list it came in).
            assert record.window is not None
            sent, received = record.window
            check_region(device.name, f"sample {record.index}", body.t_start, body.t_end,
                         sent, received, phase.offsets[device.name], record.device_s)
            if pending and pending[0][0].window != record.window:
                check_pending()
            pending.append((record, (body.t_start, body.t_end)))
            label = int(labels[record.index])
            ctx.emit(Event(ctx.run_uid, phase.uid, "sample", record.t_done, {
                "index": record.index,
                "clip_id": test.clip_ids[record.index],
                "slice": int(test.slice_index[record.index]),
                "label": label,
                "predicted": record.predicted,
                "correct": record.predicted == label,
                "scores": body.scores,
                "preprocess_s": record.preprocess_s,
                "preprocess_reason": body.preprocess_reason,
                # a device that pre-processes in real time (Xylo's on-chip AFE) measures
                # how long its input took to arrive (speaker -> microphone)
                "preprocess_latency_s": body.preprocess_latency_s,
                "inference_s": record.inference_s,
                "round_trip_s": record.round_trip_s,
                "overhead_s": record.overhead_s,
                "request_window": [sent, received],
                "t_device_start": body.t_start,
                "t_device_end": body.t_end,
            }))

        try:
            records = run_single_stream(device, test.slices, on_sample)
            check_pending()
            timing.check_typical()
        finally:
            timing.emit(ctx, phase.uid)
    return records


def stage_times(run_uid: str, records: list[SampleRecord]) -> StageTimes:
    """Mean and standard error of each stage's device time over the records."""
    pre = [r.preprocess_s for r in records]
    means: dict[str, tuple[float | None, float | None]] = {
        "inference": mean_and_std_error([r.inference_s for r in records]),
        "preprocessing": (
            (None, None) if any(p is None for p in pre)
            else mean_and_std_error([float(p) for p in pre if p is not None])
        ),
    }
    return StageTimes(run_uid, means, len(records))


def run_single_stream_unit(ctx: RunContext, res: AscResources, device: RemoteDevice
                           ) -> StageTimes:
    """The whole single-stream run: records, then metrics; returns the stage times (the power
    runs of the same trial use them)."""
    records = run_single_stream_phase(ctx, res, device)
    emit_single_stream_metrics(ctx, records, res.test.labels, res.test.clip_ids)
    emit_reference_check(ctx, res, records, device)  # a NIR graph only (closed category)
    return stage_times(ctx.run_uid, records)


def emit_single_stream_metrics(
    ctx: RunContext, records: list[SampleRecord], labels: np.ndarray, clip_ids: list[str]
) -> None:
    run = ctx.run_uid
    n = len(records)
    correct_by_sample = [r.predicted == int(labels[r.index]) for r in records]
    correct = sum(correct_by_sample)
    accuracy = correct / n
    interval = clip_accuracy_interval(correct_by_sample, [clip_ids[r.index] for r in records])
    ctx.emit(Metric(run, "accuracy", accuracy, "", interval.uncertainty95, meta={
        "correct": correct, "samples": n, "clips": interval.clips,
        "interval95": [interval.low, interval.high],
        "uncertainty": interval.method,
        "note": "classification on the orchestrator, not timed",
    }))
    timer = ("device timers (agent clock), sample in device memory .. step done; one sample "
             "loaded at a time")
    times = stage_times(run, records)
    for stage, name in STAGE_METRICS.items():
        mean, se = times.means[stage]
        if mean is None:
            ctx.emit(Metric(run, name, None, "s", meta={
                "reason": "the device does not measure this stage (see the sample events' "
                          "preprocess_reason)", "samples": n}))
            continue
        values = [float(getattr(r, STAGE_FIELDS[stage])) for r in records]
        ctx.emit(Metric(run, name, mean, "s", se, meta={
            "statistic": "mean", "uncertainty": "standard error of the mean", "samples": n,
            "median_s": statistics.median(values), "source": timer,
        }))
    overhead = np.array([r.overhead_s for r in records])
    device = np.array([r.device_s for r in records])
    harness_meta = {"samples": n, "device_median_s": float(np.median(device)),
                    "definition": "orchestrator wall time per sample minus device-reported "
                                  "pre-processing + inference time: the run request's round "
                                  "trip, or the sample's share of its sample list's "
                                  "request→reply window (load and unload included)"}
    ctx.emit(Metric(run, "harness_overhead_median_s", float(np.median(overhead)), "s",
                    meta=harness_meta))
    ctx.emit(Metric(run, "harness_overhead_p99_s", float(np.percentile(overhead, 99)), "s",
                    meta=harness_meta))
    ctx.emit(Metric(run, "samples", float(n), ""))
