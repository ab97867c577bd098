"""--db values: a file or a PostgreSQL URL; credentials from libpq's sources, never printed."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from hilbench.store.engine import DbTarget, parse_db, redact
from hilbench.store.errors import StoreError, StoreFault
from tests.postgres import fresh_database


def test_a_path_is_a_sqlite_file_and_a_url_a_postgresql_database(tmp_path: Path) -> None:
    target = parse_db(tmp_path / "x.sqlite")
    assert target.backend == "sqlite" and target.path == tmp_path / "x.sqlite"
    assert str(target) == str(tmp_path / "x.sqlite")
    for url in ("postgresql://lab/db", "postgres://lab/db", "postgresql+psycopg://lab/db",
                "postgresql:///?service=lab"):
        assert parse_db(url).backend == "postgresql"
    assert parse_db("postgresql+psycopg://h/db").conninfo == "postgresql://h/db"
    with pytest.raises(StoreError, match="unknown store URL scheme"):
        parse_db("mysql://u:pw@h/db")


def test_a_password_in_the_url_is_never_shown() -> None:
    target = parse_db("postgresql://alice:s3cr%40t@db.lab:5433/results?sslmode=verify-full")
    shown = f"{target} {target!r}"
    assert "s3cr" not in shown
    assert "postgresql://alice:***@db.lab:5433/results?sslmode=verify-full" in shown
    query = parse_db("postgresql://db.lab/results?user=bob&password=hunter2&sslmode=require")
    assert "hunter2" not in str(query) and "password=***" in str(query)
    # A URL anywhere in a message (a traceback, a log line) is redacted as well.
    shown = redact("failed: postgresql://u:pw@h/d and more")
    assert shown == "failed: postgresql://u:***@h/d and more"
    # Wrong scheme errors redact too
    with pytest.raises(StoreError) as info:
        parse_db("mysql://u:topsecret@h/db")
    assert "topsecret" not in str(info.value)


@pytest.fixture
def password_role():
    """A login role with a password, for connections over TCP (password authentication)."""
    with fresh_database("hb_pgstore") as url:
        import psycopg

        role, password = f"hb_pgstore_{secrets.token_hex(4)}", secrets.token_hex(12)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        dbname = url.rsplit("/", 1)[1]
        try:
            yield role, password, dbname
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP OWNED BY {role}')
            with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{dbname}" WITH (FORCE)')
                conn.execute(f"DROP ROLE {role}")


def _current(target: DbTarget) -> tuple[str, str]:
    conn = target.connect_postgresql()
    try:
        return conn.execute("SELECT current_user, current_database()").fetchone()
    finally:
        conn.close()


def test_credentials_come_from_the_environment_or_a_service_file(
    password_role, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    role, password, dbname = password_role
    monkeypatch.setenv("PGPASSWORD", password)
    monkeypatch.setenv("PGUSER", role)
    assert _current(parse_db(f"postgresql://127.0.0.1/{dbname}")) == (role, dbname)
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.delenv("PGUSER")

    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[lab]\nhost=127.0.0.1\ndbname={dbname}\nuser={role}\npassword={password}\n"
    )
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    target = parse_db("postgresql:///?service=lab")
    assert _current(target) == (role, dbname)
    monkeypatch.setenv("PGSERVICE", "lab")
    assert _current(parse_db("postgresql://")) == (role, dbname)
    assert password not in str(target)


def test_a_refused_password_is_reported_without_it(password_role) -> None:
    role, password, dbname = password_role
    wrong = password[::-1]
    target = parse_db(f"postgresql://{role}:{wrong}@127.0.0.1/{dbname}")
    with pytest.raises(StoreFault) as info:
        target.connect_postgresql()
    message = str(info.value)
    assert "password authentication failed" in message
    assert wrong not in message and f"{role}:***@127.0.0.1" in message


def test_tls_settings_reach_libpq(password_role, tmp_path: Path) -> None:
    role, password, dbname = password_role
    missing = tmp_path / "no-such-root.crt"
    target = parse_db(
        f"postgresql://{role}:{password}@127.0.0.1/{dbname}"
        f"?sslmode=verify-full&sslrootcert={missing}"
    )
    with pytest.raises(StoreFault) as info:
        target.connect_postgresql()
    message = str(info.value)
    # libpq read sslrootcert (or found the server has no TLS): the settings were passed through
    assert "no-such-root.crt" in message or "SSL" in message
    assert password not in message
