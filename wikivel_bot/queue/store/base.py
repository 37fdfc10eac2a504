"""What every part of :class:`~wikivel_bot.queue.store.Store` stands on: the engine,
transactions, the dialect differences, and the few helpers more than one concern calls.

``Store`` is composed of one mixin per concern (``files``, ``linking``,
``decisions``, ``claims``, ``writes``, ``cursors``); each inherits
:class:`StoreBase` so its methods are typed against the helpers here. This module imports none
of them, and none of them imports ``store.py``: the imports have no cycle. The dialect helpers
are where the backends differ. Locking reads are SQLAlchemy's ``with_for_update()`` everywhere
(a claim's with ``skip_locked=True``): SQLite has no row locks, its compiler leaves the clause
out, and ``BEGIN IMMEDIATE`` (``queue/engine.py``) serialises its writers instead.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator

from sqlalchemy import ColumnElement, Table, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from wikivel_bot.core import states
from wikivel_bot.errors import DatabaseUnavailable, IllegalTransition, NotFound
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import backend_name, redacted_url
from wikivel_bot.queue.rows import to_db_time, utcnow
from wikivel_bot.queue.tables import cursors, files
from wikivel_bot.types import Cursor, FileState

# Rows per INSERT statement when enqueueing: big enough to amortise round trips, small
# enough for MySQL's max_allowed_packet and SQLite's variable limit.
ENQUEUE_CHUNK = 500


class StoreBase:
    """The engine and the helpers the store's concerns share; see :class:`Store`."""

    def __init__(
        self,
        engine: Engine,
        claim_lease_s: int = 900,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """
        :param engine: from :func:`wikivel_bot.queue.engine.create_engine_for`.
        :param claim_lease_s: seconds before a claimed row can be claimed by another worker.
        :param clock: returns naive-UTC now; tests pass a fake one.
        """
        self.engine = engine
        self.backend = backend_name(engine)
        self.claim_lease = timedelta(seconds=claim_lease_s)
        self._now = clock

    def close(self) -> None:
        self.engine.dispose()

    # -- schema ------------------------------------------------------------------------

    def check_schema(self) -> None:
        """Raise SchemaOutdated/DatabaseUnavailable unless the database is at the head."""
        migrate.check_at_head(self.engine)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction (for the read queries of ``queue/``); a failure to connect, or a
        connection lost in the middle (the server went away), becomes DatabaseUnavailable
        (one line)."""
        try:
            with self._connect() as conn, conn.begin():
                yield conn
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            raise DatabaseUnavailable(
                f"lost the connection to {redacted_url(self.engine)}: {exc.orig}".strip()
            ) from None

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection for read queries that need no common snapshot (the web's queue page).

        On PostgreSQL it runs in autocommit, each statement in a snapshot of its own:
        psycopg sends BEGIN and COMMIT as round trips of their own, two of the four a
        page costs. Elsewhere it is :meth:`transaction` (SQLite's reads are in-process;
        switching PyMySQL's autocommit on and off costs more round trips than it saves).
        """
        if self.backend != "postgresql":
            with self.transaction() as conn:
                yield conn
            return
        with self._connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def _connect(self) -> Connection:
        """A pooled connection; a failure to connect becomes DatabaseUnavailable (one line)."""
        try:
            return self.engine.connect()
        except DBAPIError as exc:
            raise DatabaseUnavailable(
                f"cannot connect to {redacted_url(self.engine)}: {exc.orig}"
            ) from None

    # -- helpers -----------------------------------------------------------------------

    def _check_file_move(self, conn: Connection, file_id: int, target: FileState) -> None:
        # Here rather than in files: save_candidates (linking) checks its move too.
        state = conn.execute(select(files.c.state).where(files.c.id == file_id).with_for_update()).scalar()
        if state is None:
            raise NotFound(f"no file row {file_id}")
        if target not in states.FILE_MOVES[FileState(state)]:
            raise IllegalTransition(f"file row {file_id} cannot move from {state} to {target.value}")

    def _claimable(self, table: Table, now: datetime) -> ColumnElement[bool]:
        expired = now - self.claim_lease
        return or_(table.c.claimed_by.is_(None), table.c.claimed_at < expired)

    def _held(self, table: Table, now: datetime) -> ColumnElement[bool]:
        return table.c.claimed_at >= now - self.claim_lease

    def _insert_ignore(self, table: Table) -> Any:
        if self.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table).on_conflict_do_nothing()
        if self.backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            return sqlite_insert(table).on_conflict_do_nothing()
        return insert(table).prefix_with("IGNORE")

    def _save_cursor(self, conn: Connection, source: str, cursor: Cursor, now: object) -> None:
        # Here rather than in cursors: enqueue (files) saves the cursor in the
        # transaction of its batch.
        values = dict(timestamp=to_db_time(cursor.timestamp), log_id=cursor.log_id, updated_at=now)
        done = conn.execute(update(cursors).where(cursors.c.source == source).values(**values)).rowcount
        if not done:
            conn.execute(insert(cursors).values(source=source, **values))
