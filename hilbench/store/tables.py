"""The store's schema at its newest version, as SQLAlchemy Core tables: the one description
both back ends are checked against (tests/store/test_store_migrations.py compares a migrated
PostgreSQL database and a SQLite store made by every past version with it).

Changing the schema: add an Alembic revision under ``hilbench/store/migrations/versions``
named by the next schema version (``0008_…``), change these tables to match, and raise
``SCHEMA_VERSION`` in :mod:`hilbench.store.schema`. The revision runs on SQLite files as on
PostgreSQL (every revision from 0006 on): the one way the schema, the daemon's tables included,
evolves.

Types are chosen to mean the same on both: ``Double`` (PostgreSQL ``double precision``; a
PostgreSQL ``real`` would lose half the digits), ``Integer`` counts (their ``SUM`` stays an
integer), ``LargeBinary`` for sample arrays, JSON as text (stored byte for byte as written).
PostgreSQL tables read in insertion order carry an explicit ``rowid`` identity column: SQLite
has it implicitly, so ``ORDER BY wall_time, rowid`` means the same on both.
"""

from __future__ import annotations

import sqlalchemy as sa

STATUS_CHECK = "{} IN ('success', 'fail', 'abort')"
# A run may also end 'unverified' (schema version 5): its timing could not be verified.
RUN_STATUS_CHECK = "{} IN ('success', 'fail', 'abort', 'unverified')"
ROWID = "rowid"  # implicit in SQLite; an identity column in PostgreSQL

metadata = sa.MetaData()

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: an alias of its rowid


def _rowid() -> sa.Column:
    return sa.Column(ROWID, sa.BigInteger, sa.Identity(), nullable=False)


campaigns = sa.Table(
    "campaigns",
    metadata,
    sa.Column("uid", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("config", sa.Text, nullable=False),  # JSON
    sa.Column("wall_start", sa.Double, nullable=False),  # UTC seconds
    sa.Column("wall_stop", sa.Double),
    sa.Column("status", sa.Text, sa.CheckConstraint(STATUS_CHECK.format("status"))),
    sa.Column("resumes", sa.Integer, nullable=False, server_default="0"),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    _rowid(),
)
sa.Index("campaigns_by_name", campaigns.c.name, campaigns.c.wall_start)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("uid", sa.Text, primary_key=True),
    sa.Column("campaign_uid", sa.Text, nullable=False),
    sa.Column("unit_key", sa.Text, nullable=False),
    sa.Column("procedure", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),  # JSON
    sa.Column("agents", sa.Text, nullable=False),  # JSON
    sa.Column("t_start", sa.Double, nullable=False),  # orchestrator monotonic clock
    sa.Column("wall_time", sa.Double, nullable=False),  # UTC seconds at t_start
    sa.Column("hilbench_version", sa.Text, nullable=False),
    sa.Column("t_stop", sa.Double),
    sa.Column("exit_status", sa.Text,
              sa.CheckConstraint(RUN_STATUS_CHECK.format("exit_status"))),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    sa.Column("simulated", sa.Integer, nullable=False, server_default="0"),
    sa.Column("simulation", sa.Text, nullable=False, server_default=""),
    sa.Column("unit_group", sa.Text, nullable=False, server_default=""),
    _rowid(),
)
sa.Index("runs_by_unit", runs.c.campaign_uid, runs.c.unit_key, runs.c.exit_status)
sa.Index("runs_by_time", runs.c.wall_time)
sa.Index("runs_by_campaign", runs.c.campaign_uid, runs.c.wall_time)
sa.Index("runs_by_procedure", runs.c.procedure, runs.c.wall_time)
# Every column `hilbench results` groups by, so that grouping reads the index alone.
sa.Index(
    "runs_by_group", runs.c.campaign_uid, runs.c.procedure, runs.c.unit_group, runs.c.exit_status,
    runs.c.wall_time, runs.c.simulated, runs.c.simulation,
)

