"""Finished runs of a bench's store file pushed to a shared PostgreSQL database, by run id.

The bench's store file is its journal: the runner writes there whatever happens to the network.
Finished runs (stopped with any exit status) go to the shared database in batches with the
store's own copy (idempotent by run id: a run already there is left as it is), and each pushed
run id is then noted in the store file (``daemon_pushed``). A push cut off half-way, by a lost
link or a killed process, is simply redone: what already arrived is skipped, so nothing is lost
and nothing is duplicated. `hilbench store push` and the daemon's ``--push-to`` both use it.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hilbench.store.engine import redact
from hilbench.store.schema import BUSY_TIMEOUT_S, open_store

log = logging.getLogger(__name__)

BATCH = 200
_TABLE = ("CREATE TABLE IF NOT EXISTS daemon_pushed (target TEXT NOT NULL, run_uid TEXT NOT NULL,"
          " pushed_at REAL NOT NULL, PRIMARY KEY (target, run_uid))")
# The state of each campaign row as last pushed: a campaign whose row changed since (it ended,
# was resumed, aborted) is pushed again, even when it has no run left to push.
_CAMPAIGNS = ("CREATE TABLE IF NOT EXISTS daemon_pushed_campaigns (target TEXT NOT NULL,"
              " campaign_uid TEXT NOT NULL, state TEXT NOT NULL,"
              " PRIMARY KEY (target, campaign_uid))")
_STATE = "COALESCE(status, '') || '|' || COALESCE(wall_stop, '') || '|' || resumes || '|' || " \
         "COALESCE(reason, '')"


def _open(store: Path) -> sqlite3.Connection:
    open_store(store, "write").close()
    conn = sqlite3.connect(store, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute(_TABLE)
    conn.execute(_CAMPAIGNS)
    return conn


def pending(store: Path, target: str, limit: int | None = None) -> list[str]:
    """Finished runs of ``store`` not yet pushed to ``target``, oldest first."""
    conn = _open(store)
    try:
        sql = ("SELECT uid FROM runs WHERE exit_status IS NOT NULL AND uid NOT IN "
               "(SELECT run_uid FROM daemon_pushed WHERE target = ?) ORDER BY wall_time, uid")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [r[0] for r in conn.execute(sql, (redact(target),))]
    finally:
        conn.close()


def changed_campaigns(store: Path, target: str) -> list[tuple[str, str]]:
    """(uid, state) of the campaigns with a pushed run whose row changed since it was pushed."""
    conn = _open(store)
    try:
        return list(conn.execute(
            f"SELECT c.uid, {_STATE} FROM campaigns c WHERE c.uid IN (SELECT r.campaign_uid "
            "FROM runs r JOIN daemon_pushed p ON p.run_uid = r.uid AND p.target = ?) AND "
            f"{_STATE} IS NOT (SELECT state FROM daemon_pushed_campaigns "
            "WHERE target = ? AND campaign_uid = c.uid)", (redact(target), redact(target))))
    finally:
        conn.close()


def push_campaigns(store: Path, target: str) -> int:
    """Push the campaign rows that changed since their runs were pushed (an end, a resume)."""
    from hilbench.store.copy import copy_campaigns

    changed = changed_campaigns(store, target)
    if not changed:
        return 0
    copy_campaigns(store, target, [uid for uid, _ in changed])
    conn = _open(store)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR REPLACE INTO daemon_pushed_campaigns VALUES (?, ?, ?)",
                         [(redact(target), uid, state) for uid, state in changed])
        conn.execute("COMMIT")
    finally:
        conn.close()
    return len(changed)


def push_once(store: Path, target: str, batch: int = BATCH) -> tuple[int, int]:
    """Push one batch, then the campaign rows that changed; returns (runs pushed, runs still
    pending)."""
    from hilbench.store.copy import copy_runs

    uids = pending(store, target, batch)
    if not uids:
        push_campaigns(store, target)
        return 0, 0
    copy_runs(store, target, run_ids=uids)
    conn = _open(store)
    try:
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR IGNORE INTO daemon_pushed VALUES (?, ?, ?)",
                         [(redact(target), uid, now) for uid in uids])
        conn.execute("COMMIT")
    finally:
        conn.close()
    push_campaigns(store, target)
    return len(uids), len(pending(store, target))


def push_all(store: Path, target: str, progress: Callable[[int, int], None] | None = None,
             batch: int = BATCH) -> int:
    """Push every finished run not yet pushed; ``progress(pushed so far, left)`` per batch."""
    total = 0
    while True:
        done, left = push_once(store, target, batch)
        total += done
        if progress is not None and done:
            progress(total, left)
        if not done or not left:
            return total


class Pusher:
    """The daemon's pusher: a thread that pushes pending runs every ``interval_s`` and, while
    the database is out of reach, keeps trying (the journal holds everything meanwhile)."""

    def __init__(self, store: Path, target: str, interval_s: float = 5.0) -> None:
        self.store = Path(store)
        self._target = target
        self.target = redact(target)
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._status: dict[str, Any] = {"to": self.target, "pushed": 0, "pending": None,
                                        "last_push_at": None, "last_error": "",
                                        "failing_since": None}
        self._thread = threading.Thread(target=self._loop, daemon=True, name="push")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def status(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._status)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                while not self._stop.is_set():
                    done, left = push_once(self.store, self._target)
                    with self._lock:
                        if self._status["failing_since"] is not None:
                            log.warning("push to %s works again", self.target)
                        self._status.update(pushed=self._status["pushed"] + done, pending=left,
                                            last_error="", failing_since=None)
                        if done:
                            self._status["last_push_at"] = time.time()
                    if done:
                        log.info("pushed %d run(s) to %s, %d pending", done, self.target, left)
                    if not left:
                        break
            except Exception as exc:  # the network, the server: logged, retried, never fatal
                message = redact(f"{type(exc).__name__}: {exc}").splitlines()[0][:300]
                with self._lock:
                    first = self._status["failing_since"] is None
                    self._status.update(last_error=message)
                    if first:
                        self._status["failing_since"] = time.time()
                    with contextlib.suppress(sqlite3.Error):
                        self._status["pending"] = len(pending(self.store, self._target))
                (log.warning if first else log.info)(
                    "push to %s failed (runs stay in %s, retried every %g s): %s",
                    self.target, self.store, self.interval_s, message)
            self._stop.wait(self.interval_s)
