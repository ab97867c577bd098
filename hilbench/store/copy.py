"""Copying runs between stores of either back end, idempotent by run id, and checking a copy.

A run is copied whole (its row, phases, events, sample batches and metrics, in stream order)
with the campaign it belongs to. A run already in the destination is compared with the
source: identical, it is skipped (copying again is harmless, which is what lets a bench push
its finished runs after every outage); different, it is an error naming the run and what
differs, and nothing of that run is written. :func:`compare_runs` checks a finished copy run
by run, sample by sample and metric by metric.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hilbench.store.engine import DbTarget, parse_db
from hilbench.store.errors import StoreError, store_error
from hilbench.store.opening import open_target

RUN_COLUMNS = ("uid", "campaign_uid", "unit_key", "procedure", "params", "agents", "t_start",
               "wall_time", "hilbench_version", "t_stop", "exit_status", "reason", "simulated",
               "simulation", "unit_group")
CAMPAIGN_COLUMNS = ("uid", "name", "config", "wall_start", "wall_stop", "status", "resumes",
                    "reason")
# Child tables in the order they are written; each read in stream order (ids are not copied:
# the destination numbers its rows, in the same order).
CHILDREN: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("phases", ("uid", "run_uid", "name", "t_start", "clock_offsets", "t_stop", "exit_status",
                "reason"), "rowid"),
    ("events", ("run_uid", "phase_uid", "name", "t", "data"), "id"),
    ("samples", ("run_uid", "phase_uid", "source", "unit", "n", "t_first", "t_last", "t", "vals",
                 "meta"), "id"),
    ("metrics", ("run_uid", "name", "value", "unit", "uncertainty", "meta"), "id"),
)
COMMIT_EVERY = 200  # runs per destination transaction


class RunConflict(StoreError):
    """A run of the same id is in the destination with different content."""


@dataclass
class CopyReport:
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already there, identical
    campaigns: int = 0  # campaign rows written or brought up to date


@dataclass
class RunRecord:
    """Everything stored about one run, as comparable tuples (ids left out)."""

    run: tuple[Any, ...]
    children: dict[str, list[tuple[Any, ...]]]

    def counts(self) -> dict[str, int]:
        out = {name: len(rows) for name, rows in self.children.items()}
        n_index = CHILDREN[2][1].index("n")
        out["samples"] = sum(row[n_index] for row in self.children["samples"])
        out["sample batches"] = len(self.children["samples"])
        return out


def read_run(conn: Any, uid: str) -> RunRecord | None:
    row = conn.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE uid = ?",
                       (uid,)).fetchone()
    if row is None:
        return None
    children = {
        table: [_plain(r) for r in conn.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE run_uid = ? ORDER BY {order}", (uid,)
        ).fetchall()]
        for table, columns, order in CHILDREN
    }
    return RunRecord(_plain(row), children)


def first_difference(a: RunRecord, b: RunRecord) -> str | None:
    """What differs between two records of one run (None when they are identical)."""
    for column, x, y in zip(RUN_COLUMNS, a.run, b.run, strict=True):
        if not _same(x, y):
            return f"runs.{column}: {_short(x)} != {_short(y)}"
    for table, columns, _ in CHILDREN:
        rows_a, rows_b = a.children[table], b.children[table]
        if len(rows_a) != len(rows_b):
            return f"{table}: {len(rows_a)} rows != {len(rows_b)}"
        for i, (ra, rb) in enumerate(zip(rows_a, rows_b, strict=True)):
            for column, x, y in zip(columns, ra, rb, strict=True):
                if not _same(x, y):
                    return f"{table} row {i + 1}, {column}: {_short(x)} != {_short(y)}"
    return None


def copy_runs(
    src: str | DbTarget | Any,
    dst: str | DbTarget | Any,
    run_ids: Iterable[str] | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> CopyReport:
    """Copy runs (all, or ``run_ids``) from store ``src`` to store ``dst`` (created if new).

    Idempotent by run id: a run already in ``dst`` and identical is skipped; one that differs
    raises :class:`RunConflict` naming it (runs copied before it stay committed). The campaigns
    of copied runs are written or updated from ``src``. ``progress(done, total)`` is called
    as runs are handled.
    """
    report = CopyReport()
    with _both(src, dst, "write") as (src_conn, src_t, dst_conn, dst_t):
        uids = _run_ids(src_conn, run_ids, src_t)
        campaigns_done: set[str] = set()
        _begin(dst_conn)
        for i, uid in enumerate(uids):
            record = _read(src_conn, src_t, uid)
            if record is None:
                raise StoreError(f"{src_t}: no run {uid} to copy")
            existing = _read(dst_conn, dst_t, uid)
            if existing is not None:
                diff = first_difference(record, existing)
                if diff is not None:
                    raise RunConflict(
                        f"run {uid} is already in {dst_t} with different content "
                        f"({diff}); it was not copied"
                    )
                report.skipped.append(uid)
            else:
                campaign = record.run[1]
                if campaign not in campaigns_done:
                    report.campaigns += _copy_campaign(src_conn, dst_conn, campaign, dst_t)
                    campaigns_done.add(campaign)
                _insert(dst_conn, dst_t, record)
                report.copied.append(uid)
            if (i + 1) % COMMIT_EVERY == 0:
                _commit(dst_conn, dst_t)
                _begin(dst_conn)
            if progress is not None:
                progress(i + 1, len(uids))
        _commit(dst_conn, dst_t)
    return report


def copy_campaigns(src: str | DbTarget, dst: str | DbTarget, uids: Iterable[str]) -> int:
    """Write the campaign rows ``uids`` of ``src`` into ``dst`` as they are now (insert or
    update): a campaign that ends after its last run was copied gets its end there too."""
    written = 0
    with _both(src, dst, "write") as (src_conn, _, dst_conn, dst_t):
        _begin(dst_conn)
        for uid in uids:
            written += _copy_campaign(src_conn, dst_conn, uid, dst_t)
        _commit(dst_conn, dst_t)
    return written


@dataclass
class CheckReport:
    runs: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # phases, events, samples, metrics…
    difference: str | None = None  # the first run that differs, and how
    extra_in_dst: int = 0  # runs in the destination that the source does not have


def compare_runs(
    src: str | DbTarget | Any, dst: str | DbTarget | Any, run_ids: Iterable[str] | None = None
) -> CheckReport:
    """Compare every run of ``src`` (or ``run_ids``) with ``dst``, sample by sample and metric
    by metric; stop at the first difference."""
    report = CheckReport()
    with _both(src, dst, "read") as (src_conn, src_t, dst_conn, dst_t):
        try:
            uids = _run_ids(src_conn, run_ids, src_t)
            for uid in uids:
                record = _read(src_conn, src_t, uid)
                other = _read(dst_conn, dst_t, uid)
                if record is None or other is None:
                    report.difference = f"run {uid}: not in {src_t if record is None else dst_t}"
                    break
                diff = first_difference(record, other)
                if diff is not None:
                    report.difference = f"run {uid}: {diff}"
                    break
                report.runs += 1
                for name, n in record.counts().items():
                    report.counts[name] = report.counts.get(name, 0) + n
            if run_ids is None and report.difference is None:
                n_dst = dst_conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                report.extra_in_dst = int(n_dst) - report.runs
        except sqlite3.Error as exc:
            raise store_error(f"{src_t} / {dst_t}", "compare the stores", exc) from exc
    return report


# -- internals ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _both(src: Any, dst: Any, dst_mode: str) -> Iterator[tuple[Any, DbTarget, Any, DbTarget]]:
    """Both stores open (``dst`` for ``dst_mode``), closed after; a write the body left open
    is rolled back, so an error never leaves half a batch in the destination."""
    src_t, dst_t = parse_db(src), parse_db(dst)
    src_conn = open_target(src_t, "read")
    try:
        dst_conn = open_target(dst_t, dst_mode)
    except BaseException:
        src_conn.close()
        raise
    try:
        yield src_conn, src_t, dst_conn, dst_t
    except BaseException:
        if dst_conn.in_transaction:
            dst_conn.execute("ROLLBACK")
        raise
    finally:
        src_conn.close()
        dst_conn.close()


def _run_ids(conn: Any, run_ids: Iterable[str] | None, target: DbTarget) -> list[str]:
    if run_ids is not None:
        return list(dict.fromkeys(run_ids))
    try:
        return [row[0] for row in conn.execute("SELECT uid FROM runs ORDER BY wall_time, rowid")]
    except sqlite3.Error as exc:
        raise store_error(target, "list the runs", exc) from exc


def _read(conn: Any, target: DbTarget, uid: str) -> RunRecord | None:
    try:
        return read_run(conn, uid)
    except sqlite3.Error as exc:
        raise store_error(target, f"read run {uid}", exc) from exc


def _copy_campaign(src: Any, dst: Any, uid: str, dst_t: DbTarget) -> int:
    row = src.execute(f"SELECT {', '.join(CAMPAIGN_COLUMNS)} FROM campaigns WHERE uid = ?",
                      (uid,)).fetchone()
    if row is None:  # runs written without a campaign record (a test, a tool)
        return 0
    updates = ", ".join(f"{c} = excluded.{c}" for c in CAMPAIGN_COLUMNS[1:])
    try:
        dst.execute(
            f"INSERT INTO campaigns ({', '.join(CAMPAIGN_COLUMNS)}) VALUES"
            f" ({', '.join('?' for _ in CAMPAIGN_COLUMNS)})"
            f" ON CONFLICT (uid) DO UPDATE SET {updates}",
            _plain(row),
        )
    except sqlite3.Error as exc:
        raise store_error(dst_t, f"copy campaign {uid}", exc) from exc
    return 1


def _insert(conn: Any, target: DbTarget, record: RunRecord) -> None:
    try:
        conn.execute(
            f"INSERT INTO runs ({', '.join(RUN_COLUMNS)})"
            f" VALUES ({', '.join('?' for _ in RUN_COLUMNS)})",
            record.run,
        )
        for table, columns, _ in CHILDREN:
            rows = record.children[table]
            if rows:
                conn.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)})"
                    f" VALUES ({', '.join('?' for _ in columns)})",
                    rows,
                )
    except sqlite3.Error as exc:
        raise store_error(target, f"copy run {record.run[0]}", exc) from exc


def _begin(conn: Any) -> None:
    conn.execute("BEGIN IMMEDIATE")


def _commit(conn: Any, target: DbTarget) -> None:
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise store_error(target, "commit the copied runs", exc) from exc


def _plain(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"
