"""A real PostgreSQL server for tests: each test gets a fresh database, dropped afterwards.

CI (.ci/run) installs and starts Debian's PostgreSQL and makes ``root`` a superuser; the tests
connect through libpq's defaults (local socket, ``PGHOST``/``PGUSER`` if set). Outside CI, with
no server reachable, the PostgreSQL tests skip (under CI=true a skip fails, tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
from collections.abc import Iterator

import pytest

ADMIN_URL = os.environ.get("HILBENCH_TEST_PG", "postgresql:///postgres")


@functools.cache
def server_error() -> str | None:
    """Why no PostgreSQL server can be used (None when one can)."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'hilbench[postgresql]')"
    try:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"no PostgreSQL server at {ADMIN_URL}: {exc}".strip()
    return None


def database_url(name: str) -> str:
    base = ADMIN_URL.rsplit("/", 1)[0]
    return f"{base}/{name}"


@contextlib.contextmanager
def fresh_database(prefix: str = "hb_test") -> Iterator[str]:
    """The URL of a new empty database, dropped (with its connections) on exit."""
    reason = server_error()
    if reason:
        pytest.skip(reason)
    import psycopg

    name = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(name)
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
