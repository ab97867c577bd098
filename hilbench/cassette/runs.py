"""A recorded campaign read back as the live run's own objects, so that the procedures' analysis
code runs on it unchanged: each run's documents (:class:`RecordedRun`), its phases as
:class:`~hilbench.orchestrator.phases.Phase` objects holding the samples exactly as the live
figures saw them (raw stamps restamped by the phase's ``instrument_interval`` record), its
instruments as :class:`~hilbench.orchestrator.instruments.Instrument` objects built from the
recorded driver and settings without any I/O, and a :class:`~hilbench.orchestrator.phases.
RunContext` that collects the metrics the analysis emits instead of storing them.

Reads both layouts a recording comes in: a cassette's run documents (``run_start``,
``phase_start``, ``event``, ``metric``, ``run_stop``) and an audit bundle's store rows
(``run``, ``phase``, ``event``, ``metric``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from hilbench.cassette.manifest import MANIFEST
from hilbench.cassette.reader import Cassette, Stream, read_json_object
from hilbench.cassette.recorder import DOCUMENTS
from hilbench.confined_read import ConfinedFolder
from hilbench.documents import DocumentStream, Metric
from hilbench.orchestrator.instruments import Instrument, InstrumentSpec
from hilbench.orchestrator.phases import Phase, RunContext
from hilbench.power.align import IntervalEstimate
from hilbench.power.marker_record import EVENT_KIND as MARKER_EVENT
from hilbench.power.marker_record import edges_from_event
from hilbench.power.registry import instrument_class
from hilbench.power.source import SampleBatch
from hilbench.wire.link import ClockOffset

CAMPAIGN_ROW = "campaign.json"  # an audit bundle's campaign row


class NotReanalysable(ValueError):
    """The recording lacks what the analysis needs; the message says what."""


@dataclass
class RecordedRun:
    """One run's documents: its start (or store row), phases, events and metrics by name."""

    run: dict[str, Any]
    phases: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def uid(self) -> str:
        return str(self.run["uid"])

    @property
    def status(self) -> str | None:
        return self.run.get("status")

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.run.get("params") or {})

    def label(self) -> str:
        return f"run {self.uid[:8]} ({self.run.get('unit_key')})"

    def event(self, name: str, phase_uid: str | None = None) -> dict[str, Any] | None:
        return next(self.events_named(name, phase_uid), None)

    def events_named(self, name: str, phase_uid: str | None = None
                     ) -> Iterator[dict[str, Any]]:
        return (e for e in self.events if e["name"] == name
                and (phase_uid is None or e["phase_uid"] == phase_uid))

    def phase(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.phases if p["name"] == name), None)

    def agent(self) -> str:
        """The run's agent: named in its parameters, else the one its phases probed."""
        named = self.params.get("agent")
        if named is not None:
            return str(named)
        agents = {a for p in self.phases for a in (p.get("clock_offsets") or {})}
        if len(agents) != 1:
            raise NotReanalysable(f"{self.label()}: which agent ran it? (phases probed "
                                  f"{sorted(agents)})")
        return agents.pop()


def load_runs(cassette: Cassette) -> dict[str, RecordedRun]:
    """Every run of the recording by uid, in recorded order; a document of a run that never
    started is a ValueError naming it."""
    runs: dict[str, RecordedRun] = {}

    def of(doc: dict[str, Any]) -> RecordedRun:
        run = runs.get(doc["run_uid"])
        if run is None:
            raise NotReanalysable(f"{cassette.files.label(DOCUMENTS)}: a {doc['kind']} of run "
                                  f"{doc['run_uid']!r:.60}, which no document started")
        return run

    for doc in cassette.documents():
        kind = doc.get("kind")
        if kind in ("run", "run_start"):
            runs[doc["uid"]] = RecordedRun(doc)
        elif kind in ("phase", "phase_start"):
            of(doc).phases.append(doc)
        elif kind == "event":
            of(doc).events.append(doc)
        elif kind == "metric":
            of(doc).metrics[doc["name"]] = doc
        elif kind == "run_stop":
            of(doc).run["status"] = doc["exit_status"]
    return runs


