"""``power_method = "single_stream"``: active power while the device runs single stream itself.

A stage repeated alone on one held sample (the Arduino method, :mod:`.asc_power`) is not what a
device with caches does in single stream: there each stage runs after the other one and finds
the caches and branch predictors it left. The cpu device runs a stage repeated alone 10-30 %
faster than in single stream, and the loop-time check rightly says the power was measured
while the device ran differently.

Here the active window runs the test samples through sample lists exactly as the single-stream
run does (each sample loaded, pre-processed, inferred and unloaded, the next only after the
previous), cycling through the test split for ``active_s``. The device says when each stage of
each sample ran; the meter's readings are attributed to the stages by regression on each
reading's stage occupancy (:func:`hilbench.power.stage_attribution.attribute_stage_power`),
with the readings' alignment to the device's clock fitted within the timing uncertainty. A
device that marks its samples (capabilities ``marker``) recorded by an instrument with marker
inputs has each sample's stages placed by its marked region in the instrument's own samples
instead (:mod:`hilbench.power.marker_stages`, "marker-cut"); software alignment stays the
fallback, its reason stored. The
time between samples (load, unload, the list round trips) is a state of its own. The stage
times inside the window come from the same code path as the single-stream times, so the
loop-time check compares like with like. This needs readings shorter than a stage (the
attribution refuses them otherwise, saying what to change).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import Event
from hilbench.power.estimators import PowerEstimate
from hilbench.power.marker_stages import METHOD as MARKED_METHOD
from hilbench.power.marker_stages import marked_stage_power
from hilbench.power.marker_windows import (
    RegionsAlignment,
    alignment_summary,
    device_marker_latency_s,
    sample_regions,
    stated_device_latency,
)
from hilbench.power.markers import MarkerEdges
from hilbench.power.source import SampleBatch
from hilbench.power.stage_attribution import (
    StageAttribution,
    StageSchedule,
    attribute_stage_power,
)
from hilbench.power.timing import aperture_s, timing_uncertainty_s
from hilbench.power.uncertainty import InstrumentAccuracy
from hilbench.sdk import Instrument, Phase, RunContext, check_region
from hilbench.wire.link import AgentError
from hilbench.workloads.asc.procedures.device import (
    STAGE_FIELDS,
    load_sample_list,
    mean_and_std_error,
    run_sample_list,
    sample_list_size,
)
from hilbench.workloads.asc.procedures.figures import (
    PowerWindow,
    instrument_meta,
    phase_readings,
    stage_power_figures,
    window_estimate,
    window_readings,
)
from hilbench.workloads.asc.procedures.timing import (
    PhaseTiming,
    observe_load_unload,
    sample_untimed,
    samples_echo,
)

if TYPE_CHECKING:
    from hilbench.workloads.asc.procedures.run import AscResources
    from hilbench.workloads.asc.procedures.single_stream import StageTimes

METHOD = ("device runs single stream over the test samples (sample lists, each sample loaded, "
          "pre-processed, inferred and unloaded before the next, batch size 1); stage power "
          "separated by regression of the readings on when each stage ran")
SAMPLE_FIELDS = ("index", "t_start", "preprocess_s", "inference_s", "t_end")
# How well a device's stage stamps mark where its power changes (half-width): the timer reads
# and call overhead between a stamp and the work. On the cpu device the stamps around a stage
# lie ~1 µs apart; on the simulated bench the meter's own stamps sit up to ~1 µs from the
# reported times (a 0.06 W bias on 30 W pre-processing at 0.2 ms stages).
STAGE_EDGE_S = 2e-6


@dataclass(frozen=True)
class PassLoop:
    """One stage's device time per sample over a single-stream window's sample lists (a
    :class:`~hilbench.workloads.asc.procedures.figures.StageLoop`)."""

    stage: str
    iterations: int
    mean_s: float
    std_error_s: float
    lists: int


@dataclass
class PipelineWindow:
    """One active window of single stream: where it lies, its readings and each sample's stage
    times as the device reported them (agent clock)."""

    repetition: int
    start: float  # orchestrator clock: the first sample's start
    end: float  # the last sample's end
    batch: SampleBatch | None
    offset_s: float  # agent clock minus orchestrator clock (this phase's probe)
    offset_uncertainty_s: float
    start_uncertainty_s: float | None
    samples: dict[str, np.ndarray]  # SAMPLE_FIELDS -> one value per sample run
    drift_residual_s: float = 0.0
    interval: dict[str, Any] | None = None
    list_rows: list[tuple[int, int]] = field(default_factory=list)  # each list's first, last
    # the marker edges the instrument recorded in the phase, and whether the device marks each
    # sample (capabilities marker): together they place the stages by sample index (issue 35)
    markers: list[MarkerEdges] | None = None
    device_marks: bool = False
    device_marker_latency_s: float = 0.0  # what the device states about its line's edges

    def alignment(self, inst: Instrument) -> RegionsAlignment:
        """How this window's samples are placed in ``inst``'s samples: marker-cut or software."""
        held = 0 if self.batch is None else len(self.batch)
        return sample_regions(self.markers, inst.info, held, self.device_marks,
                              len(self.samples["index"]), self.device_marker_latency_s)

    def list_means(self, stage: str) -> np.ndarray:
        """The stage's mean device time over each sample list the window ran."""
        values = self.samples[STAGE_FIELDS[stage]]
        return np.array([values[i:j + 1].mean() for i, j in self.list_rows])

    def schedule(self, stages: Sequence[str]) -> StageSchedule:
        """Where each stage ran, on the orchestrator timeline (the phase's offset applied)."""
        t_start = self.samples["t_start"] - self.offset_s
        t_end = self.samples["t_end"] - self.offset_s
        starts: dict[str, np.ndarray] = {}
        ends: dict[str, np.ndarray] = {}
        if "preprocessing" in stages:
            starts["preprocessing"] = t_start
            ends["preprocessing"] = t_start + self.samples["preprocess_s"]
        starts["inference"] = t_end - self.samples["inference_s"]
        ends["inference"] = t_end
        return StageSchedule(starts, ends)

    def loop(self, stage: str) -> PassLoop:
        """The stage's device time per sample inside the window, as a repeat loop reports it;
        its standard error from the scatter of the sample lists' means (batch means: the
        samples of one list share the machine's speed at the time)."""
        values = self.samples[STAGE_FIELDS[stage]]
        mean, se = mean_and_std_error(values.tolist())
        lists = self.list_means(stage)
        if lists.size > 1:
            se = max(se, float(lists.std(ddof=1)) / math.sqrt(lists.size))
        return PassLoop(stage, len(values), mean, se, int(lists.size))

    def event_data(self) -> dict[str, Any]:
        return {"repetition": self.repetition, "start": self.start, "end": self.end,
                "samples": {k: v.tolist() for k, v in self.samples.items()},
                "device_marks": self.device_marks,
                "device_marker_latency_s": self.device_marker_latency_s}


