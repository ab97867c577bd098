"""ASC runs re-analysed from their recording: the inputs the live run handed its metric code
(sample records, power windows with their samples, stage times) are rebuilt from the recorded
events and samples, and the very same functions
(:func:`~hilbench.workloads.asc.procedures.single_stream.emit_single_stream_metrics`,
:func:`~hilbench.workloads.asc.procedures.power._emit_power_metrics`) compute the figures
again. A change to those functions therefore changes what a replay recomputes: a cassette
test catches it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from hilbench.contracts.base import ContractError, decode
from hilbench.contracts.capabilities import Capabilities
from hilbench.contracts.power import power_report
from hilbench.sdk import check_region
from hilbench.wire.link import AgentError
from hilbench.workloads.asc.contract import AscCapabilities, AscWindowResult
from hilbench.workloads.asc.procedures.device import SampleRecord
from hilbench.workloads.asc.procedures.figures import PowerWindow, other_readings, phase_readings
from hilbench.workloads.asc.procedures.pipeline import (
    PipelineWindow,
    attach_readings,
    check_lists,
    rows_of,
    samples_from,
)
from hilbench.workloads.asc.procedures.power import _emit_power_metrics
from hilbench.workloads.asc.procedures.single_stream import emit_single_stream_metrics, stage_times
from hilbench.workloads.asc.procedures.table import AscSpec
from hilbench.workloads.asc.procedures.timing import (
    PhaseTiming,
    check_request,
    list_sample_allowance,
    request_groups,
    sample_untimed,
)

if TYPE_CHECKING:
    from hilbench.cassette.runs import RecordedRun, Recording
    from hilbench.documents import Metric
    from hilbench.sdk import Phase


def reanalyse(recording: Recording, run: RecordedRun) -> dict[str, Metric]:
    """The metrics of ``run`` computed again from its recording."""
    from hilbench.cassette.runs import Collector, NotReanalysable

    out = Collector(run.uid)
    try:
        _check_regions(run)
    except AgentError as exc:
        raise NotReanalysable(f"timing: {exc}") from None
    if run.run.get("procedure") == "asc.single_stream":
        records, labels, clip_ids = _sample_records(run)
        emit_single_stream_metrics(out.context, records, labels, clip_ids)
        if run.params.get("category") == "closed":
            _reference_check(run, records, out)
    else:
        _power(recording, run, out)
    return out.metrics


def _reference_check(run: RecordedRun, records: list[SampleRecord], out: Any) -> None:
    """A closed run's reference check and algorithm metrics again: the graph and the test
    split read anew from the run's parameters (ValueError, one line, when the graph there is
    no longer the one the run ran), the device's NIR declaration from its handshake."""
    from hilbench.workloads.asc.procedures.nir import check_and_emit
    from hilbench.workloads.asc.procedures.run import AscResources

    params = run.params
    spec = AscSpec.model_construct(**{k: params[k] for k in AscSpec.model_fields
                                      if k in params})
    res = AscResources(spec)
    res.ensure()
    if res.model.sha256 != params.get("graph_sha256"):
        raise ValueError(f"the graph at {spec.model} hashes {res.model.sha256[:12]}…, the run "
                         f"ran {str(params.get('graph_sha256'))[:12]}…")
    agent = run.agent()
    caps = ((run.run.get("agents") or {}).get(agent, {}).get("capabilities") or {}).get("nir")
    check_and_emit(out.context, res.model, res.test, records, caps or {}, agent,
                   spec.energy_model())


def _sample_records(run: RecordedRun) -> tuple[list[SampleRecord], np.ndarray, list[str]]:
    """The single-stream records as the live run held them, with labels and clip ids by
    sample index."""
    from hilbench.cassette.runs import NotReanalysable

    events = list(run.events_named("sample"))
    if not events:
        raise NotReanalysable(f"{run.label()}: no single-stream sample events")
    size = 1 + max(int(e["data"]["index"]) for e in events)
    labels = np.full(size, -1, dtype=np.int64)
    clip_ids = [""] * size
    records = []
    for e in events:
        d = e["data"]
        labels[d["index"]] = d["label"]
        clip_ids[d["index"]] = d["clip_id"]
        records.append(SampleRecord(index=int(d["index"]), predicted=int(d["predicted"]),
                                    preprocess_s=d["preprocess_s"], inference_s=d["inference_s"],
                                    round_trip_s=d["round_trip_s"], t_done=float(e["t"])))
    return records, labels, clip_ids


