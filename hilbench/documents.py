"""Run documents: the one stream through which a run reaches the store, the display and recorders.

A run is an ordered stream of documents linked by uid (bluesky event-model style):
``RunStart`` → (``PhaseStart`` → ``Event``/``Samples``/``Metric`` … → ``PhaseStop``)* → ``RunStop``.
Every timestamp ``t`` is in seconds on the orchestrator's monotonic clock
(:func:`hilbench.clock.now`); ``RunStart.wall_time`` anchors that timeline to UTC.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # `hilbench results` reads the store without numpy (0.08 s of its start)
    import numpy as np

# unverified: the run's timing could not be verified against its link (a loaded host, say);
# it is no answer, is tried again and counted, never averaged and never a failure.
ExitStatus = Literal["success", "fail", "abort", "unverified"]


def new_uid() -> str:
    """A fresh identifier for a run, phase or campaign."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class RunStart:
    uid: str
    campaign_uid: str
    unit_key: str  # stable key of the campaign unit, used to resume a campaign
    procedure: str  # e.g. "qubo.fixed_timeout"
    params: dict[str, Any]
    agents: dict[str, dict[str, Any]]  # agent id -> handshake info
    t: float
    wall_time: float  # UTC seconds at ``t``
    hilbench_version: str
    # True when a driver or instrument of the run is simulated; ``simulation`` says what is.
    simulated: bool = False
    simulation: str = ""
    kind: str = field(default="run_start", init=False)


@dataclass(frozen=True)
class PhaseStart:
    uid: str
    run_uid: str
    name: str  # e.g. "idle", "active", "solve"
    t: float
    # agent id -> {"offset_s", "uncertainty_s", "rtt_s", "probes"}: agent clock minus
    # orchestrator clock; with "link": the echoes measuring the link before a timed phase
    clock_offsets: dict[str, dict[str, Any]]
    kind: str = field(default="phase_start", init=False)


@dataclass(frozen=True)
class Event:
    run_uid: str
    phase_uid: str | None
    name: str
    t: float
    data: dict[str, Any]
    kind: str = field(default="event", init=False)


@dataclass(frozen=True)
class Samples:
    """A batch of power samples from one source, already on the orchestrator timeline."""

    run_uid: str
    phase_uid: str | None
    source: str
    unit: Literal["W", "A", "V"]
    t: np.ndarray  # float64 seconds, orchestrator clock
    values: np.ndarray  # float64
    meta: dict[str, Any] = field(default_factory=dict)
    kind: str = field(default="samples", init=False)


@dataclass(frozen=True)
class Metric:
    run_uid: str
    name: str
    value: float | None
    unit: str
    uncertainty: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    kind: str = field(default="metric", init=False)


def flag(value: bool) -> float:
    """A yes/no figure as the store keeps it (every stored figure is a number: 1.0 yes, 0.0
    no); the stores and cassettes hold these, so they keep replaying. Read back with
    :func:`is_set`."""
    return 1.0 if value else 0.0


def is_set(stored: float | None) -> bool | None:
    """A stored yes/no figure as a boolean (None: not stored, or stored without a value)."""
    return None if stored is None else stored == 1.0


@dataclass(frozen=True)
class PhaseStop:
    uid: str
    run_uid: str
    t: float
    status: ExitStatus
    reason: str = ""
    kind: str = field(default="phase_stop", init=False)


@dataclass(frozen=True)
class RunStop:
    run_uid: str
    t: float
    exit_status: ExitStatus
    reason: str = ""
    kind: str = field(default="run_stop", init=False)


Document = RunStart | PhaseStart | Event | Samples | Metric | PhaseStop | RunStop


class DocumentConsumer(Protocol):
    """Anything that takes the document stream: the store, the progress view, a recorder."""

    def __call__(self, doc: Document) -> None: ...


class DocumentRouter:
    """Dispatches each document to the method named after its kind; unknown kinds are ignored.

    Subclasses implement only the methods they care about (``run_start``, ``phase_start``,
    ``event``, ``samples``, ``metric``, ``phase_stop``, ``run_stop``).
    """

    def __call__(self, doc: Document) -> None:
        handler = getattr(self, doc.kind, None)
        if handler is not None:
            handler(doc)


class DocumentStream:
    """Fans each document out to every consumer, in order."""

    def __init__(self, consumers: list[DocumentConsumer] | None = None) -> None:
        self.consumers: list[DocumentConsumer] = list(consumers or [])

    def subscribe(self, consumer: DocumentConsumer) -> None:
        self.consumers.append(consumer)

    def emit(self, doc: Document) -> None:
        for consumer in self.consumers:
            consumer(doc)
