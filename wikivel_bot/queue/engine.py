"""Building a SQLAlchemy engine for the queue, with each backend's quirks handled once.

SQLite: every transaction starts with ``BEGIN IMMEDIATE`` so a worker that claims rows holds
the write lock from its first read (two processes can then never claim the same row), WAL
so readers do not block the writer, a busy timeout instead of "database is locked" errors,
and foreign keys switched on. In-memory SQLite shares one connection so every session of
the process sees the same database.

PostgreSQL and MariaDB: connections are recycled hourly (ToolsDB drops idle ones) and
checked before use only after sitting idle (:func:`_ping_when_idle`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, InvalidatePoolError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from wikivel_bot.core.secrets import redact_secrets
from wikivel_bot.errors import DatabaseUnavailable, SchemaOutdated

SQLITE_BUSY_TIMEOUT_S = 60
# A server connection idle longer than this is pinged before use (see _ping_when_idle).
PING_AFTER_IDLE_S = 5.0

# Drivers named in the error when a URL's driver is not installed.
_DRIVER_HINTS = {
    "postgresql": "pip install 'wikivel-bot[postgres]' (psycopg 3; use postgresql+psycopg://)",
    "mysql": "pip install 'wikivel-bot[mysql]' (PyMySQL; use mysql+pymysql://)",
    "mariadb": "pip install 'wikivel-bot[mysql]' (PyMySQL; use mysql+pymysql://)",
}


def create_engine_for(url: str, echo: bool = False, create: bool = True, pool_size: int = 0) -> Engine:
    """An engine for a queue database URL.

    :param url: SQLAlchemy URL: ``sqlite:///path``, ``sqlite://`` (in memory),
        ``postgresql+psycopg://...`` or ``mysql+pymysql://...``.
    :param echo: log every statement.
    :param create: a SQLite file (and its folder) may be created. Commands that only use an
        existing queue pass False, so running one in the wrong directory does not leave a
        stray empty database behind.
    :param pool_size: connections a server database's pool keeps open (0: SQLAlchemy's
        default, 5). A threaded server passes its thread count: with fewer, every request
        beyond the pool opens a connection of its own and closes it again (a new server
        process per request on PostgreSQL).
    :raises DatabaseUnavailable: the URL is malformed, its driver is missing, or a SQLite
        path cannot hold a database (its folder is a file, or cannot be created).
    :raises SchemaOutdated: ``create`` is False and the SQLite file does not exist.
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseUnavailable(f"not a database URL: {redact_secrets(url)!r}") from None
    except ValueError:
        # SQLAlchemy reads the port with int(): "h:notaport" ends in a bare ValueError.
        raise DatabaseUnavailable(
            f"not a database URL: {redact_secrets(url)!r}: the port after the host must be a "
            "number from 1 to 65535 (like ...@host:5432/db)"
        ) from None
    _check_kind(parsed)
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise DatabaseUnavailable(f"port {parsed.port} in URL {_shown(parsed)} is not a port "
                                  "(a number from 1 to 65535)")
    backend = parsed.get_backend_name()
    kwargs: dict = {"echo": echo, "future": True}
    if backend == "sqlite":
        database = parsed.database or ""
        in_memory = database in ("", ":memory:") or "mode=memory" in str(parsed)
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False}
        if in_memory:
            kwargs["poolclass"] = StaticPool
        else:
            _prepare_sqlite_file(parsed, sqlite_path(parsed), create)
    else:
        kwargs["pool_recycle"] = 3600  # ToolsDB and MariaDB drop idle connections
        if pool_size:
            kwargs["pool_size"] = pool_size
    try:
        engine = create_engine(parsed, **kwargs)
    except NoSuchModuleError:
        raise DatabaseUnavailable(
            f"unknown database kind {parsed.drivername!r} in URL {_shown(parsed)} "
            "(use sqlite:///PATH, postgresql+psycopg://… or mysql+pymysql://…)"
        ) from None
    except ImportError as exc:
        hint = _DRIVER_HINTS.get(backend, "install the database driver")
        raise DatabaseUnavailable(
            f"the driver for {parsed.drivername} is not installed ({exc.name}): {hint}"
        ) from None
    if backend == "sqlite":
        _configure_sqlite(engine, in_memory)
    else:
        _ping_when_idle(engine)
    return engine


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection before use when it sat idle, not on every checkout.

    SQLAlchemy's ``pool_pre_ping`` costs a round trip on every checkout, and the web makes
    one checkout per request: on a loaded machine that round trip is a good part of a
    request's latency. A connection dies while idle (the server's idle timeout, ToolsDB's
    reaper, a restart), so one used moments ago is taken as it is; one idle longer than
    PING_AFTER_IDLE_S is pinged, and a dead one is replaced (with every connection older
    than it, as pre-ping does) before the caller sees it.
    """
    dialect = engine.dialect

    @event.listens_for(engine.pool, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return  # a new connection, or one in use moments ago
        try:
            alive = dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if not dialect.is_disconnect(exc, dbapi_connection, None):
                raise
            alive = False
        if not alive:
            # The pool replaces this connection (and older ones) and checks out again.
            raise InvalidatePoolError("the database closed an idle connection")


# Kinds people write that SQLAlchemy does not know, and what to write instead.
_KIND_HINTS = {
    "postgres": "postgresql+psycopg",
    "psql": "postgresql+psycopg",
    "pg": "postgresql+psycopg",
    "mariadb": "mysql+pymysql",
    "sqlite3": "sqlite",
}


def _shown(parsed: Any) -> str:
    return str(parsed.render_as_string(hide_password=True))


def _check_kind(parsed: Any) -> None:
    """A one-line hint for URL schemes other tools accept (``postgres://`` from Heroku,
    libpq and psql) but SQLAlchemy does not."""
    kind = parsed.drivername.split("+")[0]
    if kind in _KIND_HINTS and not (kind == "mariadb" and "+" in parsed.drivername):
        fixed = parsed.set(drivername=_KIND_HINTS[kind])
        raise DatabaseUnavailable(
            f"unknown database kind {kind!r} in URL {_shown(parsed)}: "
            f"write {_KIND_HINTS[kind]}:// instead, e.g. {_shown(fixed)}"
        )


def sqlite_path(parsed: Any) -> Path:
    """The file of a SQLite URL (``sqlite:///db/x.sqlite``, or a ``file:`` URI with
    ``?uri=true``), with ``~`` expanded."""
    database = str(parsed.database or "")
    if str(parsed.query.get("uri", "")).lower() in ("true", "1") and database.startswith("file:"):
        database = database[len("file:"):].split("?", 1)[0]
    return Path(database).expanduser()


def _prepare_sqlite_file(parsed: Any, path: Path, create: bool) -> None:
    """Check (and with ``create`` make) the folder of a SQLite file, one clear line on error."""
    shown = _shown(parsed)
    parent = path.parent
    for folder in (parent, *parent.parents):
        if folder.exists() and not folder.is_dir():
            raise DatabaseUnavailable(
                f"cannot use {shown}: {folder} is a file, not a folder, so no database can be kept under it"
            )
    if not create:
        if not path.exists():
            raise SchemaOutdated(
                f"no queue database at {path} ({shown}): run `wikivel-bot db upgrade` to create it, "
                "or point db.url / WIKIVEL_DB_URL / --db-url at the existing one"
            )
        return
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseUnavailable(
            f"cannot create the folder {parent} for {shown}: {exc.strerror or exc}"
        ) from None


def _configure_sqlite(engine: Engine, in_memory: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from pysqlite so that BEGIN IMMEDIATE below is
        # the only BEGIN that is sent.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_S * 1000}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def backend_name(engine: Engine) -> str:
    """``sqlite``, ``postgresql`` or ``mysql`` (MariaDB reports itself as mysql)."""
    return engine.dialect.name


def redacted_url(engine: Engine) -> str:
    """The engine's URL with any password hidden, for status output and errors."""
    return engine.url.render_as_string(hide_password=True)