def samples_from(data: dict[str, Any]) -> dict[str, np.ndarray]:
    """A pipeline window's per-sample arrays from its event (or the device's results)."""
    return {k: np.asarray(data[k], dtype=np.int64 if k == "index" else np.float64)
            for k in SAMPLE_FIELDS}


def load_pipeline(device: RemoteDevice, res: AscResources, first: int) -> list[list[int]]:
    """The sample lists a window cycles through, from test sample ``first`` round the test
    split. A split that fits one list is loaded here, once (untimed, before any window)."""
    test = res.test
    n = len(test)
    per_list = min(n, sample_list_size(test.slices[0]))
    order = [(first + k) % n for k in range(n)]
    lists = [order[i:i + per_list] for i in range(0, n, per_list)]
    if len(lists) == 1:
        load_sample_list(device, lists[0], test.slices[lists[0]])
    return lists


def pipeline_window(
    ctx: RunContext,
    res: AscResources,
    device: RemoteDevice,
    instruments: Sequence[Instrument],
    inst: Instrument | None,
    lists: list[list[int]],
    active_s: float,
    rep: int,
) -> PipelineWindow:
    """Single stream over the lists, one after the other, until ``active_s`` has passed."""
    test = res.test
    echo = samples_echo(max(lists, key=len))
    with ctx.phase("active_pipeline", [device], instruments, echo=echo) as phase:
        offset = phase.offsets[device.name]
        timing = PhaseTiming(device.name, offset, sample_untimed(device.capabilities),
                             lambda: device.link_burst(echo))
        timing.list_sample_s = observe_load_unload(ctx, phase, device, lists[0][0],
                                                   test.slices[lists[0][0]])
        columns: dict[str, list[float]] = {k: [] for k in SAMPLE_FIELDS}
        list_windows: list[list[float]] = []  # sent, received, first and last sample's row
        deadline = ctx.now() + active_s
        k = 0
        while True:
            indices = lists[k % len(lists)]
            if len(lists) > 1:  # untimed, inside the window: time between samples
                load_sample_list(device, indices, test.slices[indices])
            reply, sent, received = run_sample_list(device, indices, phase.poll)
            results = reply.results
            if reply.stopped_early:
                raise AgentError(device.name, "stopped", f"the agent stopped the sample list "
                                 f"after {len(results)} of {len(indices)} samples in power "
                                 f"window {rep}", {"samples_done": len(results)})
            first = len(columns["index"])
            list_windows.append([sent, received, first, first + len(results) - 1])
            for r in results:
                columns["index"].append(r.index)
                columns["t_start"].append(r.t_start)
                columns["preprocess_s"].append(r.preprocess_s or 0.0)
                columns["inference_s"].append(r.inference_s)
                columns["t_end"].append(r.t_end)
            k += 1
            if ctx.now() >= deadline:
                break
        samples = samples_from(columns)
        try:
            check_lists(timing, rep, samples, list_windows)
        finally:
            timing.emit(ctx, phase.uid)
        window = PipelineWindow(
            rep, float(samples["t_start"][0] - offset.offset_s),
            float(samples["t_end"][-1] - offset.offset_s), None, offset.offset_s,
            offset.uncertainty_s, None, samples, list_rows=rows_of(list_windows),
            **device_marking(device))
        ctx.emit(Event(ctx.run_uid, phase.uid, "pipeline_window", ctx.now(),
                       {**window.event_data(), "list_windows": list_windows}))
    return attach_readings(window, phase, inst)


