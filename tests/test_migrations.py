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


def test_old_withheld_records_are_stripped_to_counts(db_url: str) -> None:
    """Revision 0005: a queue whose files kept each withheld item (QID, rule, reason, score)
    keeps only the counts by rule after the upgrade; no withheld QID is left in the database."""
    from datetime import datetime

    from sqlalchemy import insert, select, text

    from wikivel_bot.queue.tables import files

    store = open_store(db_url)
    engine = store.engine
    migrate.downgrade(engine, "base")  # a server's fixture left it at head; sqlite is empty
    migrate.upgrade(engine, "0004")
    old = {"title": "File:Rally.jpg", "withheld": [
        {"qid": "Q76", "rule": "named person", "reason": "named person: instance of Q5 (human)", "score": 0.31},
        {"qid": "Q7186", "rule": "named person", "reason": "named person: instance of Q5 (human)", "score": 0.29},
        {"qid": "Q5043", "rule": "sensitive class", "reason": "sensitive class: under Q9174", "score": 0.2}]}
    at = {"discovered_at": datetime(2024, 5, 1), "updated_at": datetime(2024, 5, 1)}
    with engine.begin() as conn:
        conn.execute(insert(files), [
            {"page_id": 71, "title": "File:Rally.jpg", "state": "linked", "media": old, **at},
            {"page_id": 72, "title": "File:Quiet.jpg", "state": "linked", "media": {"title": "File:Quiet.jpg"}, **at},
            {"page_id": 73, "title": "File:New.jpg", "state": "queued", "media": None, **at}])
    migrate.upgrade(engine)
    with engine.connect() as conn:
        media = dict(conn.execute(select(files.c.page_id, files.c.media)).all())
        raw = " ".join(str(v) for (v,) in conn.execute(text("SELECT media FROM files")).all())
    assert media[71] == {"title": "File:Rally.jpg", "withheld": {"named person": 2, "sensitive class": 1}}
    assert media[72] == {"title": "File:Quiet.jpg"} and media[73] is None
    assert "Q76" not in raw and "Q7186" not in raw and "Q5043" not in raw
    store.close()
