"""Schema version 6: the ``runs_by_group`` index also holds each run's start time and whether
(and what) it simulated, everything `hilbench results` groups and summarises runs by, so the
grouping reads that index alone. At 100 000 stored runs, reading a table row per run for those
three columns took most of the command's time (SQLite: 100 ms CPU of the grouping's 125 ms).

The same statements on both back ends (the first revision SQLite runs through Alembic too, from
:func:`hilbench.store.schema.migrate`). Frozen: never edit a revision that has shipped.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

STATEMENTS = (
    "DROP INDEX runs_by_group",
    "CREATE INDEX runs_by_group ON runs"
    " (campaign_uid, procedure, unit_group, exit_status, wall_time, simulated, simulation)",
)


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded")
