"""Listing stored runs at scale: filters and summaries computed by the database, rows streamed.

`hilbench results` must answer in well under a second with tens of thousands of runs stored, so
nothing here loads every run into Python: filters are SQL ``WHERE`` clauses on indexed columns,
summaries are SQL aggregates, and full listings are cursors consumed row by row.

Runs are summarised by replicate group (runs of one campaign and procedure whose unit keys
differ only in seed and repetition, see :mod:`hilbench.store.groups`). A group's metric is the
mean over its successful runs with the standard error of that mean; failed, aborted and
unfinished runs are counted, never averaged, and so are runs whose answer was infeasible.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hilbench.store.backend import is_postgresql
from hilbench.store.codec import from_json
from hilbench.store.groups import install_functions, replicate_key

__all__ = [
    "STATUSES",
    "RunFilter",
    "RunGroup",
    "count_runs",
    "install_functions",
    "iter_runs",
    "replicate_key",
    "run_dict",
    "run_groups",
]

INCOMPLETE = "incomplete"
FEASIBLE = "feasible"  # 0: the run's answer is unusable, its other metrics are not averaged
# Flags about a run rather than figures of its answer: counted over every run
RUN_FLAGS = (FEASIBLE, "overrun", "stopped_early")
# unverified: the run's timing could not be verified (tried again, counted, never averaged)
STATUSES = ("success", "unverified", "fail", "abort", INCOMPLETE)
@dataclass(frozen=True)
class RunFilter:
    """Which runs to read; every field narrows the set and becomes part of a ``WHERE``."""

    campaign_uid: str | None = None
    procedure: str | None = None  # "qubo.fixed_timeout", or "qubo" for every qubo.* procedure
    status: str | None = None  # one of STATUSES

    def where(self, alias: str = "r") -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if self.campaign_uid is not None:
            clauses.append(f"{alias}.campaign_uid = ?")
            args.append(self.campaign_uid)
        if self.procedure is not None:
            # "qubo" also means every "qubo.*": a range ('/' follows '.'), which the index serves.
            clauses.append(
                f"({alias}.procedure = ? OR ({alias}.procedure > ? AND {alias}.procedure < ?))"
            )
            args += [self.procedure, self.procedure + ".", self.procedure + "/"]
        if self.status == INCOMPLETE:
            clauses.append(f"{alias}.exit_status IS NULL")
        elif self.status is not None:
            clauses.append(f"{alias}.exit_status = ?")
            args.append(self.status)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def count_runs(conn: sqlite3.Connection, flt: RunFilter) -> int:
    where, args = flt.where()
    return int(conn.execute(f"SELECT COUNT(*) FROM runs r{where}", args).fetchone()[0])


def iter_runs(conn: sqlite3.Connection, flt: RunFilter, *, limit: int | None = None,
              newest_first: bool = False) -> Iterator[dict[str, Any]]:
    """Runs with their metrics, one dict per run, streamed from a single cursor."""
    where, args = flt.where()
    order = "DESC" if newest_first else "ASC"
    runs_sql = (
        f"SELECT r.rowid AS rowid_, r.* FROM runs r{where}"
        f" ORDER BY r.wall_time {order}, r.rowid {order}"
    )
    if limit is not None:
        runs_sql += " LIMIT ?"
        args = [*args, limit]
    cursor = conn.execute(
        f"SELECT r.*, m.name AS m_name, m.value AS m_value, m.uncertainty AS m_uncertainty,"
        f" m.unit AS m_unit, m.meta AS m_meta FROM ({runs_sql}) r"
        f" LEFT JOIN metrics m ON m.run_uid = r.uid"
        f" ORDER BY r.wall_time {order}, r.rowid_ {order}, m.id",
        args,
    )
    current: dict[str, Any] | None = None
    for row in cursor:
        if current is None or current["uid"] != row["uid"]:
            if current is not None:
                yield current
            current = run_dict(row)
            current["metrics"] = []
        if row["m_name"] is not None:
            current["metrics"].append(
                {
                    "name": row["m_name"],
                    "value": row["m_value"],
                    "uncertainty": row["m_uncertainty"],
                    "unit": row["m_unit"],
                    "meta": from_json(row["m_meta"]),
                }
            )
    if current is not None:
        yield current


@dataclass
class MetricSummary:
    name: str
    unit: str
    n: int  # successful runs with a value
    mean: float | None
    std_error: float | None  # of the mean, over the runs; None with one run
    minimum: float | None
    maximum: float | None


@dataclass
class RunGroup:
    campaign_uid: str
    campaign_name: str | None
    procedure: str
    key: str  # the unit key with replicate segments as "=*"
    statuses: dict[str, int]
    metrics: list[MetricSummary]
    simulation: str = ""  # what is simulated, when any run of the group is

    @property
    def n_runs(self) -> int:
        return sum(self.statuses.values())


def group_counts_sql(where: str) -> str:
    """Each replicate group's runs counted by status, with its first start and what it
    simulated. Grouped in the order of the runs_by_group index, which holds every column read
    here, so SQLite reads that index alone (no table row, no sort): at 100 000 runs, reading
    the rows took 100 ms of the statement's 125 ms. Campaign names are read afterwards, for
    the groups shown only."""
    return ("SELECT r.campaign_uid, r.procedure, r.unit_group, r.exit_status, COUNT(*) AS n,"
            " MIN(r.wall_time) AS first, MAX(r.simulated) AS simulated,"
            " MAX(r.simulation) AS simulation"
            f" FROM runs r{where}"
            " GROUP BY r.campaign_uid, r.procedure, r.unit_group, r.exit_status")


def run_groups(
    conn: sqlite3.Connection, flt: RunFilter, limit: int | None = None
) -> tuple[int, list[RunGroup]]:
    """How many replicate groups match, and the newest ``limit`` of them (all with None) in the
    order of their first run, with status counts and the metric summaries of their successful
    runs; metrics are aggregated only for the groups returned."""
    where, args = flt.where()
    rows = conn.execute(group_counts_sql(where), args).fetchall()
    groups: dict[tuple[str, str, str], RunGroup] = {}
    first: dict[tuple[str, str, str], float] = {}
    for campaign_uid, procedure, unit_group, status, n, started, simulated, simulation in rows:
        ident = (campaign_uid, procedure, unit_group)
        group = groups.get(ident)
        if group is None:
            group = groups[ident] = RunGroup(campaign_uid, None, procedure, unit_group, {}, [])
            first[ident] = started
        first[ident] = min(first[ident], started)
        group.statuses[status or INCOMPLETE] = n
        if simulated:
            group.simulation = simulation or "simulated"
    ordered = sorted(groups, key=lambda ident: first[ident])
    shown = ordered if limit is None else ordered[-limit:]  # the newest, oldest first
    if not shown:
        return len(groups), []
    _name_campaigns(conn, [groups[ident] for ident in shown])
    metric_rows = _metric_summaries(conn, flt, shown if len(shown) < len(groups) else None)
    for row in metric_rows:
        group = groups.get((row["campaign_uid"], row["procedure"], row["unit_group"]))
        if group is not None:
            group.metrics.append(_summary(row))
    return len(groups), [groups[ident] for ident in shown]


def _name_campaigns(conn: sqlite3.Connection, groups: list[RunGroup]) -> None:
    uids = sorted({group.campaign_uid for group in groups})
    names: dict[str, str] = {}
    for at in range(0, len(uids), 500):  # SQLite's bound on a statement's parameters is 999+
        part = uids[at:at + 500]
        names.update(conn.execute(
            f"SELECT uid, name FROM campaigns WHERE uid IN ({', '.join('?' * len(part))})",
            part).fetchall())
    for group in groups:
        group.campaign_name = names.get(group.campaign_uid)


def _metric_summaries(conn: sqlite3.Connection, flt: RunFilter,
                      shown: list[tuple[str, str, str]] | None) -> Any:
    """The metric aggregates of the successful runs of the ``shown`` groups (every group with
    None), in the order the metrics were first stored."""
    where, args = flt.where()
    success = f"{where}{' AND' if where else ' WHERE'} r.exit_status = 'success'"
    shown_groups, join = "", ""
    if shown is not None:
        # The shown groups as a table the runs are joined to: each group is one index search
        # (an IN over row values scanned every run in the store).
        shown_groups = "WITH shown (campaign_uid, procedure, unit_group) AS (VALUES " + \
            ", ".join("(?, ?, ?)" for _ in shown) + ") "
        join = (" JOIN shown s ON r.campaign_uid = s.campaign_uid"
                " AND r.procedure = s.procedure AND r.unit_group = s.unit_group")
        args = [part for ident in shown for part in ident] + args
    # A run whose answer was unusable (metric FEASIBLE = 0, e.g. a QUBO state that is no
    # independent set) is counted in the run flags and averaged in no other metric.
    flags = ", ".join(f"'{name}'" for name in RUN_FLAGS)
    value = f"CASE WHEN f.value = 0 AND m.name NOT IN ({flags}) THEN NULL ELSE m.value END"
    # std_error is a Python aggregate on SQLite; PostgreSQL has the sample deviation built in.
    std_error = (f"stddev_samp({value}) / sqrt(COUNT({value}))" if is_postgresql(conn)
                 else f"std_error({value})")
    return conn.execute(
        f"{shown_groups}SELECT r.campaign_uid, r.procedure, r.unit_group, m.name, m.unit,"
        f" COUNT({value}) AS n, AVG({value}) AS mean, {std_error} AS std_error,"
        f" MIN({value}) AS lo, MAX({value}) AS hi, MIN(m.id) AS first"
        f" FROM runs r{join} JOIN metrics m ON m.run_uid = r.uid"
        f" LEFT JOIN metrics f ON f.run_uid = r.uid AND f.name = '{FEASIBLE}'{success}"
        " GROUP BY r.campaign_uid, r.procedure, r.unit_group, m.name, m.unit ORDER BY first",
        args,
    )


def _summary(row: sqlite3.Row) -> MetricSummary:
    std_error = row["std_error"]
    if std_error is not None and _same_to_float_resolution(row["lo"], row["hi"]):
        std_error = 0.0
    return MetricSummary(
        row["name"], row["unit"], row["n"], row["mean"], std_error, row["lo"], row["hi"]
    )


SAME_VALUE_RELATIVE = 1e-12
"""Values whose range is below this part of their size are one value computed with different
roundings (a power of 38 W and 38 W + 1 ulp). Their standard error is left to the aggregate's
rounding, which differs between SQLite's Welford sum, PostgreSQL's stddev_samp and the rows'
order (0 or 7e-15 for the same two runs), so it is reported as 0 on both back ends."""


def _same_to_float_resolution(lo: float | None, hi: float | None) -> bool:
    # MIN and MAX are exact on both back ends, so the decision is the same on both
    if lo is None or hi is None:
        return False
    return hi - lo <= SAME_VALUE_RELATIVE * max(abs(lo), abs(hi))


def run_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A stored run as the reader returns it (status "incomplete" when it never stopped)."""
    t_stop = row["t_stop"]
    return {
        "uid": row["uid"],
        "campaign_uid": row["campaign_uid"],
        "unit_key": row["unit_key"],
        "procedure": row["procedure"],
        "params": from_json(row["params"]),
        "agents": from_json(row["agents"]),
        "t_start": row["t_start"],
        "t_stop": t_stop,
        "duration_s": None if t_stop is None else t_stop - row["t_start"],
        "wall_time": row["wall_time"],
        "hilbench_version": row["hilbench_version"],
        "simulated": bool(row["simulated"]),
        "simulation": row["simulation"],
        "status": row["exit_status"] or INCOMPLETE,
        "reason": row["reason"],
    }
