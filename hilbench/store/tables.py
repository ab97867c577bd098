"""The store's schema at its newest version, as SQLAlchemy Core tables: the one description
both back ends are checked against (tests/store/test_store_migrations.py compares a migrated
PostgreSQL database and a SQLite store made by every past version with it).

Changing the schema: add an Alembic revision under ``hilbench/store/migrations/versions``
named by the next schema version (``0005_…``), change these tables to match, and raise
``SCHEMA_VERSION`` in :mod:`hilbench.store.schema`.

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
    sa.Column("t", sa.LargeBinary, nullable=False),  # float64 little-endian
    sa.Column("vals", sa.LargeBinary, nullable=False),  # float64 little-endian
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