def _power(recording: Recording, run: RecordedRun, out: Any) -> None:
    from hilbench.cassette.runs import NotReanalysable

    params = run.params
    spec = AscSpec.model_construct(**{k: params[k] for k in AscSpec.model_fields
                                      if k in params})
    agent = run.agent()
    instruments = recording.instruments(agent)
    inst = instruments[0] if instruments else None
    caps_wire = ((run.run.get("agents") or {}).get(agent, {}).get("capabilities") or {}).get("asc")
    caps = msgspec.convert(caps_wire, AscCapabilities) if caps_wire else AscCapabilities()
    onboard = inst is None and bool(caps.onboard_power)
    # The single-stream run whose times this power run multiplied (its own when it measured
    # them itself, e.g. after a resume).
    source = next((m["meta"].get("single_stream_run") for m in run.metrics.values()
                   if (m.get("meta") or {}).get("single_stream_run")), run.uid)
    times_run = recording.runs.get(source)
    if times_run is None:
        raise NotReanalysable(f"{run.label()}: its single-stream run {source} is not recorded")
    records, _, _ = _sample_records(times_run)
    times = stage_times(times_run.uid, records)
    phases = {p["uid"]: p for p in run.phases}
    rebuilt: dict[str, Phase] = {}
    windows = []
    pipelines: list[PipelineWindow] = []
    for e in run.events:
        if e["name"] not in ("idle_window", "repeat_result", "pipeline_window"):
            continue
        # the live run acquired through the idle and active phases, unless on-board
        phase = rebuilt.get(e["phase_uid"]) or recording.phase(
            run, phases[e["phase_uid"]], () if onboard else instruments)
        rebuilt[phase.uid] = phase
        if e["name"] == "pipeline_window":
            pipelines.append(_pipeline(e, phase, agent, inst))
        else:
            windows.append(_window(e, phase, agent, inst, onboard, instruments))
    stream = int(params.get("stream_samples", 1))
    _emit_power_metrics(out.context, spec, stream, windows, inst, instruments, times,
                        onboard, pipelines if params.get("power_method") == "single_stream"
                        else None)


def _pipeline(event: dict[str, Any], phase: Phase, agent: str, inst: Any) -> PipelineWindow:
    """A single-stream power window as :mod:`hilbench.workloads.asc.procedures.pipeline`
    built it."""
    d = event["data"]
    offset = phase.offsets[agent]
    window = PipelineWindow(int(d["repetition"]), float(d["start"]), float(d["end"]), None,
                            offset.offset_s, offset.uncertainty_s, None,
                            samples_from(d["samples"]), list_rows=rows_of(d["list_windows"]),
                            **_marking(d))
    return attach_readings(window, phase, inst)


def _window(event: dict[str, Any], phase: Phase, agent: str, inst: Any, onboard: bool,
            instruments: Any = ()) -> PowerWindow:
    """The window as :mod:`hilbench.workloads.asc.procedures.power` built it when it ran."""
    d = event["data"]
    rep, start, end = int(d["repetition"]), float(d["start"]), float(d["end"])
    if event["name"] == "idle_window" and onboard:
        return PowerWindow("idle", rep, start, end, None, phase.offsets[agent].uncertainty_s,
                           None, power=power_report(d.get("power")))
    readings = {**phase_readings(phase, inst, end),
                "others": other_readings(phase, instruments, inst, end)}
    if event["name"] == "idle_window":
        return PowerWindow("idle", rep, start, end, offset_uncertainty_s=0.0, **readings)
    loop = stored_window(event)
    return PowerWindow(loop.stage, rep, start, end, loop=loop,
                       offset_uncertainty_s=phase.offsets[agent].uncertainty_s, **readings,
                       power=loop.power, **_marking(d))


WINDOW_KEYS = frozenset(f.encode_name for f in msgspec.structs.fields(AscWindowResult))


