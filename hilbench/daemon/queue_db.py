"""Every SQL statement of the daemon's queue, history, control flags, schedules and benches.

The queue lives beside the runs it produces — in the bench's store file (SQLite, one host), or
in a PostgreSQL database that several benches share (`--db postgresql://…`) — so it survives
any crash of a daemon, and the `hilbench queue …` commands work whether a daemon runs or not.
Its tables are part of the store's schema (:mod:`hilbench.store.tables`, revision 0007), made
and upgraded with the rest of it when the queue is opened.

An item is *queued*, then *running*, then moves to the history in one transaction with its
exit status; ids are never reused, so a re-queued item gets a new id and an item that reached
the history can never run again. An item names the bench it needs (or none: any bench may
take it); a daemon *claims* the head of its bench's queue in one transaction (``FOR UPDATE
SKIP LOCKED`` on PostgreSQL, the file's write lock on SQLite), which binds the item to that
bench: only that bench's daemon runs or resumes it. A schedule fire is recorded once under the
schedule's row lock and a unique (schedule, fire time) key, however many daemons tick it.
Each daemon keeps a heartbeat row in ``daemon_benches`` (`hilbench status --all`).

The run-reading helpers read the bench's own store file (its runs, the local journal).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import (
    Connection,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import OperationalError

from hilbench.daemon.db import queue_engine
from hilbench.store.engine import DbTarget, parse_db
from hilbench.store.errors import if_damaged
from hilbench.store.schema import BUSY_TIMEOUT_S, open_store
from hilbench.store.tables import daemon_benches as _benches
from hilbench.store.tables import daemon_control as _control
from hilbench.store.tables import daemon_fires as _fires
from hilbench.store.tables import daemon_history as _history
from hilbench.store.tables import daemon_queue as _queue
from hilbench.store.tables import daemon_schedules as _schedules

ExitStatus = Literal["completed", "failed", "aborted", "stopped", "removed"]
Mode = Literal["run", "pause", "pause_now", "stop"]
MODES = ("run", "pause", "pause_now", "stop")
DEADLOCK_RETRIES = 5  # a schedule fire's transaction, when PostgreSQL picks it as the victim



class QueueError(ValueError):
    """A queue or schedule request that cannot be done; the message says why."""


@dataclass(frozen=True)
class Item:
    id: int
    priority: int
    position: float
    state: str
    name: str
    source_path: str
    content: str
    content_hash: str
    trials: int | None
    record: str | None
    schedule_id: int | None
    added_at: float
    started_at: float | None
    campaign_uid: str | None
    attempts: int
    not_before: float
    message: str
    bench: str | None = None
    starts: int = 0  # how often its campaign has started (restarts and retries included)
    outcome: str | None = None  # how its last start ended (a session outcome), if it did

    def summary(self) -> dict[str, Any]:
        """The item as `queue list --json` and `status` show it (no file content)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("content", "position")}
        out["content_hash"] = self.content_hash[:16]
        return out


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _item(row: Any) -> Item:
    return Item(**{col.name: row[col.name] for col in _queue.columns})


def _again_after_deadlock(transaction: Any) -> Any:
    """Run ``transaction`` (a callable doing one whole transaction) again when PostgreSQL ends
    it as a deadlock's victim (SQLSTATE 40P01), as PostgreSQL advises; other errors go up."""
    for attempt in range(DEADLOCK_RETRIES):
        try:
            return transaction()
        except OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != "40P01" or attempt == DEADLOCK_RETRIES - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    return None