class Recording:
    """A cassette or bundle payload with its runs, streams and instruments."""

    def __init__(self, folder: str | Path | ConfinedFolder) -> None:
        self.cassette = Cassette(folder)
        self.folder = self.cassette.folder
        self.runs = load_runs(self.cassette)
        self.streams: dict[tuple[str | None, str], Stream] = {
            (s.phase_uid, s.source): s for s in self.cassette.streams()}

    @cached_property
    def instrument_specs(self) -> list[InstrumentSpec]:
        """The instruments as the campaign configured them: the cassette manifest's, else the
        bundle's campaign row."""
        found = [_instrument_spec(key, value, self.cassette.files.label(MANIFEST))
                 for key, value in _mapping(self.cassette.manifest.get("instruments")).items()
                 if isinstance(value, dict) and "driver" in value]
        if not found and self.cassette.files.exists(CAMPAIGN_ROW):
            found = campaign_row_instruments(self.cassette.files)
        return found

    def instruments(self, agent: str) -> list[Instrument]:
        """The instruments that measured ``agent``'s device, as the analysis sees them."""
        return [recorded_instrument(spec) for spec in self.instrument_specs
                if spec.measures == agent]

    def phase(self, run: RecordedRun, phase: dict[str, Any],
              acquired: Sequence[Instrument] = ()) -> Phase:
        """The live :class:`Phase` back: clock offsets, and per instrument its samples
        restamped as the live figures used them, its acquisition-start uncertainty and its
        interval estimate. An instrument of ``acquired`` (those that acquired through the
        phase) that recorded no reading holds an empty batch, as it did live."""
        rebuilt = Phase(phase["uid"], phase["name"], clock_offsets(phase))
        intervals = {e["data"].get("instrument"): e["data"]
                     for e in run.events_named("instrument_interval", phase["uid"])}
        for (phase_uid, source), stream in self.streams.items():
            if phase_uid != phase["uid"]:
                continue
            t, values = self.cassette.read(stream)
            if source in intervals:
                estimate = IntervalEstimate.from_dict(intervals[source])
                rebuilt.interval_estimates[source] = estimate
                t = estimate.restamp(t)
            rebuilt.samples[source] = SampleBatch(t, values)
            rebuilt.start_uncertainty_s[source] = stream.meta.get("t0_uncertainty_s")
        for e in run.events_named(MARKER_EVENT, phase["uid"]):
            rebuilt.markers.setdefault(str(e["data"].get("instrument")), []).append(
                edges_from_event(e["data"]))
        for inst in acquired:
            rebuilt.samples.setdefault(inst.spec.id, SampleBatch.empty())
        return rebuilt


def campaign_row_instruments(files: ConfinedFolder) -> list[InstrumentSpec]:
    """The instruments of a bundle's campaign row, as its campaign configured them."""
    row = read_json_object(files, CAMPAIGN_ROW)
    where = files.label(CAMPAIGN_ROW)
    instruments = _mapping(row.get("config")).get("instruments") or []
    if not isinstance(instruments, list):
        raise NotReanalysable(f"{where}: config.instruments is not a list")
    return [_instrument_spec(i.get("id") if isinstance(i, dict) else None, i, where)
            for i in instruments]


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _instrument_spec(key: Any, value: Any, where: str) -> InstrumentSpec:
    """An instrument as recorded, its fields checked for type (a ValueError naming it)."""
    fields = _mapping(value)
    wanted = {"driver": str, "measures": str, "resource": (str, type(None)),
              "simulate": (str, type(None)), "settings": (dict, type(None))}
    if not isinstance(key, str) or any(not isinstance(fields.get(k), t)
                                       for k, t in wanted.items()):
        raise NotReanalysable(f"{where}: instrument {key!r:.60} is not one this hilbench "
                              f"recorded ({value!r:.120})")
    return InstrumentSpec(id=key, driver=fields["driver"], measures=fields["measures"],
                          resource=fields.get("resource"), simulate=fields.get("simulate"),
                          settings=dict(fields.get("settings") or {}))


def clock_offsets(phase: dict[str, Any]) -> dict[str, ClockOffset]:
    """A recorded phase's clock offset per agent, as the live phase held them (with the link
    probe of a timed phase; a phase recorded before link probes has none)."""
    return {agent: ClockOffset.from_dict(o)
            for agent, o in (phase.get("clock_offsets") or {}).items()}


@dataclass
class RecordedSource:
    """What the analysis reads of an instrument driver: its declared info and settings,
    from the driver built with the recorded settings (no I/O)."""

    info: Any
    settings: Any
    t0_uncertainty_s: float | None = None


def recorded_instrument(spec: InstrumentSpec) -> Instrument:
    """The instrument driver built from the recorded resource and settings. A meter the campaign
    simulated was given no resource, so a placeholder stands for it when the driver wants one;
    a source of this machine (an energy counter) takes none and gets none."""
    resources = [spec.resource] if spec.resource else [None, f"recorded:{spec.id}"]
    driver, refusals = None, []
    for resource in resources:
        try:
            driver = instrument_class(spec.driver).from_config(resource, spec.settings,
                                                               visa_library="@py")
            break
        except Exception as exc:  # a driver plugin missing here, or settings it refuses
            refusals.append(str(exc))
    if driver is None:
        raise NotReanalysable(f"instrument {spec.id} ({spec.driver}) cannot be rebuilt from "
                              f"its recorded settings: {refusals[-1]}")
    return Instrument(spec, RecordedSource(driver.info, getattr(driver, "settings", None)))


class Collector:
    """The document stream of one re-analysed run: keeps the metrics the analysis emits."""

    def __init__(self, run_uid: str) -> None:
        self.metrics: dict[str, Metric] = {}
        self.context = RunContext(DocumentStream([self._keep]), run_uid)

    def _keep(self, doc: Any) -> None:
        if isinstance(doc, Metric):
            self.metrics[doc.name] = doc
