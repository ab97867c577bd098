"""``audit verify``'s marker checks: the marker edges a run stored against its samples and its
figures.

Each ``marker_edges`` event must name as many samples as the bundle holds for that instrument
in that phase, and no edge past them. The figures' marker-cut windows (their ``windows`` meta)
must be the marked regions the stored edges give, one per phase: as many windows as phases
with one region, each at the samples the edges cut. (The figures' values are recomputed from
the same edges by the re-analysis; this says *which* count or window disagrees.)
"""

from __future__ import annotations

from collections.abc import Iterator

from hilbench.cassette.runs import RecordedRun, Recording
from hilbench.power.marker_record import EVENT_KIND, edges_from_event
from hilbench.power.marker_windows import MARKER_CUT, pairing_of
from hilbench.power.markers import cut_windows

PIPELINE_PHASE = "active_pipeline"  # a single-stream power window: one region per sample
PIPELINE_STAGE = "single_stream"  # its entry in a figure's windows


def check_markers(recording: Recording, record: RecordedRun) -> Iterator[str]:
    """Problems with ``record``'s stored marker edges, each naming the phase and instrument."""
    names = {p["uid"]: p.get("name") for p in record.phases}
    # (instrument, phase uid) -> (phase name, the marked regions its edges give)
    regions: dict[tuple[str, str], tuple[str, list[tuple[int, int]]]] = {}
    for event in record.events_named(EVENT_KIND):
        d = event["data"]
        phase, instrument = str(names.get(event["phase_uid"])), str(d.get("instrument"))
        where = f"{EVENT_KIND} of {instrument} ({d.get('channel')}) in phase {phase}"
        try:
            edges = edges_from_event(d)
            period, latency = float(d["sample_period_s"]), float(d["marker_latency_s"])
            claimed = int(d["samples"])
        except (KeyError, TypeError, ValueError) as exc:
            yield f"{where}: {exc}"
            continue
        stream = recording.streams.get((event["phase_uid"], instrument))
        held = 0 if stream is None else len(recording.cassette.read(stream)[0])
        if claimed != held:
            yield f"{where}: says {claimed} samples, the bundle holds {held}"
        if len(edges) and int(edges.index[-1]) > held:
            yield f"{where}: an edge at sample {int(edges.index[-1])}, past the {held} held"
        cuts = cut_windows(edges, sample_period_s=period, marker_latency_s=latency,
                           pairing=pairing_of(edges), n_samples=held)
        regions.setdefault((instrument, event["phase_uid"]), (phase, []))[1].extend(
            (c.start, c.stop) for c in cuts)
    yield from _check_figure_windows(record, regions)


def _check_figure_windows(record: RecordedRun,
                          regions: dict[tuple[str, str], tuple[str, list[tuple[int, int]]]]
                          ) -> Iterator[str]:
    """The marker-cut windows a figure states against the regions the edges give, phase by
    phase in the order they ran."""
    for metric in record.metrics.values():
        meta = metric.get("meta") or {}
        windows, source = meta.get("windows"), meta.get("source")
        if not isinstance(windows, list) or not isinstance(source, str):
            continue
        cut = [w for w in windows if isinstance(w, dict) and w.get("alignment") == MARKER_CUT]
        single: dict[str, list[tuple[int, int]]] = {}
        for (inst, _), (phase, found) in regions.items():  # events come in phase order
            if inst == source and len(found) == 1 and phase != PIPELINE_PHASE:
                single.setdefault(phase, []).append(found[0])
        sampled = [w for w in cut if w.get("stage") == PIPELINE_STAGE]
        cut = [w for w in cut if w.get("stage") != PIPELINE_STAGE]
        if len(cut) != sum(len(found) for found in single.values()):
            yield (f"{record.label()}: {metric['name']} states {len(cut)} marker-cut "
                   f"window(s); the stored edges of {source} give "
                   f"{sum(len(f) for f in single.values())} phase(s) with one marked region")
        for w in cut:
            left = single.get(f"active_{w.get('stage')}") or [None]
            region = left.pop(0)
            if region is None or list(region) != list(w.get("marker_samples") or []):
                yield (f"{record.label()}: {metric['name']}: the {w.get('stage')} window "
                       f"states samples {w.get('marker_samples')}, the stored edges cut "
                       f"{None if region is None else list(region)}")
        yield from _check_sample_regions(record, metric["name"], source, sampled, regions)
        return  # every figure of a run states the same windows: one check is enough


def _check_sample_regions(record: RecordedRun, name: str, source: str,
                          sampled: list[dict], regions: dict[tuple[str, str],
                                                             tuple[str, list[tuple[int, int]]]]
                          ) -> Iterator[str]:
    """Single-stream windows cut by one marked region per sample: each states how many
    regions and the samples from the first's start to the last's end; the stored edges of its
    phase must cut the same."""
    phases = [found for (inst, _), (phase, found) in regions.items()
              if inst == source and phase == PIPELINE_PHASE]
    for k, w in enumerate(sampled):
        found = phases[k] if k < len(phases) else []
        span = [found[0][0], found[-1][1]] if found else None
        stated = (w.get("marker_regions"), list(w.get("marker_samples") or []))
        if stated != (len(found), span):
            yield (f"{record.label()}: {name}: single-stream window {w.get('repetition')} "
                   f"states {stated[0]} marked regions over samples {stated[1]}, the stored "
                   f"edges of {source} cut {len(found)} over {span}")