class QueueDB:
    """The daemon's tables, in a store file or a PostgreSQL database (``location``). Each method
    is one short transaction. ``store`` is the bench's own store file, where its runs are (the
    location itself when that is a file)."""

    def __init__(self, location: str | Path | DbTarget, store: str | Path | None = None) -> None:
        target = parse_db(location)
        self.shared = target.is_postgresql
        self.target = target
        self.store = Path(store) if store is not None else target.path
        self._engine = queue_engine(target)  # makes or upgrades the store's schema, tables and all
        self._runs_conn: sqlite3.Connection | None = None

    def describe(self) -> str:
        """Where the queue is, as it may be shown (no password)."""
        return str(self.target)  # a file path, or the URL without its password

    def close(self) -> None:
        self._engine.dispose()
        if self._runs_conn is not None:
            self._runs_conn.close()

    def __enter__(self) -> QueueDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self._engine.begin() as c:
            yield c

    def _rows(self, stmt: Any, args: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._engine.connect().execution_options(hb_read=True) as c:
            return [dict(r) for r in c.execute(stmt, args or {}).mappings()]

    def _runs(self, sql: str, args: Any = ()) -> list[tuple]:
        """A read of the runner's tables in the bench's own store file."""
        if self.store is None:
            raise QueueError("no local store given: the runs of a shared queue are in each "
                             "bench's store file")
        if self._runs_conn is None:
            open_store(self.store, "write").close()
            self._runs_conn = sqlite3.connect(self.store, timeout=BUSY_TIMEOUT_S,
                                              isolation_level=None, check_same_thread=False)
        try:
            return self._runs_conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:  # a damaged page, say: the same line as the queue's
            found = if_damaged(self.store, "read the runs", exc)
            if found is not None:
                raise found from None
            raise

    # -- queue ---------------------------------------------------------------------------------
    def add(self, source_path: str, content: str, name: str, *, trials: int | None = None,
            record: str | None = None, priority: int = 0, schedule_id: int | None = None,
            bench: str | None = None) -> int:
        with self._tx() as c:
            return self._insert_item(c, dict(
                priority=priority, name=name, source_path=source_path, content=content,
                content_hash=content_hash(content), trials=trials, record=record,
                schedule_id=schedule_id, bench=bench))

    @staticmethod
    def _insert_item(c: Connection, values: dict[str, Any]) -> int:
        last = c.execute(select(func.coalesce(func.max(_queue.c.position), 0))).scalar_one()
        result = c.execute(insert(_queue).values(position=float(last) + 1.0,
                                                 added_at=time.time(), **values))
        return int(result.inserted_primary_key[0])

    def items(self, bench: str | None = None) -> list[Item]:
        """The queue in the order it runs: running items first, then priority, then position
        (``bench``: only what that bench may run)."""
        q = _queue.c
        stmt = select(_queue).order_by((q.state == "running").desc(), q.priority.desc(),
                                       q.position, q.id)
        if bench is not None:
            stmt = stmt.where(or_(q.bench == bench, q.bench.is_(None)))
        return [_item(r) for r in self._rows(stmt)]

    def item(self, item_id: int) -> Item:
        rows = self._rows(select(_queue).where(_queue.c.id == item_id))
        if not rows:
            where = "in the history" if self._rows(
                select(_history.c.id).where(_history.c.id == item_id)) else "unknown"
            raise QueueError(f"queue item {item_id} is not in the queue ({where})")
        return _item(rows[0])

    def remove(self, item_id: int) -> None:
        item = self.item(item_id)
        if item.state == "running":
            raise QueueError(
                f"queue item {item_id} is running; `hilbench queue pause --now` or "
                "`hilbench queue stop` first"
            )
        self._finish(item, "removed", "removed from the queue by hand", [])

    def move(self, item_id: int, before_id: int) -> None:
        """Put ``item_id`` just before ``before_id`` (taking its priority)."""
        if item_id == before_id:
            raise QueueError("an item cannot move before itself")
        item, target = self.item(item_id), self.item(before_id)
        if "running" in (item.state, target.state):
            raise QueueError("the running item cannot be moved, nor anything put before it")
        q = _queue.c
        with self._tx() as c:
            prev = c.execute(select(func.max(q.position)).where(
                q.priority == target.priority, q.position < target.position, q.id != item_id,
            )).scalar_one()
            low = prev if prev is not None else target.position - 1.0
            c.execute(update(_queue).where(q.id == item_id).values(
                priority=target.priority, position=(low + target.position) / 2))

    def claim(self, bench: str, now: float) -> Item | None:
        """The item ``bench`` runs now, marked running and bound to it: one this bench left
        running (its daemon was killed), else the head of what it may run. Atomic across
        daemons: two never claim one item."""
        q = _queue.c
        mine = or_(q.bench == bench, q.bench.is_(None))
        with self._tx() as c:
            row = c.execute(select(_queue.c.id).where(q.state == "running", mine)
                            .order_by(q.id).limit(1).with_for_update()).first()
            if row is None:
                row = c.execute(
                    select(_queue.c.id).where(q.state == "queued", mine, q.not_before <= now)
                    .order_by(q.priority.desc(), q.position, q.id).limit(1)
                    .with_for_update(skip_locked=True)).first()
            if row is None:
                return None
            c.execute(update(_queue).where(q.id == row[0]).values(
                state="running", bench=bench, started_at=func.coalesce(q.started_at, now)))
            return _item(c.execute(select(_queue).where(q.id == row[0])).mappings().one())

    def set_campaign(self, item_id: int, campaign_uid: str) -> None:
        """The item's campaign starts (again): it is ``campaign_uid``; one more start."""
        with self._tx() as c:
            c.execute(update(_queue).where(_queue.c.id == item_id).values(
                campaign_uid=campaign_uid, starts=_queue.c.starts + 1))

    def requeue(self, item_id: int, *, attempts: int, not_before: float, message: str,
                outcome: str | None = None) -> None:
        """Back to 'queued' at its place, bound to the bench that started it."""
        with self._tx() as c:
            c.execute(update(_queue).where(_queue.c.id == item_id).values(
                state="queued", attempts=attempts, not_before=not_before, message=message,
                outcome=outcome))

    def release_waits(self, outcome: str) -> int:
        """Items waiting after ``outcome`` may start now (a daemon start, `queue resume`)."""
        q = _queue.c
        with self._tx() as c:
            return c.execute(update(_queue).where(q.state == "queued", q.outcome == outcome)
                             .values(not_before=0)).rowcount

    def finish(self, item_id: int, status: ExitStatus, message: str, run_uids: list[str],
               outcome: str | None = None) -> None:
        self._finish(self.item(item_id), status, message, run_uids, outcome)

    def _finish(self, item: Item, status: ExitStatus, message: str, run_uids: list[str],
                outcome: str | None = None) -> None:
        with self._tx() as c:
            c.execute(insert(_history).values(
                id=item.id, name=item.name, source_path=item.source_path,
                content_hash=item.content_hash, trials=item.trials,
                schedule_id=item.schedule_id, added_at=item.added_at,
                started_at=item.started_at, stopped_at=time.time(), exit_status=status,
                message=message, campaign_uid=item.campaign_uid,
                run_uids=json.dumps(run_uids), starts=item.starts, bench=item.bench,
                outcome=outcome))
            c.execute(delete(_queue).where(_queue.c.id == item.id))

    def history(self, limit: int = 50, item_id: int | None = None) -> list[dict[str, Any]]:
        stmt = select(_history).order_by(_history.c.stopped_at.desc(), _history.c.id.desc())
        if item_id is not None:
            stmt = stmt.where(_history.c.id == item_id)
        rows = self._rows(stmt.limit(limit))
        for d in rows:
            d["run_uids"] = json.loads(d["run_uids"])
        return rows

    def history_of(self, item_id: int) -> dict[str, Any] | None:
        return next(iter(self.history(1, item_id)), None)

    # -- what the store says about a campaign (read-only, the runner's tables) -----------------
    def campaign_status(self, campaign_uid: str) -> str | None:
        rows = self._runs("SELECT status FROM campaigns WHERE uid = ?", (campaign_uid,))
        return rows[0][0] if rows else None

    def run_uids(self, campaign_uid: str) -> list[str]:
        return [r[0] for r in self._runs(
            "SELECT uid FROM runs WHERE campaign_uid = ? ORDER BY wall_time", (campaign_uid,))]

    def run_counts(self, campaign_uid: str) -> dict[str, int]:
        return {r[0] or "incomplete": r[1] for r in self._runs(
            "SELECT exit_status, COUNT(*) FROM runs WHERE campaign_uid = ? GROUP BY exit_status",
            (campaign_uid,))}

    def run_tally(self) -> dict[str, int]:
        """Runs in the whole store by exit status ('incomplete': never stopped)."""
        return {r[0] or "incomplete": r[1] for r in self._runs(
            "SELECT exit_status, COUNT(*) FROM runs GROUP BY exit_status")}

    def _unit_keys(self, campaign_uid: str, status: str) -> list[str]:
        """The unit key of each of the campaign's runs that ended ``status`` (one per run)."""
        return [r[0] for r in self._runs(
            "SELECT unit_key FROM runs WHERE campaign_uid = ? AND exit_status = ?",
            (campaign_uid, status))]

    def unverified_keys(self, campaign_uid: str) -> set[str]:
        """Units with a run ended ``unverified`` (its timing not confirmed after its attempts):
        a stored, honest outcome, not a loss."""
        return set(self._unit_keys(campaign_uid, "unverified"))

    def success_keys(self, campaign_uid: str) -> list[str]:
        return self._unit_keys(campaign_uid, "success")

    def success_times(self) -> list[float]:
        """When each successful run ended (UTC seconds), in order."""
        return [r[0] for r in self._runs(
            "SELECT wall_time + (t_stop - t_start) AS t FROM runs WHERE exit_status = 'success' "
            "ORDER BY t")]

    def unit_durations(self, procedure_groups: list[tuple[str, str]]) -> dict[tuple[str, str],
                                                                             tuple[float, int]]:
        """Mean duration and count of successful stored runs per (procedure,
        unit group): what the ETA is based on."""
        out: dict[tuple[str, str], tuple[float, int]] = {}
        for procedure, group in procedure_groups:
            row = self._runs(
                "SELECT AVG(t_stop - t_start), COUNT(*) FROM (SELECT t_start, t_stop FROM runs "
                "WHERE procedure = ? AND unit_group = ? AND exit_status = 'success' "
                "ORDER BY wall_time DESC LIMIT 200)", (procedure, group))[0]
            if row[1]:
                out[(procedure, group)] = (float(row[0]), int(row[1]))
        return out

    # -- control flags (persist across restarts) -----------------------------------------------
    def mode(self) -> Mode:
        rows = self._rows(select(_control.c.value).where(_control.c.key == "mode"))
        return rows[0]["value"] if rows else "run"  # type: ignore[return-value]

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise QueueError(f"unknown queue mode {mode!r}")
        with self._tx() as c:
            _upsert(c, "daemon_control", "key", {"key": "mode", "value": mode})

    # -- benches (one heartbeat row per daemon) ------------------------------------------------
    def beat(self, bench: str, **fields: Any) -> None:
        """Write ``bench``'s row (host, pid, control, state, item, …) and when it was seen."""
        row = {"bench": bench, "last_seen": time.time(), **fields}
        for key in ("serves", "push"):
            if key in row and not isinstance(row[key], str):
                row[key] = json.dumps(row[key])
        with self._tx() as c:
            _upsert(c, "daemon_benches", "bench", row)

    def benches(self) -> list[dict[str, Any]]:
        rows = self._rows(select(_benches).order_by(_benches.c.bench))
        for d in rows:
            d["serves"] = json.loads(d["serves"] or "[]")
            d["push"] = json.loads(d["push"] or "{}")
        return rows

    def daemon_info(self, bench: str | None = None) -> dict[str, Any]:
        """``bench``'s heartbeat row (None: the daemon seen last), or {} when none has run."""
        rows = [b for b in self.benches() if bench is None or b["bench"] == bench]
        return max(rows, key=lambda b: b["last_seen"]) if rows else {}

    # -- schedules -----------------------------------------------------------------------------
    def add_schedule(self, *, name: str, source_path: str, content: str, cron: str, tz: str,
                     missed: str, trials: int | None, record: str | None, priority: int,
                     now: float, bench: str | None = None) -> int:
        with self._tx() as c:
            result = c.execute(insert(_schedules).values(
                name=name, source_path=source_path, content=content,
                content_hash=content_hash(content), cron=cron, tz=tz, missed=missed,
                trials=trials, record=record, priority=priority, created_at=now,
                last_fire=now, bench=bench))
            return int(result.inserted_primary_key[0])

    def schedules(self, bench: str | None = None) -> list[dict[str, Any]]:
        """Every schedule (``bench``: those whose items that bench may run)."""
        s = _schedules.c
        stmt = select(_schedules).order_by(s.id)
        if bench is not None:
            stmt = stmt.where(or_(s.bench == bench, s.bench.is_(None)))
        return self._rows(stmt)

    def remove_schedule(self, schedule_id: int) -> None:
        with self._tx() as c:
            if not c.execute(delete(_schedules).where(_schedules.c.id == schedule_id)).rowcount:
                raise QueueError(f"no schedule {schedule_id} (see `hilbench schedule list`)")

    def fires(self, schedule_id: int | None = None, limit: int = 50) -> list[dict[str, Any]]:
        stmt = select(_fires).order_by(_fires.c.id.desc()).limit(limit)
        if schedule_id is not None:
            stmt = stmt.where(_fires.c.schedule_id == schedule_id)
        return self._rows(stmt)

    def record_fires(self, schedule_id: int, last_fire: float,
                     fires: list[tuple[float, str, str]], queue_item: bool) -> int | None:
        """:meth:`_record_fires_once`, again when PostgreSQL ends it as a deadlock's victim
        (daemons ticking one schedule at once; CI saw it): the retry drops fires the winner
        handled, so a fire is still recorded once."""
        return _again_after_deadlock(
            lambda: self._record_fires_once(schedule_id, last_fire, fires, queue_item))

    def _record_fires_once(self, schedule_id: int, last_fire: float,
                           fires: list[tuple[float, str, str]], queue_item: bool) -> int | None:
        """Record handled fires (time, outcome, note); queue one item for the schedule when
        asked, unless its previous item is still queued or running (then 'queued' fires are
        recorded as 'coalesced'). Advances ``last_fire``. One transaction under the schedule's
        row lock: a fire is never handled twice, by a daemon killed in the middle or by two
        daemons ticking the same schedule (fires another already handled are dropped here)."""
        s = _schedules.c
        with self._tx() as c:
            sched = c.execute(select(_schedules).where(s.id == schedule_id)
                              .with_for_update()).mappings().first()
            if sched is None:
                return None
            fires = [f for f in fires if f[0] > sched["last_fire"]]
            if not fires:
                return None
            queue_item = queue_item and any(o == "queued" for _, o, _ in fires)
            item_id = None
            if queue_item:
                busy = sched["last_item_id"] is not None and c.execute(
                    select(_queue.c.id).where(_queue.c.id == sched["last_item_id"])).first()
                if busy:
                    fires = [(t, "coalesced" if o == "queued" else o,
                              f"item {sched['last_item_id']} still queued or running; {n}".strip(
                                  "; ")) for t, o, n in fires]
                else:
                    item_id = self._insert_item(c, dict(
                        priority=sched["priority"], name=sched["name"],
                        source_path=sched["source_path"], content=sched["content"],
                        content_hash=sched["content_hash"], trials=sched["trials"],
                        record=sched["record"], schedule_id=schedule_id,
                        bench=sched["bench"]))
                    c.execute(update(_schedules).where(s.id == schedule_id).values(
                        last_item_id=item_id))
            now = time.time()
            for t, outcome, note in fires:
                c.execute(insert(_fires).values(
                    schedule_id=schedule_id, fire_time=t, handled_at=now, outcome=outcome,
                    item_id=item_id if outcome == "queued" else None, note=note))
            c.execute(update(_schedules).where(s.id == schedule_id).values(
                last_fire=max(last_fire, sched["last_fire"])))
            return item_id


def _upsert(c: Connection, table: str, key: str, row: dict[str, Any]) -> None:
    """INSERT … ON CONFLICT (key) DO UPDATE: the same text on SQLite and PostgreSQL."""
    cols = list(row)
    sets = ", ".join(f"{col} = excluded.{col}" for col in cols if col != key)
    c.execute(text(f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                   f"({', '.join(':' + col for col in cols)}) "
                   f"ON CONFLICT ({key}) DO UPDATE SET {sets}"), row)