phases = sa.Table(
    "phases",
    metadata,
    sa.Column("uid", sa.Text, primary_key=True),
    sa.Column("run_uid", sa.Text, sa.ForeignKey("runs.uid"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("t_start", sa.Double, nullable=False),
    sa.Column("clock_offsets", sa.Text, nullable=False),  # JSON
    sa.Column("t_stop", sa.Double),
    sa.Column("exit_status", sa.Text, sa.CheckConstraint(STATUS_CHECK.format("exit_status"))),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    _rowid(),
)
sa.Index("phases_by_run", phases.c.run_uid)

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", Id, primary_key=True),  # stream order
    sa.Column("run_uid", sa.Text, sa.ForeignKey("runs.uid"), nullable=False),
    sa.Column("phase_uid", sa.Text, sa.ForeignKey("phases.uid")),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("t", sa.Double, nullable=False),
    sa.Column("data", sa.Text, nullable=False),  # JSON
)
sa.Index("events_by_run", events.c.run_uid, events.c.name)

samples = sa.Table(
    "samples",
    metadata,
    sa.Column("id", Id, primary_key=True),  # stream order; one row per batch
    sa.Column("run_uid", sa.Text, sa.ForeignKey("runs.uid"), nullable=False),
    sa.Column("phase_uid", sa.Text, sa.ForeignKey("phases.uid")),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("n", sa.Integer, nullable=False),
    sa.Column("t_first", sa.Double),
    sa.Column("t_last", sa.Double),
    sa.Column("t", sa.LargeBinary, nullable=False),  # stamps: store/sample_blobs.py
    sa.Column("vals", sa.LargeBinary, nullable=False),  # float64/32: store/sample_blobs.py
    sa.Column("meta", sa.Text, nullable=False),  # JSON
)
sa.Index("samples_by_run", samples.c.run_uid, samples.c.source)

metrics = sa.Table(
    "metrics",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("run_uid", sa.Text, sa.ForeignKey("runs.uid"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("value", sa.Double),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("uncertainty", sa.Double),
    sa.Column("meta", sa.Text, nullable=False),  # JSON
    sa.UniqueConstraint("run_uid", "name"),
)


# -- the daemon's tables (schema version 7; hilbench.daemon.queue_db reads and writes them) ----

daemon_queue = sa.Table(
    "daemon_queue", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("position", sa.Float, nullable=False),          # order among items of one priority
    sa.Column("state", sa.Text, nullable=False, server_default="queued"),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("source_path", sa.Text, nullable=False),         # relative paths inside resolve there
    sa.Column("content", sa.Text, nullable=False),             # the campaign file when queued
    sa.Column("content_hash", sa.Text, nullable=False),        # sha256 of content
    sa.Column("trials", sa.Integer),
    sa.Column("record", sa.Text),
    sa.Column("schedule_id", sa.Integer),
    sa.Column("added_at", sa.Float, nullable=False),           # UTC seconds
    sa.Column("started_at", sa.Float),
    sa.Column("campaign_uid", sa.Text),                        # set once its first run started
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("not_before", sa.Float, nullable=False, server_default="0"),  # retry back-off
    sa.Column("message", sa.Text, nullable=False, server_default=""),
    sa.Column("bench", sa.Text),                               # needed / claimed by; NULL: any
    sa.Column("starts", sa.Integer, nullable=False, server_default="0"),  # its campaign's starts
    sa.Column("outcome", sa.Text),                             # how its last start ended (session)
    sa.CheckConstraint("state IN ('queued', 'running')", name="daemon_queue_state"),
    sqlite_autoincrement=True,
)
daemon_history = sa.Table(
    "daemon_history", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),  # the queue item's id
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("source_path", sa.Text, nullable=False),
    sa.Column("content_hash", sa.Text, nullable=False),
    sa.Column("trials", sa.Integer),
    sa.Column("schedule_id", sa.Integer),
    sa.Column("added_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float),
    sa.Column("stopped_at", sa.Float, nullable=False),
    sa.Column("exit_status", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False, server_default=""),
    sa.Column("campaign_uid", sa.Text),
    sa.Column("run_uids", sa.Text, nullable=False, server_default="[]"),  # JSON
    sa.Column("starts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("bench", sa.Text),
    sa.Column("outcome", sa.Text),  # why it ended: the session's outcome, or why it was refused
    sa.CheckConstraint("exit_status IN ('completed', 'failed', 'aborted', 'stopped', 'removed')",
                       name="daemon_history_exit_status"),
)
daemon_control = sa.Table(
    "daemon_control", metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
daemon_schedules = sa.Table(
    "daemon_schedules", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("source_path", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("content_hash", sa.Text, nullable=False),
    sa.Column("cron", sa.Text, nullable=False),
    sa.Column("tz", sa.Text, nullable=False),
    sa.Column("missed", sa.Text, nullable=False),
    sa.Column("trials", sa.Integer),
    sa.Column("record", sa.Text),
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_fire", sa.Float, nullable=False),          # every fire up to here is handled
    sa.Column("last_item_id", sa.Integer),
    sa.Column("bench", sa.Text),                               # its items' bench; NULL: any
    sa.CheckConstraint("missed IN ('skip', 'run-once')", name="daemon_schedules_missed"),
    sqlite_autoincrement=True,
)
daemon_fires = sa.Table(
    "daemon_fires", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("schedule_id", sa.Integer, nullable=False),
    sa.Column("fire_time", sa.Float, nullable=False),          # when cron said (UTC s)
    sa.Column("handled_at", sa.Float, nullable=False),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("item_id", sa.Integer),
    sa.Column("note", sa.Text, nullable=False, server_default=""),
    sa.CheckConstraint("outcome IN ('queued', 'coalesced', 'missed', 'error')",
                       name="daemon_fires_outcome"),
)
daemon_benches = sa.Table(
    "daemon_benches", metadata,
    sa.Column("bench", sa.Text, primary_key=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("control", sa.Text),
    sa.Column("public_key", sa.Text),
    sa.Column("started_at", sa.Float),
    sa.Column("worker_pid", sa.Integer),
    sa.Column("version", sa.Text),
    sa.Column("state", sa.Text, nullable=False, server_default=""),
    sa.Column("detail", sa.Text, nullable=False, server_default=""),
    sa.Column("item_id", sa.Integer),
    sa.Column("serves", sa.Text, nullable=False, server_default="[]"),  # JSON: agents, instruments
    sa.Column("push", sa.Text, nullable=False, server_default="{}"),    # JSON: push-to progress
    sa.Column("last_seen", sa.Float, nullable=False),
)
sa.Index("daemon_fires_once", daemon_fires.c.schedule_id, daemon_fires.c.fire_time, unique=True)
sa.Index("daemon_queue_claim", daemon_queue.c.state, daemon_queue.c.bench, daemon_queue.c.priority)
