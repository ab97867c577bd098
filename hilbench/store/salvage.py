"""`hilbench store check` and `hilbench store salvage`: say what is damaged in a store, and copy
every run that can still be read into a new store.

A run's rows in phases, events, samples and metrics were written while it was open, so in each
of those tables they lie between the rows of the run before it and the run after it (rowids
grow as rows are added). A run is copied as it was when no lost range of any table falls in
that window; a run read whole but next to a lost range is copied as ``fail`` with an
``invalid: salvaged …`` reason, so no figure that may lack its samples is averaged in.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench.store.errors import StoreError
from hilbench.store.pages import BadPage, LostRange, PageReader, TableRead
from hilbench.store.schema import SQLITE_HEADER, open_store
from hilbench.store.wal import WalPageReader, read_wal

CHILD_TABLES = ("phases", "events", "samples", "metrics")  # each has run_uid as 2nd column
TABLES = ("campaigns", "runs", *CHILD_TABLES)
_INTEGER_KEYS = {"events", "samples", "metrics"}  # INTEGER PRIMARY KEY: stored as the rowid


@dataclass
class CheckReport:
    """What SQLite's integrity check and the page reader found."""

    path: Path
    problems: list[str] = field(default_factory=list)
    pages_in_file: int = 0
    pages_expected: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    lost: dict[str, list[LostRange]] = field(default_factory=dict)
    wal_pages: int = 0  # committed pages read from the -wal, not yet in the main file

    @property
    def damaged(self) -> bool:
        return bool(self.problems) or any(self.lost.values())


def check(path: Path, max_problems: int = 20) -> CheckReport:
    """SQLite's ``PRAGMA integrity_check`` plus, table by table, how many rows are readable
    and which rowid ranges sat in pages that are lost."""
    _require_sqlite_file(path)
    wal = Path(f"{path}-wal")
    report = CheckReport(path)
    # immutable: no -wal or -shm is created beside a file that has none (no writer has it open)
    flags = "mode=ro" if wal.exists() or Path(f"{path}-shm").exists() else "immutable=1"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True)
        try:
            rows = conn.execute(f"PRAGMA integrity_check({int(max_problems)})").fetchall()
        finally:
            conn.close()
        report.problems = [r[0] for r in rows if r[0] != "ok"]
    except sqlite3.DatabaseError as exc:
        report.problems = [f"SQLite cannot check it: {exc}"]
    reader = _reader(path)
    report.pages_in_file, report.pages_expected = reader.pages_in_file, reader.pages_expected
    report.wal_pages = len(reader.wal.pages) if isinstance(reader, WalPageReader) else 0
    for name, read in _read_tables(reader, brief=True)[1].items():
        report.rows[name] = len(read.rows)
        report.lost[name] = read.lost
    return report


@dataclass
class SalvageReport:
    runs: int = 0
    intact: int = 0
    invalid: list[str] = field(default_factory=list)  # uids of runs copied as possibly partial
    campaigns: int = 0
    orphan_rows: int = 0  # rows whose run row is lost: there is no run to copy them into
    lost: dict[str, list[LostRange]] = field(default_factory=dict)


def salvage(bad: Path, out: Path) -> SalvageReport:
    """Copy every readable run of the store ``bad`` into the new store ``out``."""
    _require_sqlite_file(bad)
    if out.exists():
        raise StoreError(f"{out} already exists; salvage writes a new store only")
    if out.resolve() == bad.resolve():
        raise StoreError("--out must be another file than the damaged store")
    reader = _reader(bad)
    # First pass: whole campaign and run rows, only (rowid, run) of the other tables.
    roots, tables = _read_tables(reader, brief=True)
    report = SalvageReport(lost={name: read.lost for name, read in tables.items()})
    runs = sorted(tables["runs"].rows, key=lambda row: row[0])
    order = {values[0]: i for i, (_rowid, values) in enumerate(runs)}
    suspects = _suspect_runs(tables, order)
    conn = open_store(out, "write")
    try:
        conn.execute("PRAGMA foreign_keys = OFF")  # a phase may be lost while its events live
        conn.execute("BEGIN IMMEDIATE")
        for rowid, values in tables["campaigns"].rows:
            _insert(conn, "campaigns", rowid, values)
        report.campaigns = len(tables["campaigns"].rows)
        for rowid, values in runs:
            uid = values[0]
            if uid in suspects:
                values = _invalidated(conn, values, bad, suspects[uid])
                report.invalid.append(uid)
            _insert(conn, "runs", rowid, values)
        for name in CHILD_TABLES:  # second pass: one row at a time, samples and all
            rows = reader.iter_table(roots[name], []) if tables[name].rows else iter(())
            for rowid, values in rows:
                if len(values) > 1 and values[1] in order:
                    _insert(conn, name, rowid, values)
                else:
                    report.orphan_rows += 1
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        with contextlib.suppress(OSError):
            out.unlink()
        raise
    conn.close()
    report.runs = len(runs)
    report.intact = report.runs - len(report.invalid)
    return report