def rows_of(list_windows: list[list[float]]) -> list[tuple[int, int]]:
    """Each sample list's first and last row in a window's samples."""
    return [(int(first), int(last)) for _, _, first, last in list_windows]


def list_spread(pipelines: list[PipelineWindow], stage: str) -> float:
    """Standard deviation of a sample list's mean stage time over every list of the windows.

    Why: single stream over the test set is one pass, and the pass's mean moves with the
    machine's speed at the time, not only with the samples' own scatter. The windows run the
    same lists ~100 times: on the 2-core VM a list's mean varied by 12-88 µs (SD) where the
    samples' standard error within a list said 4-9 µs."""
    means = np.concatenate([w.list_means(stage) for w in pipelines])
    return float(means.std(ddof=1)) if means.size > 1 else 0.0


def check_lists(timing: PhaseTiming, rep: int, samples: dict[str, np.ndarray],
                list_windows: list[list[float]]) -> None:
    """Each sample list's claimed span inside the orchestrator's request→reply window of the
    request that ran it, with the phase's clock offset (else ``timing_inconsistent``), and the
    window's time outside the list's stages within the link's bound (:mod:`.asc_timing`)."""
    device_s = samples["preprocess_s"] + samples["inference_s"]
    for k, (sent, received, first, last) in enumerate(list_windows):
        i, j = int(first), int(last)
        what = f"sample list {k} of power window {rep}"
        t_start, t_end = float(samples["t_start"][i]), float(samples["t_end"][j])
        work = float(device_s[i:j + 1].sum())
        check_region(timing.agent, what, t_start, t_end, float(sent), float(received),
                     timing.offset, work)
        timing.check(what, float(sent), float(received), work, j - i + 1, (t_start, t_end))


