"""Alembic's entry: migrate on the connection hilbench hands over (never from a URL here)."""

from __future__ import annotations

from alembic import context

from hilbench.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("hilbench's migrations run from hilbench.store.migrations.upgrade()")
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