def _require_sqlite_file(path: Path) -> None:
    if not path.is_file():
        raise StoreError(f"{path} is not a file")
    with path.open("rb") as fh:
        if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise StoreError(
                f"{path} is not a SQLite database (no SQLite header), so not a hilbench store"
            )


def _reader(path: Path) -> PageReader:
    """The store's pages as SQLite would read them: through its -wal when that holds commits."""
    wal = read_wal(Path(f"{path}-wal"))
    try:
        return PageReader(path) if wal is None else WalPageReader(path, wal)
    except BadPage as exc:
        raise StoreError(str(exc)) from exc


def _read_tables(
    reader: PageReader, brief: bool = False
) -> tuple[dict[str, int], dict[str, TableRead]]:
    """Each store table's root page and its rows as far as they can be read (``brief``: of
    phases, events, samples and metrics only the first two values, id and run). A table whose
    schema row is lost is looked for where a new store of this version puts it, and taken only
    if its rows fit the table."""
    schema, schema_lost = reader.schema()
    if not schema_lost:
        missing = [name for name in TABLES if name not in schema]
        if missing:
            raise StoreError(
                f"{reader.path} has no table {', '.join(missing)}: not a hilbench store"
            )
    roots, found = {}, {}
    for name in TABLES:
        guessed = name not in schema
        roots[name] = _template()[name][0] if guessed else schema[name]
        read = TableRead()
        columns = _template()[name][1]
        for rowid, values in reader.iter_table(roots[name], read.lost):
            if guessed and len(values) != columns:
                why = f"its schema row is lost ({schema_lost[0].why})"
                read = TableRead(lost=[LostRange(None, None, schema_lost[0].page, why)])
                break
            read.rows.append((rowid, values[:2] if brief and name in CHILD_TABLES else values))
        found[name] = read
    return roots, found


@functools.cache
def _template() -> dict[str, tuple[int, int]]:
    """Table -> (root page, column count) in a store made new by this hilbench."""
    with tempfile.TemporaryDirectory() as folder:
        conn = open_store(Path(folder) / "template.sqlite", "write")
        try:
            return {
                name: (root, len(conn.execute(f"PRAGMA table_info({name})").fetchall()))
                for name, root in conn.execute(
                    "SELECT name, rootpage FROM sqlite_master WHERE type = 'table'"
                )
            }
        finally:
            conn.close()


def _suspect_runs(tables: dict[str, TableRead], order: dict[str, int]) -> dict[str, list[str]]:
    """Runs that may have lost rows: run uid -> the tables in which they may have."""
    count = len(order)
    suspects: dict[str, list[str]] = {}
    uids = list(order)
    for name in CHILD_TABLES:
        read = tables[name]
        first: list[int | None] = [None] * count
        last: list[int | None] = [None] * count
        for rowid, values in read.rows:
            i = order.get(values[1]) if len(values) > 1 else None
            if i is None:
                continue
            first[i] = rowid if first[i] is None else min(first[i], rowid)
            last[i] = rowid if last[i] is None else max(last[i], rowid)
        # The window of run i: after every row of runs before it, before every row after it.
        before: list[int | None] = [None] * count
        running: int | None = None
        for i in range(count):
            before[i] = running
            if last[i] is not None:
                running = last[i] if running is None else max(running, last[i])
        after: list[int | None] = [None] * count
        running = None
        for i in reversed(range(count)):
            after[i] = running
            if first[i] is not None:
                running = first[i] if running is None else min(running, first[i])
        for i in range(count):
            if any(lost.meets(before[i], after[i]) for lost in read.lost):
                suspects.setdefault(uids[i], []).append(name)
    return suspects


_COLUMNS: dict[tuple[int, str], list[str]] = {}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    key = (id(conn), table)
    if key not in _COLUMNS:
        _COLUMNS[key] = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    return _COLUMNS[key]


def _invalidated(
    conn: sqlite3.Connection, values: list[Any], bad: Path, tables: list[str]
) -> list[Any]:
    columns = _columns(conn, "runs")
    row = dict(zip(columns, values, strict=False))
    was = row.get("exit_status") or "none (the run never stopped)"
    row["exit_status"] = "fail"
    row["reason"] = (
        f"invalid: salvaged from {bad}: rows in {', '.join(tables)} may be lost with damaged "
        f"pages (stored status: {was})" + (f"; {row['reason']}" if row.get("reason") else "")
    )
    return [row.get(c) for c in columns[: max(len(values), columns.index("reason") + 1)]]


def _insert(conn: sqlite3.Connection, table: str, rowid: int, values: list[Any]) -> None:
    columns = _columns(conn, table)[: len(values)]
    if table in _INTEGER_KEYS:  # the id column is the rowid
        names, row = columns, [rowid, *values[1 : len(columns)]]
    else:
        names, row = ["rowid", *columns], [rowid, *values[: len(columns)]]
    marks = ", ".join("?" * len(names))
    conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", row)
