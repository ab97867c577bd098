"""Where a store lives: a ``--db`` value (a SQLite file path or a PostgreSQL URL) parsed once
into a :class:`DbTarget` that opens DB-API connections and SQLAlchemy engines for it.

PostgreSQL URLs are handed to libpq unchanged, so everything libpq reads works as it does for
``psql``: a service file (``postgresql:///?service=lab`` with ``PGSERVICEFILE`` or
``~/.pg_service.conf``, or ``PGSERVICE``), the environment (``PGHOST``, ``PGUSER``,
``PGPASSWORD``, ``PGDATABASE``…), ``~/.pgpass``, and TLS settings in the URL or the service
(``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``…). A password is never shown: ``str()`` of
a target, every error it raises and every log line name the URL with the password replaced by
``***`` (:func:`redact`). Prefer a service file or ``~/.pgpass`` to a password in the URL: a
URL is visible to other users in the process list of any command that is given it.

psycopg and SQLAlchemy are imported only when a PostgreSQL target is opened (or an engine is
asked for), so SQLite commands start as fast as before.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from hilbench.safe_paths import safe_name
from hilbench.store.errors import StoreError, StoreFault, if_damaged

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

Backend = Literal["sqlite", "postgresql"]
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
HIDDEN = "***"
CONNECT_TIMEOUT_S = 10
BUSY_TIMEOUT_S = 10.0  # how long a SQLite connection waits for another's lock
_SECRET_KEYS = frozenset({"password", "sslpassword"})
_URL_IN_TEXT = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"]*", re.IGNORECASE)


def is_url(value: object) -> bool:
    """True when a ``--db`` value names a PostgreSQL database rather than a file."""
    text = str(value)
    return any(text.lower().startswith(scheme + "://") for scheme in SCHEMES)


@dataclass(frozen=True)
class DbTarget:
    """One parsed ``--db`` value. ``str()`` is safe to print (the password is hidden)."""

    backend: Backend
    path: Path | None = None  # sqlite
    url: str = ""  # postgresql: the libpq URL as given (may hold a password: never print it)

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else redact(self.url)

    def __repr__(self) -> str:
        return f"DbTarget({self.backend}, {self})"

    @property
    def is_postgresql(self) -> bool:
        return self.backend == "postgresql"

    @property
    def conninfo(self) -> str:
        """What libpq is given: the URL with any SQLAlchemy driver suffix removed."""
        scheme, rest = self.url.split("://", 1)
        return "postgresql://" + rest if scheme.lower() != "postgresql" else self.url

    @property
    def label(self) -> str:
        """A short name for files about this store (logs, locks): the database name, else
        the service name, safe in a file name."""
        parts = urlsplit(self.conninfo) if self.url else None
        name = ""
        if parts is not None:
            query = dict(parse_qsl(parts.query))
            name = unquote(parts.path.lstrip("/")) or query.get("dbname", "")
            name = name or (f"service-{query['service']}" if "service" in query else "")
            name = name or os.environ.get("PGDATABASE", "") or "postgresql"
        else:
            name = self.path.name if self.path is not None else "store"
        return safe_name(name)

    def exists(self) -> bool:
        """For a file, whether it exists; a database is taken to exist (opening it tells)."""
        return self.path.exists() if self.path is not None else True

    def connect_postgresql(self, *, read_only: bool = False, autocommit: bool = True) -> Any:
        """A psycopg connection, by default in autocommit mode (the store begins and commits
        its transactions itself)."""
        if not self.is_postgresql:
            raise StoreError(f"{self}: not a PostgreSQL URL")
        psycopg = _psycopg(self)
        try:
            conn = psycopg.connect(self.conninfo, autocommit=autocommit, **self._libpq_defaults())
        except psycopg.Error as exc:
            raise StoreFault(
                f"{self}: could not connect to the PostgreSQL store: {self.scrub(str(exc))}"
            ) from None
        if read_only:
            conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        return conn

    def _libpq_defaults(self, application_name: str = "hilbench") -> dict[str, Any]:
        """A connect timeout and an application name, where neither the URL nor the
        environment gives one."""
        kwargs: dict[str, Any] = {}
        params = dict(parse_qsl(urlsplit(self.conninfo).query))
        if "connect_timeout" not in params and not os.environ.get("PGCONNECT_TIMEOUT"):
            kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        if "application_name" not in params and not os.environ.get("PGAPPNAME"):
            kwargs["application_name"] = application_name
        return kwargs

    def engine(self, *, application_name: str = "hilbench", pooled: bool = False) -> Engine:
        """The SQLAlchemy engine for this store, on either back end (migrations, the daemon's
        queue, tools; not the store's hot path, see :mod:`hilbench.store.backend`). ``pooled``:
        a few connections kept and checked before use (a long-lived process, the daemon).

        On SQLite every transaction is begun explicitly, so DDL is transactional too (sqlite3's
        own implicit transactions leave it out): a write transaction takes the file's write lock
        at its start (``BEGIN IMMEDIATE``: one writer at a time, no deadlock between two
        upgraders), and one run with the execution option ``hb_read=True`` takes none."""
        import sqlalchemy
        from sqlalchemy.pool import NullPool

        if self.path is not None:
            engine = sqlalchemy.create_engine(
                f"sqlite:///{self.path}",
                connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
            )

            @sqlalchemy.event.listens_for(engine, "connect")
            def _no_implicit_tx(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.isolation_level = None  # the "begin" below decides

            @sqlalchemy.event.listens_for(engine, "begin")
            def _begin(conn: Any) -> None:
                read = conn.get_execution_options().get("hb_read", False)
                conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

            @sqlalchemy.event.listens_for(engine, "handle_error")
            def _damaged(context: Any) -> None:
                # A page found damaged mid-read is the file's fault, never the statement's:
                # every caller gets the one-line StoreDamaged that names the file and the
                # commands that rescue it (faults such as a full disk stay DBAPIErrors, which
                # the daemon waits out).
                found = if_damaged(self.path, "read the store", context.original_exception)
                if found is not None:
                    raise found from None

            return engine
        psycopg = _psycopg(self)
        kwargs = self._libpq_defaults(application_name)

        def connect() -> Any:
            # psycopg's own errors, which SQLAlchemy wraps as DBAPIError (the daemon waits out
            # a server that is away); each transaction is the caller's.
            return psycopg.connect(self.conninfo, **kwargs)

        if not pooled:
            return sqlalchemy.create_engine("postgresql+psycopg://", creator=connect,
                                            poolclass=NullPool)
        return sqlalchemy.create_engine("postgresql+psycopg://", creator=connect,
                                        pool_pre_ping=True, pool_size=2, max_overflow=2)

    def scrub(self, text: str) -> str:
        """``text`` with this target's password (and any URL's) hidden."""
        secret = _password(self.url)
        if secret:
            text = text.replace(secret, HIDDEN).replace(quote(secret, safe=""), HIDDEN)
        return redact(text)


def parse_db(value: str | os.PathLike[str] | DbTarget | None) -> DbTarget:
    """The store a ``--db`` value names: a PostgreSQL URL, else a file path (None: the
    default, ``$HILBENCH_DB`` or ``./hilbench.sqlite``)."""
    if isinstance(value, DbTarget):
        return value
    if value is None:
        from hilbench.store.paths import default_db_path

        value = default_db_path()
    text = os.fspath(value)
    if is_url(text):
        parts = urlsplit(text)
        if parts.fragment:
            raise StoreError(f"{redact(text)}: a store URL has no #fragment")
        return DbTarget("postgresql", url=text)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise StoreError(
            f"{redact(text)}: unknown store URL scheme; give a file path (SQLite) "
            "or postgresql://…"
        )
    return DbTarget("sqlite", path=Path(text))


def redact(text: object) -> str:
    """``text`` (a string, a DbTarget, an exception…) as a string with the password of every
    URL in it replaced by ``***``."""
    return _URL_IN_TEXT.sub(lambda m: _redact_url(m.group(0)), str(text))


def _redact_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("://", 1)[0] + "://" + HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, hosts = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + HIDDEN
        netloc = f"{userinfo}@{hosts}"
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(key.lower() in _SECRET_KEYS for key, _ in pairs):
        query = "&".join(
            f"{key}={HIDDEN}" if key.lower() in _SECRET_KEYS
            else f"{quote(key)}={quote(val, safe='/:')}"
            for key, val in pairs
        )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, "\0", parts.path, query, parts.fragment)).replace(
        "\0", netloc, 1
    )


def _password(url: str) -> str:
    if not url:
        return ""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo = netloc.rsplit("@", 1)[0]
        if ":" in userinfo:
            return unquote(userinfo.split(":", 1)[1])
    for key, val in parse_qsl(parts.query):
        if key.lower() == "password":
            return val
    return ""


def _psycopg(target: DbTarget) -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            f"{target}: a PostgreSQL store needs psycopg; install it with: "
            "pip install 'hilbench[postgresql]'"
        ) from exc
    return psycopg
