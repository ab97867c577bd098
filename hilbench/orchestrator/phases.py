"""A run in progress: emit its documents, and bracket each phase with clock-offset probes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hilbench.clock import now
from hilbench.documents import Document, DocumentStream, PhaseStart, PhaseStop, new_uid
from hilbench.orchestrator.client import AgentClient


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
    def phase(self, name: str, clients: list[AgentClient]) -> Iterator[str]:
        """Measure every involved agent's clock offset, then open the phase; close it on exit.

        A phase left by an exception is stopped with status "fail" and the error as its reason.
        """
        offsets = {c.name: c.clock_offset().to_dict() for c in clients}
        uid = new_uid()
        self.emit(PhaseStart(uid, self.run_uid, name, now(), offsets))
        try:
            yield uid
        except BaseException as exc:
            self.emit(PhaseStop(uid, self.run_uid, now(), "fail", f"{type(exc).__name__}: {exc}"))
            raise
        self.emit(PhaseStop(uid, self.run_uid, now(), "success"))
