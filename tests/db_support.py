"""Queue databases for tests: every backend behind one parametrized fixture.

The server-backed variants use the URLs in ``WIKIVEL_TEST_POSTGRES_URL`` and
``WIKIVEL_TEST_MYSQL_URL`` (CI sets both). Each test session creates its own scratch
database on the server, so parallel sessions and developers never see each other's rows,
and drops it at the end. Without the variable a variant is skipped with a message naming it;
with ``WIKIVEL_TEST_REQUIRE_SERVERS=1`` (set by .ci/run) it fails instead.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Dict, Optional

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import metadata

SERVER_VARIABLES = {"postgresql": "WIKIVEL_TEST_POSTGRES_URL", "mysql": "WIKIVEL_TEST_MYSQL_URL"}
BACKENDS = ("sqlite-file", "sqlite-memory", "postgresql", "mysql")


def server_url(backend: str) -> str:
    """The admin URL for a server backend, or skip/fail the test when it is not configured."""
    variable = SERVER_VARIABLES[backend]
    url = os.environ.get(variable)
    if not url:
        message = f"{backend} store tests need {variable} (e.g. set by .ci/run)"
        if os.environ.get("WIKIVEL_TEST_REQUIRE_SERVERS"):
            pytest.fail(message)
        pytest.skip(message)
    return url


class ScratchDatabase:
    """A database of its own on a server, created on first use and dropped at exit."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.url: Optional[str] = None
        self.migrated = False
        self._admin = None

    def get(self) -> str:
        if self.url is None:
            admin_url = make_url(server_url(self.backend))
            name = f"wikivel_test_{uuid.uuid4().hex[:10]}"
            self._admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
            with self._admin.connect() as conn:
                extra = " CHARACTER SET utf8mb4" if self.backend == "mysql" else ""
                conn.execute(text(f"CREATE DATABASE {name}{extra}"))
            self.url = admin_url.set(database=name).render_as_string(hide_password=False)
            self.name = name
        return self.url

    def drop(self) -> None:
        if self._admin is not None and self.url is not None:
            with self._admin.connect() as conn:
                if self.backend == "postgresql":
                    conn.execute(text(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)"))
                else:
                    conn.execute(text(f"DROP DATABASE IF EXISTS {self.name}"))
            self._admin.dispose()


def empty_tables(url: str) -> None:
    """Delete every row (children first) so a test starts from an empty, migrated queue."""
    engine = create_engine_for(url)
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())
    engine.dispose()


def open_store(url: str, **kwargs: object) -> Store:
    return Store(create_engine_for(url), **kwargs)  # type: ignore[arg-type]



def queue_url(backend: str, tmp_path: Path, scratch_databases: Dict[str, ScratchDatabase]) -> str:
    """A URL of an empty queue database of ``backend`` (one of BACKENDS); a server's is
    migrated to the head once per session and emptied for every test."""
    if backend == "sqlite-file":
        return f"sqlite:///{tmp_path / 'queue.sqlite'}"
    if backend == "sqlite-memory":
        # One private in-memory database per engine (StaticPool shares its connection).
        return "sqlite://"
    scratch = scratch_databases[backend]
    url = scratch.get()
    if not scratch.migrated:
        engine = create_engine_for(url)
        migrate.upgrade(engine)
        engine.dispose()
        scratch.migrated = True
    empty_tables(url)
    return url
