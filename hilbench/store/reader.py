"""Store: the read side of the store, for reports, `hilbench results`, resume and notebooks.

The connection is read-only, so reading never disturbs a campaign writing the same store; it
sees every committed transaction and never waits for the writer (SQLite's WAL, PostgreSQL's
MVCC). A run or phase whose
stop document never arrived has status "incomplete" (still running, or its writer died).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from hilbench.store.backend import PgConnection, plain_rows
from hilbench.store.codec import from_json
from hilbench.store.engine import DbTarget, parse_db
from hilbench.store.errors import StoreDamaged, StoreError, damaged, store_error
from hilbench.store.listing import (
    INCOMPLETE,
    RunFilter,
    RunGroup,
    count_runs,
    install_functions,
    iter_runs,
    run_dict,
    run_groups,
)
from hilbench.store.opening import open_target

if TYPE_CHECKING:
    import numpy as np


def _read_errors(cls: type) -> type:
    """Every public method of ``cls`` (and what its iterators yield) raises a StoreError naming
    the store for what a damaged store makes SQLite or the decoding of a stored field raise:
    the store is a file someone handed in, and a bad page can turn up in any read."""

    def guarded(method: Any) -> Any:
        @functools.wraps(method)
        def read(self: Store, *args: Any, **kwargs: Any) -> Any:
            try:
                result = method(self, *args, **kwargs)
            except Exception as exc:
                raise _as_store_error(self.path, exc) from exc
            return _iterating(self.path, result) if isinstance(result, Iterator) else result

        return read

    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("_") and name != "close":
            setattr(cls, name, guarded(value))
    return cls


def _iterating(path: Any, items: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from items
    except Exception as exc:
        raise _as_store_error(path, exc) from exc


def _as_store_error(path: Any, exc: Exception) -> Exception:
    """``exc`` as a StoreError about the store at ``path``; a StoreError that already names
    it, or an error that is no reading's (a bug), as it is."""
    if isinstance(exc, sqlite3.Error):
        return store_error(path, "read the store", exc)
    if isinstance(exc, StoreDamaged) and str(path) not in str(exc):
        return damaged(path, "read the store", str(exc))  # a stored field that is no JSON
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, (ValueError, TypeError)):  # a field of a type its column does not hold
        return damaged(path, "read the store", f"a stored value is not what its column holds: "
                       f"{type(exc).__name__}: {str(exc)[:120]}")
    return exc


