"""Find a store file's daemon (its control address, host and pid) without SQLAlchemy.

`hilbench status` must answer in well under 200 ms while the daemon keeps both cores busy;
importing SQLAlchemy alone costs ~170 ms of that. Measured both ways with `hilbench bench
status` (2026-11-29, 100 whole `status --json` commands while 1 ms units ran, load 4.3-5.1 on
2 cores): this path, median 416-495 ms, p99 678-1150 ms; the same row read through
:meth:`QueueDB.daemon_info` (SQLAlchemy), median 1011 ms, p99 1683 ms. The heartbeat row (see
:mod:`hilbench.daemon.queue_db`) is therefore read here with the standard library's sqlite3,
read-only. A PostgreSQL queue, or a file without the table yet, goes the full way
(:meth:`QueueDB.daemon_info`).
"""

from __future__ import annotations

import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

from hilbench.lifeline import pid_alive
from hilbench.store.engine import is_url

DOWN_AFTER_S = 30.0  # a daemon beats every 2 s (manager.HEARTBEAT_S): 15 missed beats is down


def daemon_row(db: Path | str, bench: str | None = None) -> dict[str, Any] | None:
    """``bench``'s heartbeat row in store file ``db`` (None: the daemon seen last); {} when no
    daemon has run there; None when this light path cannot tell (a URL, no such file or table)."""
    if is_url(db) or not Path(db).is_file():
        return None
    try:
        conn = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        conn.row_factory = sqlite3.Row
        sql = "SELECT bench, host, pid, control, state, last_seen FROM daemon_benches"
        rows = conn.execute(sql + (" WHERE bench = ?" if bench else ""),
                            (bench,) if bench else ()).fetchall()
    except (sqlite3.Error, UnicodeDecodeError):  # a damaged row's text: the full way says so
        return None
    finally:
        conn.close()
    return dict(max(rows, key=lambda r: r["last_seen"])) if rows else {}


def is_up(row: dict[str, Any], down_after_s: float = DOWN_AFTER_S,
          now: float | None = None) -> bool:
    """Whether the daemon of heartbeat ``row`` still serves its bench: not stopped, its pid
    alive when it is of this host, and seen within ``down_after_s``."""
    if not row or row.get("state") == "stopped":
        return False
    if row.get("host") == socket.gethostname() and not pid_alive(row.get("pid")):
        return False
    return (time.time() if now is None else now) - float(row["last_seen"]) <= down_after_s