def attach_readings(window: PipelineWindow, phase: Phase, inst: Instrument | None
                    ) -> PipelineWindow:
    """The window with its phase's readings and the meter's interval estimate."""
    for name, value in phase_readings(phase, inst, window.end).items():
        setattr(window, name, value)
    return window


def pipeline_power_figures(
    spec: Any,
    idle_windows: list[PowerWindow],
    pipelines: list[PipelineWindow],
    inst: Instrument | None,
    times: StageTimes,
    loop_times: dict[str, tuple[float, float]],
) -> dict[str, Any] | None:
    """Idle power from the idle windows, each stage's active power from the single-stream
    windows by attribution; dynamic power and energy as for the repeat method."""
    if inst is None:
        return {"reason": 'power_method = "single_stream" needs an external meter on the agent'}
    info = inst.info
    stages = tuple(loop_times)
    aperture = aperture_s(inst) or info.time_resolution_s
    estimates: dict[str, list[PowerEstimate]] = {"idle": [], **{s: [] for s in stages}}
    attributions: list[dict[str, Any]] = []
    try:
        for w in idle_windows:
            estimates["idle"].append(window_estimate(w, inst, spec.boundary)[0])
        for w in pipelines:
            found = _attribute(w, inst, aperture, stages)
            for stage in stages:
                estimates[stage].append(found.estimates[stage])
            placed = w.alignment(inst)
            attributions.append({"repetition": w.repetition, **found.to_dict(),
                                 **placed.to_dict(),
                                 **({"method": MARKED_METHOD} if placed.cuts else {})})
        spreads = {stage: list_spread(pipelines, stage) for stage in stages}
        out = stage_power_figures(
            estimates, loop_times, times, pass_spreads=spreads,
            extra=lambda stage: alignment_summary(
                [_IDLE_ALIGNMENT] if stage == "idle" else [w.alignment(inst) for w in pipelines]))
    except ValueError as exc:
        return {"reason": f"instrument {inst.spec.id}: {exc}"}
    out["meta"] = {
        **instrument_meta(inst, spec.boundary, aperture),
        "power_method": "single_stream",
        "stage_edge_s": STAGE_EDGE_S,
        "attribution": attributions,
        "windows": [{"stage": "idle", "repetition": w.repetition, "start": w.start,
                     "end": w.end} for w in idle_windows]
        + [{"stage": "single_stream", "repetition": w.repetition, "start": w.start,
            "end": w.end, "samples": len(w.samples["index"]), "interval": w.interval,
            **w.alignment(inst).to_dict(), **stated_device_latency(w.device_marker_latency_s)}
           for w in pipelines],
    }
    return out



_IDLE_ALIGNMENT = RegionsAlignment((), "the idle window is the orchestrator's own; the "
                                       "device's marker stays low in it")


def _attribute(w: PipelineWindow, inst: Instrument, aperture: float, stages: tuple[str, ...]
               ) -> StageAttribution:
    """One window's stage powers: placed by the device's marked regions where the instrument
    recorded one per sample run (:mod:`hilbench.power.marker_stages`), else by the agent's
    stamps through the phase's clock offset, the alignment fitted within its uncertainty."""
    t, watts = window_readings(w.batch, inst, f"single-stream power window {w.repetition}")
    accuracy = InstrumentAccuracy.from_source(inst.info)
    regions = w.alignment(inst)
    if regions.cuts:
        return marked_stage_power(watts, regions, w.samples, stages, accuracy,
                                  edge_s=STAGE_EDGE_S)
    max_shift = timing_uncertainty_s(inst, w.offset_uncertainty_s, w.start_uncertainty_s,
                                     w.drift_residual_s)
    return attribute_stage_power(t, watts, aperture, w.schedule(stages), (w.start, w.end),
                                 accuracy, max_shift_s=max_shift, edge_s=STAGE_EDGE_S)


def device_marking(device: RemoteDevice) -> dict[str, Any]:
    """Whether ``device`` marks its timed regions (a declared marker with a usable stated
    latency) and that latency, as a window's keyword arguments."""
    latency = device_marker_latency_s(device.capabilities.marker)
    return {"device_marks": latency is not None, "device_marker_latency_s": latency or 0.0}
