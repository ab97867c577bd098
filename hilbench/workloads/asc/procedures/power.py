"""``asc.power``: idle and active power windows, dynamic power and energy per inference.

The Arduino method: an idle window with the model loaded and the device ready, then for each
stage an active window in which the device processes one sample held in its memory again and
again (batch size 1) for ``active_s``. With ``stream_s`` further power runs play k consecutive
test samples one after another (batch size 1, never a batch) so set-up is amortised, and every
figure says so.

Energy per inference of a stage = dynamic power × the mean single-stream time of that stage
over the test set (NeuroBench, Table 6: power × the reported mean execution time), with the
uncertainty of both. The device's time per sample inside the power window (the loop time) is
stored beside it; when the two disagree beyond their uncertainties the figure is flagged: the
device ran differently while its power was measured.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench import clock
from hilbench.contracts.base import to_wire
from hilbench.contracts.power import PowerReport
from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import Event, Metric
from hilbench.power.estimators import (
    PowerEstimate,
)
from hilbench.power.instrument_agreement import META_KEY as INSTRUMENTS_KEY
from hilbench.power.instrument_agreement import compare_instruments
from hilbench.power.marker_windows import alignment_summary, stated_device_latency
from hilbench.power.provenance import META_KEY, PowerOrigin, agreement, stated_uncertainty95
from hilbench.power.timing import aperture_s
from hilbench.sdk import Instrument, Phase, RunContext, check_region
from hilbench.wire.link_probe import Echo
from hilbench.workloads.asc.contract import (
    STAGES,
    AscCapabilities,
    AscRepeat,
    AscStream,
    AscWindowResult,
)
from hilbench.workloads.asc.procedures.device import (
    load_sample,
    load_stream,
    send_model,
    unload_sample,
    unload_stream,
)
from hilbench.workloads.asc.procedures.figures import (
    PowerWindow,
    StageLoop,
    instrument_meta,
    loop_time,
    other_readings,
    phase_readings,
    stage_power_figures,
    window_estimate,
)
from hilbench.workloads.asc.procedures.onboard import onboard_figures
from hilbench.workloads.asc.procedures.pipeline import METHOD as PIPELINE_METHOD
from hilbench.workloads.asc.procedures.pipeline import (
    PipelineWindow,
    device_marking,
    load_pipeline,
    pipeline_power_figures,
    pipeline_window,
)
from hilbench.workloads.asc.procedures.single_stream import (
    StageTimes,
    run_single_stream_phase,
    stage_times,
)
from hilbench.workloads.asc.procedures.timing import PhaseTiming, sample_untimed, window_echo
from hilbench.workloads.asc.remote import RemoteAscDevice

if TYPE_CHECKING:
    from hilbench.workloads.asc.procedures.run import AscResources, AscSpec

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.25


def run_power_unit(
    ctx: RunContext,
    res: AscResources,
    stream: int,
    device: RemoteDevice,
    instruments: Sequence[Instrument],
    times: StageTimes | None = None,
) -> None:
    """Single-stream times (``times``: this trial's single-stream run, else measured here),
    then an idle window and one active window per stage, ``repetitions`` times; then the
    figures."""
    spec = res.spec
    test = res.test
    if times is None:
        # Resumed campaign or a power-only unit: measure the test-set times in this run.
        times = stage_times(ctx.run_uid, run_single_stream_phase(ctx, res, device))
    if spec.power_method == "single_stream":
        _run_single_stream_power(ctx, res, device, instruments, times)
        return
    rows = power_rows(spec.power_sample, stream, len(test))
    with ctx.phase("load", [device]) as phase:
        model_reply = send_model(device, res.model)
        if stream == 1:
            sample_reply = load_sample(device, rows[0], test.slices[rows[0]])
        else:
            sample_reply = load_stream(device, rows, test.slices[rows])
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), {  # replies stored as JSON
            "model": to_wire(model_reply), "samples": rows, "device": to_wire(sample_reply),
            "clip_ids": [test.clip_ids[r] for r in rows],
        }))
    inst = instruments[0] if instruments else None
    windows: list[PowerWindow] = []
    caps = device.capabilities.asc or AscCapabilities()
    stages = caps.timed_stages()
    # No external meter on this agent, but the device measures its own rails: use those.
    onboard = inst is None and caps.onboard_power
    for rep in range(spec.repetitions):
        if onboard:
            windows.append(_device_idle_window(ctx, device, rows, spec.idle_s, rep))
        else:
            windows.append(_idle_window(ctx, device, instruments, inst, spec.idle_s, rep))
        for stage in stages:
            windows.append(_active_window(ctx, device, instruments, inst, stage, rows,
                                          spec.active_s, rep))
    if stream == 1:
        unload_sample(device, rows[0])
    else:
        unload_stream(device)
    _emit_power_metrics(ctx, spec, stream, windows, inst, instruments, times, onboard)


def _run_single_stream_power(ctx: RunContext, res: AscResources, device: RemoteDevice,
                             instruments: Sequence[Instrument], times: StageTimes) -> None:
    """``power_method = "single_stream"`` (:mod:`.asc_pipeline`): an idle window, then one
    window of single stream over the test samples, ``repetitions`` times."""
    spec = res.spec
    inst = instruments[0] if instruments else None
    with ctx.phase("load", [device]) as phase:
        model_reply = send_model(device, res.model)
        lists = load_pipeline(device, res, spec.power_sample)
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), {
            "model": to_wire(model_reply),  # the reply stored as JSON in the event
            "sample_lists": len(lists),
            "samples": sum(len(indices) for indices in lists)}))
    windows: list[PowerWindow] = []
    pipelines: list[PipelineWindow] = []
    for rep in range(spec.repetitions):
        windows.append(_idle_window(ctx, device, instruments, inst, spec.idle_s, rep))
        pipelines.append(pipeline_window(ctx, res, device, instruments, inst, lists,
                                         spec.active_s, rep))
    _emit_power_metrics(ctx, spec, 1, windows, inst, instruments, times,
                        pipelines=pipelines)


def _window_body(stage: str, rows: list[int], duration_s: float) -> AscRepeat | AscStream:
    """One sample repeated, or the loaded stream played in order."""
    if len(rows) == 1:
        return AscRepeat(workload="asc", stage=stage,  # type: ignore[arg-type]
                         duration_s=duration_s, index=rows[0])
    return AscStream(workload="asc", stage=stage,  # type: ignore[arg-type]
                     duration_s=duration_s)


def power_rows(first: int, stream: int, test_size: int) -> list[int]:
    """The test samples a power run holds: ``stream`` consecutive ones from ``first``,
    wrapping round the end of the test split."""
    return [int(r) for r in (first + np.arange(stream)) % test_size]


def _idle_window(
    ctx: RunContext,
    device: RemoteDevice,
    instruments: Sequence[Instrument],
    inst: Instrument | None,
    idle_s: float,
    rep: int,
) -> PowerWindow:
    """The device configured, model and sample in memory, nothing asked of it."""
    with ctx.phase("idle", [device], instruments) as phase:
        start = ctx.now()
        end = start + idle_s
        while (remaining := end - ctx.now()) > 0:
            phase.poll()
            clock.sleep(min(POLL_INTERVAL_S, remaining))
        end = ctx.now()
        ctx.emit(Event(ctx.run_uid, phase.uid, "idle_window", end,
                       {"repetition": rep, "start": start, "end": end}))
    # The idle window is the orchestrator's own: no agent clock maps it, only the meter's start.
    return PowerWindow("idle", rep, start, end, offset_uncertainty_s=0.0,
                       **phase_readings(phase, inst, end),
                       others=other_readings(phase, instruments, inst, end))


def _device_idle_window(
    ctx: RunContext, device: RemoteDevice, rows: list[int], idle_s: float, rep: int
) -> PowerWindow:
    """Idle on the device's own timeline, so its on-board monitor reports the window: the
    network configured and the sample(s) in memory, nothing processed."""
    body = _window_body("idle", rows, idle_s)
    echo = window_echo(to_wire(body))  # the body's wire size shapes the link probe
    with ctx.phase("idle", [device], echo=echo) as phase:
        loop = RemoteAscDevice(device).run_window(body)
        _check_window(ctx, device, phase, f"idle window {rep}", loop, echo)
        start = phase.to_orchestrator_time(device.name, loop.t_start)
        end = phase.to_orchestrator_time(device.name, loop.t_end)
        ctx.emit(Event(ctx.run_uid, phase.uid, "idle_window", ctx.now(),
                       {"repetition": rep, "start": start, "end": end,
                        # stored as JSON in the event
                        "power": None if loop.power is None else to_wire(loop.power)}))
    return PowerWindow("idle", rep, start, end, None, phase.offsets[device.name].uncertainty_s,
                       None, power=loop.power)


def _active_window(
    ctx: RunContext,
    device: RemoteDevice,
    instruments: Sequence[Instrument],
    inst: Instrument | None,
    stage: str,
    rows: list[int],
    active_s: float,
    rep: int,
) -> PowerWindow:
    """The device processes samples in its memory one at a time for ``active_s`` (its clock):
    one sample repeated, or a loaded stream played in order."""
    body = _window_body(stage, rows, active_s)
    echo = window_echo(to_wire(body))  # the body's wire size shapes the link probe
    with ctx.phase(f"active_{stage}", [device], instruments, echo=echo) as phase:
        with device.waiting(phase.poll):
            loop = RemoteAscDevice(device).run_window(body)
        _check_window(ctx, device, phase, f"{stage} window {rep}", loop, echo)
        start = phase.to_orchestrator_time(device.name, loop.t_start)
        end = phase.to_orchestrator_time(device.name, loop.t_end)
        marking = device_marking(device)
        ctx.emit(Event(ctx.run_uid, phase.uid, "repeat_result", ctx.now(),
                       {**to_wire(loop),  # the reply stored as JSON in the event
                        "repetition": rep, "start": start, "end": end,
                        "request_window": list(device.window or ()), **marking}))
    return PowerWindow(stage, rep, start, end, loop=loop,
                       offset_uncertainty_s=phase.offsets[device.name].uncertainty_s,
                       **phase_readings(phase, inst, end),
                       others=other_readings(phase, instruments, inst, end), power=loop.power,
                       **marking)


def _check_window(ctx: RunContext, device: RemoteDevice, phase: Phase, what: str,
                  loop: AscWindowResult, echo: Echo) -> None:
    """The window the device claims must lie inside the orchestrator's request→reply window
    and hold the loop's work (iterations × mean time), else the run is timing_inconsistent;
    the request's window may exceed the claimed region by the link's bound (:mod:`.asc_timing`)."""
    if device.window is None:
        return
    work = loop.iterations * loop.mean_s if loop.mean_s is not None else 0.0
    t_start, t_end = loop.t_start, loop.t_end
    offset = phase.offsets[device.name]
    check_region(device.name, what, t_start, t_end, *device.window, offset, work)
    timing = PhaseTiming(device.name, offset, sample_untimed(device.capabilities),
                         lambda: device.link_burst(echo))
    try:
        timing.check(what, *device.window, t_end - t_start, region=(t_start, t_end))
    finally:
        timing.emit(ctx, phase.uid)


def _emit_power_metrics(
    ctx: RunContext,
    spec: AscSpec,
    stream: int,
    windows: list[PowerWindow],
    inst: Instrument | None,
    instruments: Sequence[Instrument],
    times: StageTimes,
    onboard: bool = False,
    pipelines: list[PipelineWindow] | None = None,
) -> None:
    run = ctx.run_uid
    method = (
        PIPELINE_METHOD if pipelines is not None else
        f"device plays a {stream}-sample (= {stream} s of audio) stream of consecutive "
        "test samples one after another at batch size 1" if stream > 1 else
        "device repeats one sample held in memory at batch size 1"
    )
    common: dict[str, Any] = {
        "stream_samples": stream,
        "amortised": stream > 1,
        "method": method,
        "idle_s": spec.idle_s,
        "active_s": spec.active_s,
        "repetitions": spec.repetitions,
        "single_stream_run": times.run_uid,
    }
    loops, reports = _stage_loops(windows, pipelines, onboard)
    measured = tuple(stage for stage in STAGES if loops[stage])
    loop_times = {stage: loop_time(loops[stage]) for stage in measured}
    for stage in measured:
        mean, se = loop_times[stage]
        ctx.emit(Metric(run, f"loop_time_s.{stage}", mean, "s", se, meta={
            **common, "uncertainty": "standard error of the mean",
            "samples": sum(int(lp.iterations) for lp in loops[stage]),
            "source": "device timers (agent clock) in the power windows",
        }))

    if pipelines is not None:
        figures = pipeline_power_figures(spec, windows, pipelines, inst, times, loop_times)
    elif onboard:
        figures = onboard_figures(windows, spec.boundary, times, loop_times, spec.agent)
    else:
        figures = _power_figures(spec, windows, inst, times, loop_times)
    compared = _further_instruments(spec, windows, inst, instruments, times, loop_times,
                                    figures if pipelines is None and not onboard else None)
    for stage in measured:
        reported = agent_active_power(spec.agent, reports[stage],
                                      (figures or {}).get(f"active_power_w.{stage}"))
        if reported is not None:
            ctx.emit(Metric(run, f"agent_active_power_w.{stage}", reported[0], "W",
                            reported[1], meta={**common, **reported[2]}))
    if len(instruments) > 1 and inst is not None:
        common["note"] = (f"{len(instruments)} instruments measure this agent; figures are "
                          f"{inst.spec.id}'s" + (", each other's beside them with E_n"
                                                  if compared else ""))
    _emit_figures(ctx, spec.agent, common, figures, compared)


def _emit_figures(ctx: RunContext, agent: str, common: dict[str, Any],
                  figures: dict[str, Any] | None, compared: dict[str, dict[str, Any]]) -> None:
    """The power figures as metrics, each without a value and with its reason when it could
    not be had."""
    run = ctx.run_uid
    if figures is None or "reason" in figures:
        reason = (figures or {}).get("reason") or f"no instrument measures agent {agent}"
        for name, unit in POWER_METRICS:
            ctx.emit(Metric(run, name, None, unit, meta={**common, "reason": reason}))
        return
    meta = {**common, **figures.pop("meta")}
    for name, unit in POWER_METRICS:
        if name not in figures:  # a stage the device cannot time: no active window was run
            ctx.emit(Metric(run, name, None, unit, meta={
                **common, "reason": "the device does not time this stage in a power window "
                                    "(capabilities asc.stages)"}))
            continue
        value, uncertainty, extra = figures[name]
        if name in compared:
            extra = {**extra, INSTRUMENTS_KEY: compared[name]}
        ctx.emit(Metric(run, name, value, unit, uncertainty, meta={**meta, **extra}))


def _stage_loops(windows: list[PowerWindow], pipelines: list[PipelineWindow] | None,
                 onboard: bool) -> tuple[dict[str, list[StageLoop]],
                                         dict[str, list[PowerReport | None]]]:
    """Each stage's device loops in its active windows, and the agent's own readings of those
    windows to go beside the figures: none from single-stream windows, and none with on-board
    figures (they are those readings)."""
    reports: dict[str, list[PowerReport | None]] = {stage: [] for stage in STAGES}
    if pipelines is not None:
        timed = [s for s in STAGES if s == "inference" or all(
            (w.samples["preprocess_s"] > 0).all() for w in pipelines)]
        return {stage: [w.loop(stage) for w in pipelines] if stage in timed else []
                for stage in STAGES}, reports
    loops: dict[str, list[StageLoop]] = {stage: [] for stage in STAGES}
    for w in windows:
        if w.stage in loops and w.loop is not None:
            loops[w.stage].append(w.loop)
            reports[w.stage].append(w.power)
    return loops, ({stage: [] for stage in STAGES} if onboard else reports)


def _further_instruments(spec: AscSpec, windows: list[PowerWindow], inst: Instrument | None,
                         instruments: Sequence[Instrument], times: StageTimes,
                         loop_times: dict[str, tuple[float, float]],
                         figures: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Each further instrument's figures of the same windows beside the headline's, with
    their E_n (:mod:`hilbench.power.instrument_agreement`), by figure name."""
    others = [o for o in instruments if o is not inst]
    if inst is None or not others or figures is None or "reason" in figures:
        return {}
    return compare_instruments(inst.spec.id, figures, [
        (o.spec.id, _power_figures(spec, [w.seen_by(o.spec.id) for w in windows], o, times,
                                   loop_times))
        for o in others])


def agent_active_power(agent: str, reports: Sequence[PowerReport | None],
                       measured: tuple[float | None, float | None, Any] | None
                       ) -> tuple[float, float | None, dict[str, Any]] | None:
    """The agent's own power report over a stage's active windows (every window must carry
    a measured one): their mean, labelled as the agent's, with the uncertainty its source
    states and its agreement (E_n) with the instrument's active power of the same windows."""
    if not reports or not all(r is not None and r.usable for r in reports):
        return None
    first = reports[0]
    assert first is not None
    mean = statistics.fmean(float(r.avg_power_w) for r in reports if r and r.avg_power_w)
    accuracy = first.stated_accuracy
    uncertainty = (None if accuracy is None else stated_uncertainty95(
        mean, accuracy.relative, accuracy.absolute_w, first.resolution_w))
    origin = PowerOrigin.of_agent(agent, first.source, stated=accuracy is not None,
                                  description=", ".join(first.domain_names()))
    meta: dict[str, Any] = {META_KEY: origin.to_dict(), "source": first.source,
                            "domains": first.domains}
    if measured is not None and measured[0] is not None:
        meta["agreement"] = {**agreement(mean, uncertainty, measured[0], measured[1]).to_dict(),
                             "instrument_w": measured[0], "instrument_uncertainty_w": measured[1]}
    return mean, uncertainty, meta


POWER_METRICS: tuple[tuple[str, str], ...] = (
    ("idle_power_w", "W"),
    *((f"active_power_w.{s}", "W") for s in STAGES),
    *((f"dynamic_power_w.{s}", "W") for s in STAGES),
    *((f"energy_per_inference_j.{s}", "J") for s in STAGES),
)


def _power_figures(
    spec: AscSpec,
    windows: list[PowerWindow],
    inst: Instrument | None,
    times: StageTimes,
    loop_times: dict[str, tuple[float, float]],
) -> dict[str, Any] | None:
    """Idle, active, dynamic power and energy per inference per stage, each as (value,
    95 % expanded uncertainty, meta with its budget); {"reason": …} when they cannot be had."""
    if inst is None:
        return None
    aperture = aperture_s(inst)
    estimates: dict[str, list[PowerEstimate]] = {"idle": [], **{s: [] for s in STAGES}}
    timings = []
    try:
        for w in windows:
            estimate, timing = window_estimate(w, inst, spec.boundary)
            estimates[w.stage].append(estimate)
            timings.append(timing)
        out = stage_power_figures(estimates, loop_times, times, extra=lambda stage: (
            alignment_summary([w.alignment(inst) for w in windows if w.stage == stage])))
    except ValueError as exc:
        return {"reason": f"instrument {inst.spec.id}: {exc}"}
    out["meta"] = {
        **instrument_meta(inst, spec.boundary, aperture),
        "timing_uncertainty_s": max(timings),
        "timing_uncertainty_per_window_s": timings,
        "windows": [
            {"stage": w.stage, "repetition": w.repetition, "start": w.start, "end": w.end,
             "drift_residual_s": w.drift_residual_s, "interval": w.interval,
             **w.alignment(inst).to_dict(), **stated_device_latency(w.device_marker_latency_s)}
            for w in windows
        ],
    }
    return out


