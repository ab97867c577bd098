"""Every SQL statement of the daemon's queue, history, control flags and schedules.

The queue lives in the store file beside the runs it produces, so it survives any crash of
the daemon, and the `hilbench queue …` commands work whether the daemon runs or not. All SQL
of the daemon is here (a later store back end replaces this one module). Tables are created
on first use; the store's own schema is untouched.

An item is *queued*, then *running*, then moves to the history in one transaction with its
exit status; ids come from AUTOINCREMENT and are never reused, so a re-queued item gets a new
id and an item that reached the history can never run again.
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

from hilbench.store.schema import BUSY_TIMEOUT_S, open_store

ExitStatus = Literal["completed", "failed", "aborted", "stopped", "removed"]
Mode = Literal["run", "pause", "pause_now", "stop"]
MODES = ("run", "pause", "pause_now", "stop")

_TABLES = (
    """CREATE TABLE IF NOT EXISTS daemon_queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        priority INTEGER NOT NULL DEFAULT 0,
        position REAL NOT NULL,               -- order among items of one priority
        state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running')),
        name TEXT NOT NULL,
        source_path TEXT NOT NULL,             -- absolute; relative paths inside resolve there
        content TEXT NOT NULL,                 -- the campaign file as it was when queued
        content_hash TEXT NOT NULL,            -- sha256 of content
        trials INTEGER,
        record TEXT,
        schedule_id INTEGER,
        added_at REAL NOT NULL,                -- UTC seconds
        started_at REAL,
        campaign_uid TEXT,                     -- set once its first run started
        attempts INTEGER NOT NULL DEFAULT 0,   -- starts that completed no unit, in a row
        not_before REAL NOT NULL DEFAULT 0,    -- retry back-off
        message TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE IF NOT EXISTS daemon_history (
        id INTEGER PRIMARY KEY,                -- the queue item's id
        name TEXT NOT NULL,
        source_path TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        trials INTEGER,
        schedule_id INTEGER,
        added_at REAL NOT NULL,
        started_at REAL,
        stopped_at REAL NOT NULL,
        exit_status TEXT NOT NULL
            CHECK (exit_status IN ('completed', 'failed', 'aborted', 'stopped', 'removed')),
        message TEXT NOT NULL DEFAULT '',
        campaign_uid TEXT,
        run_uids TEXT NOT NULL DEFAULT '[]',   -- JSON
        starts INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE TABLE IF NOT EXISTS daemon_control (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS daemon_schedules (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        source_path TEXT NOT NULL,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        cron TEXT NOT NULL,
        tz TEXT NOT NULL,
        missed TEXT NOT NULL CHECK (missed IN ('skip', 'run-once')),
        trials INTEGER,
        record TEXT,
        priority INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        last_fire REAL NOT NULL,               -- every fire up to here is handled (UTC s)
        last_item_id INTEGER
    )""",
    """CREATE TABLE IF NOT EXISTS daemon_fires (
        id INTEGER PRIMARY KEY,
        schedule_id INTEGER NOT NULL,
        fire_time REAL NOT NULL,               -- when cron said (UTC s)
        handled_at REAL NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('queued', 'coalesced', 'missed', 'error')),
        item_id INTEGER,
        note TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX IF NOT EXISTS daemon_fires_by_schedule ON daemon_fires (schedule_id, fire_time)",
)


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

    def summary(self) -> dict[str, Any]:
        """The item as `queue list --json` and `status` show it (no file content)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("content", "position")}
        out["content_hash"] = self.content_hash[:16]
        return out


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class QueueDB:
    """The daemon's tables in one store file. Each method is one short transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        open_store(self.path, "write").close()  # creates or checks the store itself
        self._conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        with self._tx():
            for statement in _TABLES:
                self._conn.execute(statement)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> QueueDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _rows(self, sql: str, args: Any = ()) -> list[sqlite3.Row]:
        return self._conn.execute(sql, args).fetchall()

    # -- queue ---------------------------------------------------------------------------------
    def add(
        self,
        source_path: str,
        content: str,
        name: str,
        *,
        trials: int | None = None,
        record: str | None = None,
        priority: int = 0,
        schedule_id: int | None = None,
    ) -> int:
        with self._tx() as c:
            last = c.execute("SELECT COALESCE(MAX(position), 0) FROM daemon_queue").fetchone()[0]
            cur = c.execute(
                "INSERT INTO daemon_queue (priority, position, name, source_path, content, "
                "content_hash, trials, record, schedule_id, added_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (priority, last + 1.0, name, source_path, content, content_hash(content),
                 trials, record, schedule_id, time.time()),
            )
            return int(cur.lastrowid)

    def items(self) -> list[Item]:
        """The queue in the order it runs: a running item first, then priority, then position."""
        return [Item(**dict(r)) for r in self._rows(
            "SELECT * FROM daemon_queue ORDER BY state = 'running' DESC, priority DESC, position"
        )]

    def item(self, item_id: int) -> Item:
        rows = self._rows("SELECT * FROM daemon_queue WHERE id = ?", (item_id,))
        if not rows:
            where = "in the history" if self._rows(
                "SELECT 1 FROM daemon_history WHERE id = ?", (item_id,)) else "unknown"
            raise QueueError(f"queue item {item_id} is not in the queue ({where})")
        return Item(**dict(rows[0]))

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
        with self._tx() as c:
            prev = c.execute(
                "SELECT MAX(position) FROM daemon_queue WHERE priority = ? AND position < ? "
                "AND id != ?", (target.priority, target.position, item_id),
            ).fetchone()[0]
            low = prev if prev is not None else target.position - 1.0
            c.execute(
                "UPDATE daemon_queue SET priority = ?, position = ? WHERE id = ?",
                (target.priority, (low + target.position) / 2, item_id),
            )

    def next_item(self, now: float) -> Item | None:
        """The item to run now: one left running by a killed daemon, else the queue head."""
        for item in self.items():
            if item.state == "running" or item.not_before <= now:
                return item
        return None

    def mark_running(self, item_id: int) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE daemon_queue SET state = 'running', "
                "started_at = COALESCE(started_at, ?) WHERE id = ?",
                (time.time(), item_id),
            )

    def set_campaign(self, item_id: int, campaign_uid: str) -> None:
        with self._tx() as c:
            c.execute("UPDATE daemon_queue SET campaign_uid = ? WHERE id = ?",
                      (campaign_uid, item_id))

    def requeue(self, item_id: int, *, attempts: int, not_before: float, message: str) -> None:
        """Back to 'queued' at its place (a retry after a lost agent, a pause, a stop)."""
        with self._tx() as c:
            c.execute(
                "UPDATE daemon_queue SET state = 'queued', attempts = ?, not_before = ?, "
                "message = ? WHERE id = ?",
                (attempts, not_before, message, item_id),
            )

    def finish(self, item_id: int, status: ExitStatus, message: str, run_uids: list[str],
               starts: int = 0) -> None:
        self._finish(self.item(item_id), status, message, run_uids, starts)

    def _finish(self, item: Item, status: ExitStatus, message: str, run_uids: list[str],
                starts: int = 0) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO daemon_history (id, name, source_path, content_hash, trials, "
                "schedule_id, added_at, started_at, stopped_at, exit_status, message, "
                "campaign_uid, run_uids, starts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (item.id, item.name, item.source_path, item.content_hash, item.trials,
                 item.schedule_id, item.added_at, item.started_at, time.time(), status, message,
                 item.campaign_uid, json.dumps(run_uids), starts),
            )
            c.execute("DELETE FROM daemon_queue WHERE id = ?", (item.id,))

    def history(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM daemon_history ORDER BY stopped_at DESC, id DESC LIMIT ?",
                          (limit,))
        out = []
        for r in rows:
            d = dict(r)
            d["run_uids"] = json.loads(d["run_uids"])
            out.append(d)
        return out

    def history_of(self, item_id: int) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM daemon_history WHERE id = ?", (item_id,))
        if not rows:
            return None
        d = dict(rows[0])
        d["run_uids"] = json.loads(d["run_uids"])
        return d

    # -- what the store says about a campaign (read-only, the runner's tables) -----------------
    def campaign_status(self, campaign_uid: str) -> str | None:
        rows = self._rows("SELECT status FROM campaigns WHERE uid = ?", (campaign_uid,))
        return rows[0][0] if rows else None

    def run_uids(self, campaign_uid: str) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT uid FROM runs WHERE campaign_uid = ? ORDER BY wall_time", (campaign_uid,))]

    def run_counts(self, campaign_uid: str) -> dict[str, int]:
        return {r[0] or "incomplete": r[1] for r in self._rows(
            "SELECT exit_status, COUNT(*) FROM runs WHERE campaign_uid = ? GROUP BY exit_status",
            (campaign_uid,))}

    def run_tally(self) -> dict[str, int]:
        """Runs in the whole store by exit status ('incomplete': never stopped)."""
        return {r[0] or "incomplete": r[1] for r in self._rows(
            "SELECT exit_status, COUNT(*) FROM runs GROUP BY exit_status")}

    def success_keys(self, campaign_uid: str) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT unit_key FROM runs WHERE campaign_uid = ? AND exit_status = 'success'",
            (campaign_uid,))]

    def success_times(self) -> list[float]:
        """When each successful run ended (UTC seconds), in order."""
        return [r[0] for r in self._rows(
            "SELECT wall_time + (t_stop - t_start) AS t FROM runs WHERE exit_status = 'success' "
            "ORDER BY t")]

    def unit_durations(self, procedure_groups: list[tuple[str, str]]) -> dict[tuple[str, str],
                                                                             tuple[float, int]]:
        """Mean duration and count of successful stored runs per (procedure,
        unit group): what the ETA is based on."""
        out: dict[tuple[str, str], tuple[float, int]] = {}
        for procedure, group in procedure_groups:
            row = self._rows(
                "SELECT AVG(t_stop - t_start), COUNT(*) FROM (SELECT t_start, t_stop FROM runs "
                "WHERE procedure = ? AND unit_group = ? AND exit_status = 'success' "
                "ORDER BY wall_time DESC LIMIT 200)", (procedure, group))[0]
            if row[1]:
                out[(procedure, group)] = (float(row[0]), int(row[1]))
        return out

    # -- control flags (persist across restarts) -----------------------------------------------
    def mode(self) -> Mode:
        rows = self._rows("SELECT value FROM daemon_control WHERE key = 'mode'")
        return rows[0][0] if rows else "run"  # type: ignore[return-value]

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise QueueError(f"unknown queue mode {mode!r}")
        self._set("mode", mode)

    def _set(self, key: str, value: str) -> None:
        with self._tx() as c:
            c.execute("INSERT INTO daemon_control (key, value) VALUES (?, ?) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def daemon_info(self) -> dict[str, Any]:
        rows = self._rows("SELECT value FROM daemon_control WHERE key = 'daemon'")
        return json.loads(rows[0][0]) if rows else {}

    def set_daemon_info(self, info: dict[str, Any]) -> None:
        self._set("daemon", json.dumps(info))

    # -- schedules -----------------------------------------------------------------------------
    def add_schedule(self, *, name: str, source_path: str, content: str, cron: str, tz: str,
                     missed: str, trials: int | None, record: str | None, priority: int,
                     now: float) -> int:
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO daemon_schedules (name, source_path, content, content_hash, cron, "
                "tz, missed, trials, record, priority, created_at, last_fire) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (name, source_path, content, content_hash(content), cron, tz, missed, trials,
                 record, priority, now, now),
            )
            return int(cur.lastrowid)

    def schedules(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._rows("SELECT * FROM daemon_schedules ORDER BY id")]

    def remove_schedule(self, schedule_id: int) -> None:
        with self._tx() as c:
            if not c.execute("DELETE FROM daemon_schedules WHERE id = ?",
                             (schedule_id,)).rowcount:
                raise QueueError(f"no schedule {schedule_id} (see `hilbench schedule list`)")

    def fires(self, schedule_id: int | None = None, limit: int = 50) -> list[dict[str, Any]]:
        if schedule_id is None:
            return [dict(r) for r in self._rows(
                "SELECT * FROM daemon_fires ORDER BY id DESC LIMIT ?", (limit,))]
        return [dict(r) for r in self._rows(
            "SELECT * FROM daemon_fires WHERE schedule_id = ? ORDER BY id DESC LIMIT ?",
            (schedule_id, limit))]

    def record_fires(self, schedule_id: int, last_fire: float,
                     fires: list[tuple[float, str, str]], queue_item: bool) -> int | None:
        """Record handled fires (time, outcome, note); queue one item for the schedule when
        asked, unless its previous item is still queued or running (then 'queued' fires are
        recorded as 'coalesced'). Advances ``last_fire``. One transaction: a fire is never
        handled twice, even by a daemon killed in the middle."""
        with self._tx() as c:
            sched = c.execute("SELECT * FROM daemon_schedules WHERE id = ?",
                              (schedule_id,)).fetchone()
            if sched is None:
                return None
            item_id = None
            if queue_item:
                busy = sched["last_item_id"] is not None and c.execute(
                    "SELECT 1 FROM daemon_queue WHERE id = ?", (sched["last_item_id"],)
                ).fetchone()
                if busy:
                    fires = [(t, "coalesced" if o == "queued" else o,
                              f"item {sched['last_item_id']} still queued or running; {n}".strip(
                                  "; ")) for t, o, n in fires]
                else:
                    last = c.execute(
                        "SELECT COALESCE(MAX(position), 0) FROM daemon_queue").fetchone()[0]
                    item_id = int(c.execute(
                        "INSERT INTO daemon_queue (priority, position, name, source_path, "
                        "content, content_hash, trials, record, schedule_id, added_at) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?)",
                        (sched["priority"], last + 1.0, sched["name"], sched["source_path"],
                         sched["content"], sched["content_hash"], sched["trials"],
                         sched["record"], schedule_id, time.time()),
                    ).lastrowid)
                    c.execute("UPDATE daemon_schedules SET last_item_id = ? WHERE id = ?",
                              (item_id, schedule_id))
            now = time.time()
            for t, outcome, note in fires:
                c.execute(
                    "INSERT INTO daemon_fires (schedule_id, fire_time, handled_at, outcome, "
                    "item_id, note) VALUES (?,?,?,?,?,?)",
                    (schedule_id, t, now, outcome, item_id if outcome == "queued" else None,
                     note),
                )
            c.execute("UPDATE daemon_schedules SET last_fire = ? WHERE id = ?",
                      (last_fire, schedule_id))
            return item_id