def stored_window(event: dict[str, Any]) -> AscWindowResult:
    """A power window's reply as its ``repeat_result`` event stored it (the reply's keys beside
    the event's own); a key that no longer fits the contract is named in one line."""
    from hilbench.cassette.runs import NotReanalysable

    d = event["data"]
    try:
        return decode(AscWindowResult, {k: v for k, v in d.items() if k in WINDOW_KEYS},
                      "bad_reply", "the stored power window")
    except ContractError as exc:
        raise NotReanalysable(f"{event['name']} event at t={event.get('t')}: {exc}") from None


def _check_regions(run: RecordedRun) -> None:
    """The device's claims against the orchestrator's windows with the phase's clock offset
    and link probe, as the live run checked them: each single-stream sample's region inside its
    request→reply window and each request's time outside its samples' stages within the bound
    (:mod:`.asc_timing`); each power window's loop inside its phase (the request went out after
    the phase started and the reply came before the window's event) and, where the event holds
    its request's window, that window's time outside the region within the bound."""
    from hilbench.cassette.runs import clock_offsets

    agent = run.agent()
    caps = (run.run.get("agents") or {}).get(agent, {}).get("capabilities") or {}
    declared = sample_untimed(decode(Capabilities, caps, "bad_reply"))
    phases = {p["uid"]: p for p in run.phases}
    # a sample's load and unload as the live phase timed them, before its sample lists
    observed = {e["phase_uid"]: list_sample_allowance(e["data"]["pairs_s"])
                for e in run.events if e["name"] == "load_unload_probe"}
    samples: dict[str, list[tuple[Any, tuple[float, float]]]] = {}
    for e in run.events:
        d, phase = e["data"], phases.get(e["phase_uid"])
        if phase is None:
            continue
        offset = clock_offsets(phase)[agent]
        timing = PhaseTiming(agent, offset, declared,
                             list_sample_s=observed.get(phase["uid"], 0.0))
        if e["name"] == "sample" and d.get("t_device_start") is not None:
            t_done = float(e["t"])
            work = float(d.get("preprocess_s") or 0.0) + float(d["inference_s"])
            sent, received = d.get("request_window") or (t_done - float(d["round_trip_s"]),
                                                         t_done)
            check_region(agent, f"sample {d['index']}", float(d["t_device_start"]),
                         float(d["t_device_end"]), float(sent), float(received), offset, work)
            record = SampleRecord(int(d["index"]), int(d["predicted"]), d.get("preprocess_s"),
                                  float(d["inference_s"]), float(d["round_trip_s"]), t_done,
                                  (float(sent), float(received)))
            samples.setdefault(phase["uid"], []).append(
                (record, (float(d["t_device_start"]), float(d["t_device_end"]))))
        elif e["name"] == "pipeline_window":
            check_lists(timing, int(d["repetition"]), samples_from(d["samples"]),
                        d["list_windows"])
        elif e["name"] == "repeat_result" and "t_start" in d:
            n, mean = d.get("iterations"), d.get("mean_s")
            work = float(n) * float(mean) if n is not None and mean is not None else 0.0
            what = f"{d.get('stage')} window {d.get('repetition')}"
            t_start, t_end = float(d["t_start"]), float(d["t_end"])
            check_region(agent, what, t_start, t_end, float(phase["t_start"] if "t_start" in
                         phase else phase["t"]), float(e["t"]), offset, work)
            if d.get("request_window"):
                sent, received = d["request_window"]
                timing.check(what, float(sent), float(received), t_end - t_start,
                             region=(t_start, t_end))
    for phase_uid, held in samples.items():
        timing = PhaseTiming(agent, clock_offsets(phases[phase_uid])[agent], declared,
                             list_sample_s=observed.get(phase_uid, 0.0))
        records = [r for r, _ in held]
        for window, group, regions in request_groups(records, [b for _, b in held]):
            check_request(timing, window, group, regions)
        timing.check_typical()


def _marking(data: dict[str, Any]) -> dict[str, Any]:
    """Whether the window's device marked it, and its stated latency, as the event stored."""
    return {"device_marks": bool(data.get("device_marks")),
            "device_marker_latency_s": float(data.get("device_marker_latency_s") or 0.0)}
