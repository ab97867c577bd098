"""Schema version 7: the daemon's queue, history, control flags, schedules, fires and bench
heartbeats join the store's schema, so one history of revisions makes and upgrades every table.

Before this the daemon created its tables on first use and added columns by ``ALTER TABLE`` when
a newer hilbench found them missing; a store or queue database of any of those shapes (no queue
tables yet, or tables without ``bench``, ``starts`` or ``outcome``) is brought to this one here:
tables made when missing, missing columns added, indexes made when missing. The same steps on
both back ends (SQLite runs this revision through Alembic too, from
:func:`hilbench.store.schema.migrate`). Frozen: the tables as they are at version 7, never edited.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import CheckConstraint, Column, Float, Integer, MetaData, Table, Text, inspect

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

meta = MetaData()
_queue = Table(
    "daemon_queue", meta,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("position", Float, nullable=False),          # order among items of one priority
    Column("state", Text, nullable=False, server_default="queued"),
    Column("name", Text, nullable=False),
    Column("source_path", Text, nullable=False),         # relative paths inside resolve there
    Column("content", Text, nullable=False),             # the campaign file when queued
    Column("content_hash", Text, nullable=False),        # sha256 of content
    Column("trials", Integer),
    Column("record", Text),
    Column("schedule_id", Integer),
    Column("added_at", Float, nullable=False),           # UTC seconds
    Column("started_at", Float),
    Column("campaign_uid", Text),                        # set once its first run started
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("not_before", Float, nullable=False, server_default="0"),  # retry back-off
    Column("message", Text, nullable=False, server_default=""),
    Column("bench", Text),                               # needed / claimed by; NULL: any
    Column("starts", Integer, nullable=False, server_default="0"),  # its campaign's starts
    Column("outcome", Text),                             # how its last start ended (session)
    CheckConstraint("state IN ('queued', 'running')", name="daemon_queue_state"),
    sqlite_autoincrement=True,
)
_history = Table(
    "daemon_history", meta,
    Column("id", Integer, primary_key=True, autoincrement=False),  # the queue item's id
    Column("name", Text, nullable=False),
    Column("source_path", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("trials", Integer),
    Column("schedule_id", Integer),
    Column("added_at", Float, nullable=False),
    Column("started_at", Float),
    Column("stopped_at", Float, nullable=False),
    Column("exit_status", Text, nullable=False),
    Column("message", Text, nullable=False, server_default=""),
    Column("campaign_uid", Text),
    Column("run_uids", Text, nullable=False, server_default="[]"),  # JSON
    Column("starts", Integer, nullable=False, server_default="0"),
    Column("bench", Text),
    Column("outcome", Text),  # why it ended: the session's outcome, or why it was refused
    CheckConstraint("exit_status IN ('completed', 'failed', 'aborted', 'stopped', 'removed')",
                    name="daemon_history_exit_status"),
)
_control = Table(
    "daemon_control", meta,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)
_schedules = Table(
    "daemon_schedules", meta,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", Text, nullable=False),
    Column("source_path", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("cron", Text, nullable=False),
    Column("tz", Text, nullable=False),
    Column("missed", Text, nullable=False),
    Column("trials", Integer),
    Column("record", Text),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("created_at", Float, nullable=False),
    Column("last_fire", Float, nullable=False),          # every fire up to here is handled
    Column("last_item_id", Integer),
    Column("bench", Text),                               # its items' bench; NULL: any
    CheckConstraint("missed IN ('skip', 'run-once')", name="daemon_schedules_missed"),
    sqlite_autoincrement=True,
)
_fires = Table(
    "daemon_fires", meta,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("schedule_id", Integer, nullable=False),
    Column("fire_time", Float, nullable=False),          # when cron said (UTC s)
    Column("handled_at", Float, nullable=False),
    Column("outcome", Text, nullable=False),
    Column("item_id", Integer),
    Column("note", Text, nullable=False, server_default=""),
    CheckConstraint("outcome IN ('queued', 'coalesced', 'missed', 'error')",
                    name="daemon_fires_outcome"),
)
_benches = Table(
    "daemon_benches", meta,
    Column("bench", Text, primary_key=True),
    Column("host", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("control", Text),
    Column("public_key", Text),
    Column("started_at", Float),
    Column("worker_pid", Integer),
    Column("version", Text),
    Column("state", Text, nullable=False, server_default=""),
    Column("detail", Text, nullable=False, server_default=""),
    Column("item_id", Integer),
    Column("serves", Text, nullable=False, server_default="[]"),  # JSON: agents, instruments
    Column("push", Text, nullable=False, server_default="{}"),    # JSON: push-to progress
    Column("last_seen", Float, nullable=False),
)
# Columns added after the daemon's first release, which a table made then lacks.
ADDED_COLUMNS = (("daemon_queue", "bench", "TEXT"), ("daemon_history", "bench", "TEXT"),
                 ("daemon_schedules", "bench", "TEXT"), ("daemon_queue", "outcome", "TEXT"),
                 ("daemon_queue", "starts", "INTEGER NOT NULL DEFAULT 0"),
                 ("daemon_history", "outcome", "TEXT"))
INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS daemon_fires_once ON daemon_fires (schedule_id, fire_time)",
    "CREATE INDEX IF NOT EXISTS daemon_queue_claim ON daemon_queue (state, bench, priority)",
)


def upgrade() -> None:
    bind = op.get_bind()
    meta.create_all(bind, checkfirst=True)
    present = inspect(bind)
    for table, column, kind in ADDED_COLUMNS:
        if column not in {col["name"] for col in present.get_columns(table)}:
            op.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    for statement in INDEXES:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded")
