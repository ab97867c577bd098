"""StoreWriter: the document consumer that commits runs to the store (SQLite or PostgreSQL).

Runs reach the store only as documents. Each document is written when it arrives; the
transaction is committed at every run start, phase start and run stop, and at least every
``commit_interval_s`` in between (events, sample batches, phase stops and metrics stream in),
so a killed process loses at most that last interval of an unfinished run, and never a finished
one. A run whose ``RunStop`` never arrived reads back as "incomplete" (and a resume marks it
aborted: its start was committed). Committing each phase stop and metric on its own made a 1 ms
QUBO unit wait for 20 synchronous commits instead of 4.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import numpy as np

from hilbench.clock import now
from hilbench.documents import (
    Document,
    DocumentRouter,
    Event,
    ExitStatus,
    Metric,
    PhaseStart,
    PhaseStop,
    RunStart,
    RunStop,
    Samples,
)
from hilbench.store.backend import PgConnection
from hilbench.store.codec import finite_or_none, to_json
from hilbench.store.engine import DbTarget, parse_db
from hilbench.store.errors import StoreError, StoreFault, store_error
from hilbench.store.groups import replicate_key
from hilbench.store.opening import open_target
from hilbench.store.sample_blobs import stamps_blob, values_blob

log = logging.getLogger(__name__)

EXIT_STATUSES: tuple[ExitStatus, ...] = ("success", "fail", "abort")
# A run may also end unverified (its timing could not be verified; phases and campaigns not).
RUN_STATUSES: tuple[ExitStatus, ...] = (*EXIT_STATUSES, "unverified")


@dataclass
class _OpenRun:
    phases: set[str] = field(default_factory=set)  # every phase of the run
    open_phases: set[str] = field(default_factory=set)  # started and not yet stopped
    metrics: set[str] = field(default_factory=set)


class StoreWriter(DocumentRouter):
    """Subscribe to a DocumentStream; writes each run's documents as they arrive.

    Refuses (``StoreError``) anything that would make the record ambiguous: a run uid already
    stored, a unit already completed with success in its campaign, a document for a run that is
    not open, a phase stopped twice, a metric stored twice for one run.
    """

    def __init__(
        self,
        path: str | Path | DbTarget | None = None,
        *,
        commit_interval_s: float = 0.5,
        max_pending: int = 512,
    ) -> None:
        self.target = parse_db(path)
        # The file for SQLite (as before); the target (its str() hides the password) otherwise.
        self.path: Path | DbTarget = self.target.path or self.target
        self.commit_interval_s = commit_interval_s
        self.max_pending = max_pending
        self._conn: sqlite3.Connection | PgConnection | None = open_target(self.target, "write")
        self._lock = threading.Lock()  # the stream may be emitted from more than one thread
        self._runs: dict[str, _OpenRun] = {}
        self._pending = 0
        self._last_commit = now()

    # -- lifecycle -----------------------------------------------------------------------------

    def __call__(self, doc: Document) -> None:
        run_uid = getattr(doc, "run_uid", getattr(doc, "uid", "?"))
        with self._lock, self._sqlite(f"store {doc.kind} of run {run_uid}"):
            super().__call__(doc)

    def flush(self) -> None:
        """Commit whatever has been written so far."""
        with self._lock, self._sqlite("commit"):
            self._commit()

    def close(self) -> None:
        """Commit and close; runs still open stay "incomplete" in the store. A commit that
        fails here (the disk filled up) is logged, not raised: closing runs while another
        error is being reported, and the next run of the campaign marks what stayed open."""
        with self._lock:
            if self._conn is None:
                return
            try:
                with self._sqlite("commit before closing"):
                    self._commit()
            except StoreError as exc:
                log.error("%s", exc)
            if self._runs:
                log.warning(
                    "store %s closed with %d run(s) not stopped; they read back as incomplete: %s",
                    self.path,
                    len(self._runs),
                    ", ".join(sorted(self._runs)),
                )
            self._conn.close()
            self._conn = None

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- campaigns -----------------------------------------------------------------------------

    def begin_campaign(self, uid: str, name: str, config: dict) -> None:
        """Record a campaign; beginning a known uid again is a resume (config is replaced)."""
        config_json = to_json(config, f"config of campaign {uid}")
        with self._lock, self._sqlite(f"begin campaign {uid}"):
            conn = self._connection()
            self._begin()
            exists = conn.execute("SELECT 1 FROM campaigns WHERE uid = ?", (uid,)).fetchone()
            if exists:
                conn.execute(
                    "UPDATE campaigns SET name = ?, config = ?, status = NULL, wall_stop = NULL,"
                    " reason = '', resumes = resumes + 1 WHERE uid = ?",
                    (name, config_json, uid),
                )
            else:
                conn.execute(
                    "INSERT INTO campaigns (uid, name, config, wall_start) VALUES (?, ?, ?, ?)",
                    (uid, name, config_json, time.time()),
                )
            self._commit()

    def end_campaign(self, uid: str, status: ExitStatus, reason: str = "") -> None:
        """Give the campaign its status and, unless it succeeded, the reason it stopped."""
        _check_status(status, f"campaign {uid}")
        with self._lock, self._sqlite(f"end campaign {uid}"):
            conn = self._connection()
            if not conn.execute("SELECT 1 FROM campaigns WHERE uid = ?", (uid,)).fetchone():
                raise StoreError(f"{self.path}: cannot end campaign {uid}: it was never begun")
            self._begin()
            conn.execute(
                "UPDATE campaigns SET status = ?, wall_stop = ?, reason = ? WHERE uid = ?",
                (status, time.time(), reason, uid),
            )
            self._commit()

    def abort_unfinished_runs(self, campaign_uid: str, reason: str) -> list[str]:
        """Give every run of the campaign that has no status (its writer died before the run
        stopped) the status "abort" and ``reason``; return their uids. Call only when no other
        process writes this campaign (a resume holds the campaign's lock)."""
        with self._lock, self._sqlite(f"mark the unfinished runs of campaign {campaign_uid}"):
            conn = self._connection()
            self._begin()
            uids = [
                row[0]
                for row in conn.execute(
                    "SELECT uid FROM runs WHERE campaign_uid = ? AND exit_status IS NULL"
                    " ORDER BY wall_time, rowid",
                    (campaign_uid,),
                )
                if row[0] not in self._runs
            ]
            for uid in uids:
                conn.execute(
                    "UPDATE runs SET exit_status = 'abort', reason = ? WHERE uid = ?",
                    (reason, uid),
                )
                conn.execute(
                    "UPDATE phases SET exit_status = 'abort', reason = ?"
                    " WHERE run_uid = ? AND exit_status IS NULL",
                    (reason, uid),
                )
            self._commit()
            return uids

    # -- documents -----------------------------------------------------------------------------

    def run_start(self, doc: RunStart) -> None:
        conn = self._connection()
        if (
            doc.uid in self._runs
            or conn.execute("SELECT 1 FROM runs WHERE uid = ?", (doc.uid,)).fetchone()
        ):
            raise StoreError(f"{self.path}: run {doc.uid} is already in the store")
        if doc.campaign_uid and doc.unit_key:
            done = conn.execute(
                "SELECT uid FROM runs WHERE campaign_uid = ? AND unit_key = ?"
                " AND exit_status = 'success' LIMIT 1",
                (doc.campaign_uid, doc.unit_key),
            ).fetchone()
            if done:
                raise StoreError(
                    f"{self.path}: unit {doc.unit_key!r} of campaign {doc.campaign_uid} already "
                    f"completed with success in run {done[0]}; a result is stored only once"
                )
        params = to_json(doc.params, f"params of run {doc.uid}")
        agents = to_json(doc.agents, f"agents of run {doc.uid}")
        self._begin()
        conn.execute(
            "INSERT INTO runs (uid, campaign_uid, unit_key, procedure, params, agents, t_start,"
            " wall_time, hilbench_version, simulated, simulation, unit_group)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc.uid,
                doc.campaign_uid,
                doc.unit_key,
                doc.procedure,
                params,
                agents,
                doc.t,
                doc.wall_time,
                doc.hilbench_version,
                int(bool(doc.simulated)),
                doc.simulation,
                replicate_key(doc.unit_key),
            ),
        )
        self._runs[doc.uid] = _OpenRun()
        self._commit()

    def phase_start(self, doc: PhaseStart) -> None:
        run = self._open_run(doc.run_uid, doc.kind)
        if doc.uid in run.phases:
            raise StoreError(f"{self.path}: phase {doc.uid} of run {doc.run_uid} started twice")
        offsets = to_json(doc.clock_offsets, f"clock offsets of phase {doc.name!r}")
        self._begin()
        self._connection().execute(
            "INSERT INTO phases (uid, run_uid, name, t_start, clock_offsets)"
            " VALUES (?, ?, ?, ?, ?)",
            (doc.uid, doc.run_uid, doc.name, doc.t, offsets),
        )
        run.phases.add(doc.uid)
        run.open_phases.add(doc.uid)
        self._commit()  # a reader sees which phase a run is in (and the one before it whole)

    def event(self, doc: Event) -> None:
        run = self._open_run(doc.run_uid, doc.kind)
        self._check_phase(run, doc.phase_uid, doc.run_uid, f"event {doc.name!r}")
        data = to_json(doc.data, f"data of event {doc.name!r} in run {doc.run_uid}")
        self._begin()
        self._connection().execute(
            "INSERT INTO events (run_uid, phase_uid, name, t, data) VALUES (?, ?, ?, ?, ?)",
            (doc.run_uid, doc.phase_uid, doc.name, doc.t, data),
        )
        self._written()

    def samples(self, doc: Samples) -> None:
        run = self._open_run(doc.run_uid, doc.kind)
        what = f"samples from {doc.source!r} in run {doc.run_uid}"
        self._check_phase(run, doc.phase_uid, doc.run_uid, what)
        t = np.asarray(doc.t, dtype=np.float64)
        values = np.asarray(doc.values)
        if values.dtype != np.float32:  # float32 stays as it came (four bytes a sample)
            values = values.astype(np.float64)
        if t.ndim != 1 or t.shape != values.shape:
            raise StoreError(
                f"{self.path}: {what}: t and values must be 1-D of equal length, "
                f"got shapes {t.shape} and {values.shape}"
            )
        n = int(t.size)
        meta = to_json(doc.meta, f"meta of {what}")
        self._begin()
        self._connection().execute(
            "INSERT INTO samples (run_uid, phase_uid, source, unit, n, t_first, t_last, t, vals,"
            " meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc.run_uid,
                doc.phase_uid,
                doc.source,
                doc.unit,
                n,
                float(t[0]) if n else None,
                float(t[-1]) if n else None,
                stamps_blob(t),
                values_blob(values),
                meta,
            ),
        )
        self._written()

    def metric(self, doc: Metric) -> None:
        run = self._open_run(doc.run_uid, doc.kind)
        if doc.name in run.metrics:
            raise StoreError(
                f"{self.path}: metric {doc.name!r} of run {doc.run_uid} was already stored; "
                "a result is stored only once"
            )
        meta = to_json(doc.meta, f"meta of metric {doc.name!r} in run {doc.run_uid}")
        self._begin()
        self._connection().execute(
            "INSERT INTO metrics (run_uid, name, value, unit, uncertainty, meta)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                doc.run_uid,
                doc.name,
                finite_or_none(doc.value),
                doc.unit,
                finite_or_none(doc.uncertainty),
                meta,
            ),
        )
        run.metrics.add(doc.name)
        self._written()

    def phase_stop(self, doc: PhaseStop) -> None:
        run = self._open_run(doc.run_uid, doc.kind)
        _check_status(doc.status, f"phase {doc.uid} of run {doc.run_uid}")
        if doc.uid not in run.open_phases:
            state = "already stopped" if doc.uid in run.phases else "never started"
            raise StoreError(
                f"{self.path}: cannot stop phase {doc.uid} of run {doc.run_uid}: {state}"
            )
        self._begin()
        self._connection().execute(
            "UPDATE phases SET t_stop = ?, exit_status = ?, reason = ? WHERE uid = ?",
            (doc.t, doc.status, doc.reason, doc.uid),
        )
        run.open_phases.discard(doc.uid)
        self._written()

    def run_stop(self, doc: RunStop) -> None:
        self._open_run(doc.run_uid, doc.kind)
        _check_status(doc.exit_status, f"run {doc.run_uid}", RUN_STATUSES)
        self._begin()
        self._connection().execute(
            "UPDATE runs SET t_stop = ?, exit_status = ?, reason = ? WHERE uid = ?",
            (doc.t, doc.exit_status, doc.reason, doc.run_uid),
        )
        self._commit()
        del self._runs[doc.run_uid]

    # -- internals -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _sqlite(self, what: str) -> Iterator[None]:
        """Turn a SQLite error into a StoreError that says what failed and why; after a fault
        (disk full, I/O error) roll back what this transaction had not committed, so the
        connection is usable again when space returns."""
        try:
            yield
        except sqlite3.Error as exc:
            error = store_error(self.path, what, exc)
            if isinstance(error, StoreFault) and self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                self._pending = 0
            raise error from exc

    def _connection(self) -> sqlite3.Connection | PgConnection:
        if self._conn is None:
            raise StoreError(f"{self.path}: the store writer is closed")
        return self._conn

    def _open_run(self, run_uid: str, kind: str) -> _OpenRun:
        run = self._runs.get(run_uid)
        if run is None:
            raise StoreError(
                f"{self.path}: {kind} for run {run_uid}, which is not open in this writer "
                "(no run_start received, or the run already stopped)"
            )
        return run

    def _check_phase(self, run: _OpenRun, phase_uid: str | None, run_uid: str, what: str) -> None:
        if phase_uid is not None and phase_uid not in run.phases:
            raise StoreError(
                f"{self.path}: {what} names phase {phase_uid}, which run {run_uid} never started"
            )

    def _begin(self) -> None:
        conn = self._connection()
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")

    def _written(self) -> None:
        """Count a streamed document; commit when enough time or documents have piled up."""
        self._pending += 1
        if self._pending >= self.max_pending or now() - self._last_commit >= self.commit_interval_s:
            self._commit()

    def _commit(self) -> None:
        conn = self._connection()
        if conn.in_transaction:
            conn.execute("COMMIT")
        self._pending = 0
        self._last_commit = now()


def _check_status(status: str, what: str,
                  allowed: tuple[ExitStatus, ...] = EXIT_STATUSES) -> None:
    if status not in allowed:
        raise StoreError(f"{what}: exit status {status!r} is not one of {', '.join(allowed)}")
