"""Schema version 5: a run may end ``unverified`` (its timing could not be verified against
its link's measured bound, as on a loaded host: no answer, tried again and counted, never
averaged and never a failure). Only the runs' status check changes; phases and campaigns keep
success / fail / abort.

SQLite applies :data:`hilbench.store.schema.SQLITE_MIGRATIONS` [5] itself (the check lives in
the table's SQL, which SQLite lets a transaction rewrite for a looser check); PostgreSQL replaces
the named check constraint here. Frozen: never edit a revision that has shipped.
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

POSTGRESQL = (
    "ALTER TABLE runs DROP CONSTRAINT runs_exit_status_check",
    "ALTER TABLE runs ADD CONSTRAINT runs_exit_status_check"
    " CHECK (exit_status IN ('success', 'fail', 'abort', 'unverified'))",
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        raise RuntimeError(
            "a SQLite store reaches version 5 through hilbench.store.schema.migrate "
            "(SQLITE_MIGRATIONS), which then stamps it with this revision"
        )
    for statement in POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded")
