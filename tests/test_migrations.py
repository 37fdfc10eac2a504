"""Migrations: empty → head → empty on every backend; models, migrations and snapshots agree."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from tests.db_support import open_store
from wikivel_bot.queue import migrate, snapshot
from wikivel_bot.queue.tables import metadata

TABLES = {"files", "candidates", "decisions", "edits", "cursors"}


def test_upgrade_and_downgrade_round_trip(db_url: str) -> None:
    store = open_store(db_url)
    engine = store.engine
    migrate.downgrade(engine, "base")  # the fixture left it at head
    assert TABLES.isdisjoint(inspect(engine).get_table_names())
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert TABLES <= set(inspect(engine).get_table_names())
    assert migrate.current_revision(engine) == migrate.head_revision()
    migrate.check_at_head(engine)
    store.close()


def test_migrations_match_the_table_definitions(db_url: str) -> None:
    """A column added to tables.py without a migration (or the reverse) fails here."""
    store = open_store(db_url)
    migrate.upgrade(store.engine)
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, metadata)
    store.close()
    assert diff == []


def test_schema_snapshots_are_current() -> None:
    stale = snapshot.stale_snapshots()
    assert not stale, f"db/ snapshots out of date for {sorted(stale)}: run `make schema`"
    for dialect in migrate.SNAPSHOT_DIALECTS:
        text = snapshot.snapshot_path(dialect).read_text()
        assert "CREATE TABLE candidates" in text and "CREATE TABLE daemon_state" in text
        assert migrate.head_revision() in text