@_read_errors
class Store:
    """Read API over one store; every list is in the order the documents arrived. A damaged
    store is a StoreError naming it from any method (:func:`_read_errors`)."""

    def __init__(self, path: str | Path | DbTarget | None = None) -> None:
        self.target = parse_db(path)
        # The file for SQLite (as before); the target (its str() hides the password) otherwise.
        self.path: Path | DbTarget = self.target.path or self.target
        self._conn: sqlite3.Connection | PgConnection = open_target(self.target, "read")
        self._conn.row_factory = sqlite3.Row
        if isinstance(self._conn, sqlite3.Connection):
            install_functions(self._conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- campaigns -----------------------------------------------------------------------------

    def campaigns(self) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT c.*, (SELECT COUNT(*) FROM runs r WHERE r.campaign_uid = c.uid) AS n_runs"
            " FROM campaigns c ORDER BY wall_start, uid"
        )
        return [_campaign(row) for row in rows]

    def campaign(self, uid: str) -> dict[str, Any]:
        for campaign in self.campaigns():
            if campaign["uid"] == uid:
                return campaign
        raise StoreError(f"no campaign {uid} in {self.path}")

    def resolve_campaign(self, ref: str) -> tuple[str, str | None]:
        """The campaign named ``ref`` (the newest of that name), else the one whose uid is or
        uniquely starts with ``ref``; with a note for the user when the name is ambiguous."""
        rows = self._query(
            "SELECT uid FROM campaigns WHERE name = ? ORDER BY wall_start DESC, rowid DESC",
            (ref,),
        )
        if not rows:
            return self.resolve_campaign_uid(ref), None
        uid = rows[0]["uid"]
        note = None
        if len(rows) > 1:
            older = ", ".join(row["uid"][:8] for row in rows[1:6])
            note = (
                f"{len(rows)} campaigns are named {ref!r}; showing the newest, {uid[:8]} "
                f"(older: {older}{', …' if len(rows) > 6 else ''}; give a uid to pick one)"
            )
        return uid, note

    def completed_unit_keys(self, campaign_uid: str) -> set[str]:
        """Units of the campaign that already finished with success: skip them on resume."""
        rows = self._query(
            "SELECT DISTINCT unit_key FROM runs WHERE campaign_uid = ? AND exit_status = 'success'",
            (campaign_uid,),
        )
        return {row["unit_key"] for row in rows}

    # -- runs ----------------------------------------------------------------------------------

    def runs(self, campaign_uid: str | None = None) -> list[dict[str, Any]]:
        if campaign_uid is None:
            rows = self._query("SELECT * FROM runs ORDER BY wall_time, rowid")
        else:
            rows = self._query(
                "SELECT * FROM runs WHERE campaign_uid = ? ORDER BY wall_time, rowid",
                (campaign_uid,),
            )
        return [_run(row) for row in rows]

    def iter_runs(
        self, flt: RunFilter | None = None, *, limit: int | None = None, newest_first: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Runs matching ``flt``, each with its metrics, streamed (memory does not grow)."""
        try:
            yield from iter_runs(self._conn, flt or RunFilter(), limit=limit,
                                 newest_first=newest_first)
        except sqlite3.Error as exc:
            raise store_error(self.path, "read the store", exc) from exc

    def count_runs(self, flt: RunFilter | None = None) -> int:
        try:
            return count_runs(self._conn, flt or RunFilter())
        except sqlite3.Error as exc:
            raise store_error(self.path, "read the store", exc) from exc

    def run_groups(
        self, flt: RunFilter | None = None, limit: int | None = None
    ) -> tuple[int, list[RunGroup]]:
        """Replicate groups (runs differing only in seed and repetition), summarised in SQL:
        how many there are, and the newest ``limit`` of them."""
        try:
            return run_groups(self._conn, flt or RunFilter(), limit)
        except sqlite3.Error as exc:
            raise store_error(self.path, "read the store", exc) from exc

    def run(self, uid: str) -> dict[str, Any]:
        rows = self._query("SELECT * FROM runs WHERE uid = ?", (uid,))
        if not rows:
            raise StoreError(f"no run {uid} in {self.path}")
        return _run(rows[0])

    def find_run(self, prefix: str) -> dict[str, Any]:
        """The run whose uid is, or uniquely starts with, ``prefix``, as typed on a command line."""
        return self.run(self._resolve(prefix, "run", "SELECT uid FROM runs"))

    def resolve_campaign_uid(self, prefix: str) -> str:
        """The campaign uid that is, or uniquely starts with, ``prefix`` (begun or seen in runs)."""
        return self._resolve(
            prefix, "campaign", "SELECT uid FROM campaigns UNION SELECT campaign_uid FROM runs"
        )

    def phases(self, run_uid: str) -> list[dict[str, Any]]:
        self._require_run(run_uid)
        rows = self._query("SELECT * FROM phases WHERE run_uid = ? ORDER BY rowid", (run_uid,))
        return [
            {
                "uid": row["uid"],
                "run_uid": row["run_uid"],
                "name": row["name"],
                "t_start": row["t_start"],
                "t_stop": row["t_stop"],
                "duration_s": _duration(row["t_start"], row["t_stop"]),
                "status": row["exit_status"] or INCOMPLETE,
                "reason": row["reason"],
                "clock_offsets": from_json(row["clock_offsets"]),
            }
            for row in rows
        ]

    def events(
        self, run_uid: str, name: str | None = None, phase_uid: str | None = None
    ) -> list[dict[str, Any]]:
        self._require_run(run_uid)
        sql = "SELECT * FROM events WHERE run_uid = ?"
        args: list[Any] = [run_uid]
        if name is not None:
            sql += " AND name = ?"
            args.append(name)
        if phase_uid is not None:
            sql += " AND phase_uid = ?"
            args.append(phase_uid)
        rows = self._query(sql + " ORDER BY id", args)
        return [
            {
                "run_uid": row["run_uid"],
                "phase_uid": row["phase_uid"],
                "name": row["name"],
                "t": row["t"],
                "data": from_json(row["data"]),
            }
            for row in rows
        ]

    def event_counts(self, run_uid: str) -> dict[str, int]:
        self._require_run(run_uid)
        rows = self._query(
            "SELECT name, COUNT(*) AS n FROM events WHERE run_uid = ? GROUP BY name ORDER BY name",
            (run_uid,),
        )
        return {row["name"]: row["n"] for row in rows}

    def metrics(self, run_uid: str | None = None) -> list[dict[str, Any]]:
        if run_uid is None:
            rows = self._query("SELECT * FROM metrics ORDER BY id")
        else:
            self._require_run(run_uid)
            rows = self._query("SELECT * FROM metrics WHERE run_uid = ? ORDER BY id", (run_uid,))
        return [
            {
                "run_uid": row["run_uid"],
                "name": row["name"],
                "value": row["value"],
                "unit": row["unit"],
                "uncertainty": row["uncertainty"],
                "meta": from_json(row["meta"]),
            }
            for row in rows
        ]

    def campaign_runs(self, campaign_uid: str) -> list[dict[str, Any]]:
        """The campaign's runs as :meth:`runs` gives them, read for summaries of many runs:
        runs with the same ``agents`` JSON (the handshake) share one decoded dict, so treat
        it as read-only."""
        rows = self._conn.execute(
            "SELECT uid, campaign_uid, unit_key, procedure, params, agents, t_start, t_stop,"
            " wall_time, hilbench_version, simulated, simulation, exit_status, reason"
            " FROM runs WHERE campaign_uid = ? ORDER BY wall_time, rowid",
            (campaign_uid,),
        )
        runs = []
        handshakes: dict[str, Any] = {}  # the agents' JSON is usually the same in every run
        for (uid, campaign, key, procedure, params, agents, t_start, t_stop, wall, version,
             simulated, simulation, status, reason) in _tuples(rows):
            if agents not in handshakes:
                handshakes[agents] = from_json(agents)
            runs.append({
                "uid": uid, "campaign_uid": campaign, "unit_key": key, "procedure": procedure,
                "params": from_json(params), "agents": handshakes[agents], "t_start": t_start,
                "t_stop": t_stop, "duration_s": _duration(t_start, t_stop), "wall_time": wall,
                "hilbench_version": version, "simulated": bool(simulated),
                "simulation": simulation, "status": status or INCOMPLETE, "reason": reason})
        return runs

    def campaign_metrics(self, campaign_uid: str) -> dict[str, dict[str, MetricRow]]:
        """Every metric of a campaign's runs in one query: run uid -> name -> metric. ``meta``
        is decoded on first access (a summary of 10 000 runs reads few of them)."""
        rows = self._conn.execute(
            "SELECT m.run_uid, m.name, m.value, m.unit, m.uncertainty, m.meta FROM metrics m"
            " JOIN runs r ON r.uid = m.run_uid WHERE r.campaign_uid = ? ORDER BY m.id",
            (campaign_uid,),
        )
        out: dict[str, dict[str, Any]] = {}
        for row in _tuples(rows):
            by_run = out.get(row[0])
            if by_run is None:
                by_run = out[row[0]] = {}
            by_run[row[1]] = MetricRow(row)
        return out

    # -- samples -------------------------------------------------------------------------------

    def sample_sources(self, run_uid: str) -> list[dict[str, Any]]:
        """One summary per (source, unit): sample and batch counts and the time span covered."""
        self._require_run(run_uid)
        rows = self._query(
            "SELECT source, unit, SUM(n) AS n, COUNT(*) AS batches, MIN(t_first) AS t_first,"
            " MAX(t_last) AS t_last FROM samples WHERE run_uid = ?"
            " GROUP BY source, unit ORDER BY MIN(id)",
            (run_uid,),
        )
        return [dict(row) for row in rows]

    def samples(
        self, run_uid: str, source: str | None = None, phase_uid: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """All samples of one source as ``(t, values)`` float64 arrays, in stream order.

        ``source`` may be omitted when the run has exactly one. The arrays are filled in place
        batch by batch, so peak memory is the result plus one batch.
        """
        import numpy as np  # only here: listing runs does not need it

        from hilbench.store.sample_blobs import stamps_from_blob, values_from_blob

        source = self._pick_source(run_uid, source)
        where, args = _sample_filter(run_uid, source, phase_uid)
        # One read transaction: the count and the batches come from the same snapshot even while
        # a writer appends to this run.
        self._conn.execute("BEGIN")
        try:
            total = self._conn.execute(f"SELECT COALESCE(SUM(n), 0) FROM samples {where}", args)
            n_total = int(total.fetchone()[0])
            t = np.empty(n_total, dtype=np.float64)
            values = np.empty(n_total, dtype=np.float64)
            filled = 0
            batches = self._conn.execute(
                f"SELECT n, t_first, t_last, t, vals FROM samples {where} ORDER BY id", args
            )
            for row in batches:
                n = row["n"]
                t[filled : filled + n] = stamps_from_blob(row["t"], n, row["t_first"],
                                                          row["t_last"])
                values[filled : filled + n] = values_from_blob(row["vals"], n)
                filled += n
        finally:
            self._conn.execute("COMMIT")
        return t, values

    def sample_batches(
        self, run_uid: str, source: str | None = None, phase_uid: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Stored batches one at a time (read-only arrays), for streams too long to hold at once."""
        from hilbench.store.sample_blobs import stamps_from_blob, values_from_blob  # numpy

        source = self._pick_source(run_uid, source)
        where, args = _sample_filter(run_uid, source, phase_uid)
        cursor = self._conn.execute(f"SELECT * FROM samples {where} ORDER BY id", args)
        for row in cursor:
            yield {
                "phase_uid": row["phase_uid"],
                "source": row["source"],
                "unit": row["unit"],
                "t": stamps_from_blob(row["t"], row["n"], row["t_first"], row["t_last"]),
                "values": values_from_blob(row["vals"], row["n"]),
                "meta": from_json(row["meta"]),
            }

    # -- internals -----------------------------------------------------------------------------

    def _query(self, sql: str, args: Any = ()) -> list[sqlite3.Row]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise store_error(self.path, "read the store", exc) from exc

    def _require_run(self, run_uid: str) -> None:
        if not self._query("SELECT 1 FROM runs WHERE uid = ?", (run_uid,)):
            raise StoreError(f"no run {run_uid} in {self.path}")

    def _resolve(self, prefix: str, what: str, uids_sql: str) -> str:
        if not prefix:
            raise StoreError(f"empty {what} id")
        rows = self._query(
            f"SELECT uid FROM ({uids_sql}) AS u WHERE substr(uid, 1, ?) = ? ORDER BY uid LIMIT 6",
            (len(prefix), prefix),
        )
        uids = [row["uid"] for row in rows]
        if prefix in uids:
            return prefix
        if not uids:
            raise StoreError(f"no {what} matching {prefix!r} in {self.path}")
        if len(uids) > 1:
            shown = ", ".join(uid[:12] for uid in uids[:5])
            raise StoreError(f"{what} id {prefix!r} is ambiguous in {self.path}: {shown}, …")
        return uids[0]

    def _pick_source(self, run_uid: str, source: str | None) -> str:
        sources = self.sample_sources(run_uid)
        names = sorted({s["source"] for s in sources})
        if source is None:
            if len(names) == 1:
                return names[0]
            raise StoreError(
                f"run {run_uid} has samples from {len(names)} sources "
                f"({', '.join(names) or 'none'}); name one"
            )
        units = {s["unit"] for s in sources if s["source"] == source}
        if not units:
            raise StoreError(
                f"run {run_uid} has no samples from source {source!r} "
                f"(sources: {', '.join(names) or 'none'})"
            )
        if len(units) > 1:
            raise StoreError(
                f"source {source!r} of run {run_uid} mixes units {sorted(units)}; "
                "its values cannot be returned as one array"
            )
        return source


def _sample_filter(run_uid: str, source: str, phase_uid: str | None) -> tuple[str, list[Any]]:
    where = "WHERE run_uid = ? AND source = ?"
    args: list[Any] = [run_uid, source]
    if phase_uid is not None:
        where += " AND phase_uid = ?"
        args.append(phase_uid)
    return where, args


def _duration(t_start: float, t_stop: float | None) -> float | None:
    return None if t_stop is None else t_stop - t_start


def _run(row: sqlite3.Row) -> dict[str, Any]:
    return run_dict(row)


def _campaign(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "uid": row["uid"],
        "name": row["name"],
        "config": from_json(row["config"]),
        "wall_start": row["wall_start"],
        "wall_stop": row["wall_stop"],
        "status": row["status"] or INCOMPLETE,
        "reason": row["reason"],
        "resumes": row["resumes"],
        "n_runs": row["n_runs"],
    }


def _tuples(cursor: Any) -> Any:
    """The cursor yielding plain tuples (much cheaper than the connection's named rows)."""
    return plain_rows(cursor)


class MetricRow:
    """One stored metric, read like the dicts of :meth:`Store.metrics` (``m["value"]``,
    ``m.get("meta")``) but cheap to make by the hundred thousand: ``meta`` JSON is decoded
    when first read."""

    __slots__ = ("_meta", "name", "run_uid", "uncertainty", "unit", "value")
    KEYS = ("run_uid", "name", "value", "unit", "uncertainty", "meta")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.run_uid, self.name, self.value, self.unit, self.uncertainty, self._meta = row

    @property
    def meta(self) -> dict[str, Any]:
        if isinstance(self._meta, str):
            self._meta = from_json(self._meta)
        return self._meta

    def __getitem__(self, key: str) -> Any:
        if key not in self.KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.KEYS else default

    def __contains__(self, key: object) -> bool:
        return key in self.KEYS

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.KEYS}
