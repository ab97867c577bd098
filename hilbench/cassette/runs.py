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

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from hilbench.cassette.reader import Cassette, Stream
from hilbench.documents import DocumentStream, Metric
from hilbench.orchestrator.client import ClockOffset
from hilbench.orchestrator.instruments import Instrument, InstrumentSpec, _instrument_class
from hilbench.orchestrator.phases import Phase, RunContext
from hilbench.power.align import IntervalEstimate
from hilbench.power.source import SampleBatch


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
    """Every run of the recording by uid, in recorded order."""
    runs: dict[str, RecordedRun] = {}
    for doc in cassette.documents():
        kind = doc.get("kind")
        if kind in ("run", "run_start"):
            runs[doc["uid"]] = RecordedRun(doc)
        elif kind in ("phase", "phase_start"):
            runs[doc["run_uid"]].phases.append(doc)
        elif kind == "event":
            runs[doc["run_uid"]].events.append(doc)
        elif kind == "metric":
            runs[doc["run_uid"]].metrics[doc["name"]] = doc
        elif kind == "run_stop":
            runs[doc["run_uid"]].run["status"] = doc["exit_status"]
    return runs


class Recording:
    """A cassette or bundle payload with its runs, streams and instruments."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.cassette = Cassette(self.folder)
        self.runs = load_runs(self.cassette)
        self.streams: dict[tuple[str | None, str], Stream] = {
            (s.phase_uid, s.source): s for s in self.cassette.streams()}

    @cached_property
    def instrument_specs(self) -> list[InstrumentSpec]:
        """The instruments as the campaign configured them: the cassette manifest's, else the
        bundle's campaign row."""
        found = [InstrumentSpec(id=key, driver=value["driver"], measures=value["measures"],
                                resource=value.get("resource"), simulate=value.get("simulate"),
                                settings=dict(value.get("settings") or {}))
                 for key, value in (self.cassette.manifest.get("instruments") or {}).items()
                 if "driver" in value]
        row = self.folder / "campaign.json"
        if not found and row.is_file():
            config = json.loads(row.read_text()).get("config") or {}
            found = [InstrumentSpec(id=i["id"], driver=i["driver"], measures=i["measures"],
                                    resource=i.get("resource"), simulate=i.get("simulate"),
                                    settings=dict(i.get("settings") or {}))
                     for i in config.get("instruments") or []]
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
        for inst in acquired:
            rebuilt.samples.setdefault(inst.spec.id, SampleBatch.empty())
        return rebuilt


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
    try:
        driver = _instrument_class(spec.driver).from_config(
            spec.resource or f"recorded:{spec.id}", spec.settings, visa_library="@py")
    except Exception as exc:  # a driver plugin missing here, or settings it refuses
        raise NotReanalysable(f"instrument {spec.id} ({spec.driver}) cannot be rebuilt from "
                              f"its recorded settings: {exc}") from exc
    return Instrument(spec, RecordedSource(driver.info, getattr(driver, "settings", None)))


class Collector:
    """The document stream of one re-analysed run: keeps the metrics the analysis emits."""

    def __init__(self, run_uid: str) -> None:
        self.metrics: dict[str, Metric] = {}
        self.context = RunContext(DocumentStream([self._keep]), run_uid)

    def _keep(self, doc: Any) -> None:
        if isinstance(doc, Metric):
            self.metrics[doc.name] = doc
