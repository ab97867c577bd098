"""A run in progress: emit its documents, and bracket each phase with clock-offset probes (and,
for a phase that times a request, echoes measuring what the link adds to it) and the
acquisition of every instrument that measures the phase."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from hilbench.clock import now
from hilbench.documents import Document, DocumentStream, PhaseStart, PhaseStop, new_uid
from hilbench.orchestrator.instruments import Instrument, PhaseAcquisition
from hilbench.orchestrator.interrupt import raise_if_interrupted
from hilbench.orchestrator.reference_link import reference
from hilbench.power.align import IntervalEstimate
from hilbench.power.markers import MarkerEdges
from hilbench.power.source import SampleBatch
from hilbench.power.timing import drift_residual_s
from hilbench.wire.link import ClockOffset
from hilbench.wire.link_probe import Echo, LinkBound


class Clocked(Protocol):
    """What a phase needs of each agent it involves (a device handle or a client)."""

    name: str

    def clock_offset(self, probes: int = 8) -> ClockOffset: ...

    def link_bound(self, echo: Echo) -> LinkBound | None: ...


@dataclass
class Phase:
    """An open phase: its uid, the agents' clock offsets, and its instruments' samples."""

    uid: str
    name: str
    offsets: dict[str, ClockOffset]
    acquisitions: list[PhaseAcquisition] = field(default_factory=list)
    samples: dict[str, SampleBatch] = field(default_factory=dict)  # filled when the phase ends
    # instrument id -> how well this phase's acquisition start is known (s), when it says
    start_uncertainty_s: dict[str, float | None] = field(default_factory=dict)
    # instrument id -> its real sample interval as estimated at stop (readings restamped)
    interval_estimates: dict[str, IntervalEstimate] = field(default_factory=dict)
    # instrument id -> the marker edges it recorded in its own stream (marker sources only)
    markers: dict[str, list[MarkerEdges]] = field(default_factory=dict)

    def poll(self) -> None:
        """Drain instruments; call this whenever the orchestrator waits."""
        raise_if_interrupted()
        for acq in self.acquisitions:
            acq.poll()

    def drift_residual_s(self, instrument_id: str, t: float) -> float:
        """What the instrument's interval estimate leaves open at orchestrator time ``t``."""
        return drift_residual_s(self.interval_estimates.get(instrument_id), t)

    def to_orchestrator_time(self, agent: str, t_agent: float) -> float:
        """Map a time on the agent's clock onto the orchestrator timeline."""
        return t_agent - self.offsets[agent].offset_s


def link_bounds(clients: Sequence[Clocked], echo: Echo) -> list[LinkBound | None]:
    """Each agent's link bound for requests shaped like ``echo``, held to the echoes of the
    orchestrator's own reference responder, which no agent can slow (:mod:`.reference_link`).
    The reference is echoed first, and only when some link is: an agent's echoes stay the
    last thing before its phase, as its request will find it (a pause of the link between
    them, while the reference was echoed, left an honest agent's 0.2 s QUBO replies 0.16 ms
    past their bound, run after run)."""
    ref = (reference().bound(echo) if any(getattr(c, "probes_link", False) for c in clients)
           else None)
    links = [c.link_bound(echo) for c in clients]
    return [None if link is None else link.against(ref, getattr(c, "link_budget_s", 0.0))
            for c, link in zip(clients, links, strict=True)]


class RunContext:
    """Hands procedures what they need to emit one run's documents."""

    def __init__(self, stream: DocumentStream, run_uid: str) -> None:
        self.stream = stream
        self.run_uid = run_uid

    @staticmethod
    def now() -> float:
        return now()

    def emit(self, doc: Document) -> None:
        self.stream.emit(doc)

    @contextmanager
    def phase(
        self, name: str, clients: Sequence[Clocked], instruments: Sequence[Instrument] = (),
        echo: Echo | None = None,
    ) -> Iterator[Phase]:
        """Measure every involved agent's clock offset (and with ``echo``, the shape of the
        request the phase times, what the link adds to it: :mod:`.link_probe`), open the
        phase, start the instruments; on exit stop them (a health problem raises
        InstrumentFault) and close the phase.

        A phase left by an exception is stopped with status "fail" and the error as its reason.
        """
        raise_if_interrupted()
        offsets = {c.name: c.clock_offset() for c in clients}
        if echo is not None:
            for c, link in zip(clients, link_bounds(clients, echo), strict=True):
                offsets[c.name] = dataclasses.replace(offsets[c.name], link=link)
        phase = Phase(new_uid(), name, offsets)
        self.emit(
            PhaseStart(
                phase.uid, self.run_uid, name, now(), {k: v.to_dict() for k, v in offsets.items()}
            )
        )
        try:
            for inst in instruments:
                acq = PhaseAcquisition(inst, self.emit, self.run_uid, phase.uid)
                acq.start()
                phase.acquisitions.append(acq)
            yield phase
            for acq in phase.acquisitions:
                phase.samples[acq.instrument.spec.id] = acq.stop()
                phase.start_uncertainty_s[acq.instrument.spec.id] = acq.t0_uncertainty_s
                if acq.interval_estimate is not None:
                    phase.interval_estimates[acq.instrument.spec.id] = acq.interval_estimate
                if acq.markers is not None:
                    phase.markers[acq.instrument.spec.id] = acq.markers
        except BaseException as exc:
            for acq in phase.acquisitions:
                if acq.instrument.spec.id not in phase.samples:
                    # Already failing: the first error is the one to report.
                    with contextlib.suppress(Exception):
                        acq.instrument.source.stop()
            self.emit(
                PhaseStop(phase.uid, self.run_uid, now(), "fail", f"{type(exc).__name__}: {exc}")
            )
            raise
        self.emit(PhaseStop(phase.uid, self.run_uid, now(), "success"))
