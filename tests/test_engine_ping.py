"""Pooled server connections: one idle too long is checked and replaced when the server
closed it; one used moments ago is taken without the extra round trip."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from wikivel_bot.queue import engine as engine_module
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store

# How each server ends another session, and how a session learns its own id.
KILL = {
    "postgresql": ("SELECT pg_backend_pid()", "SELECT pg_terminate_backend({})"),
    "mysql": ("SELECT CONNECTION_ID()", "KILL {}"),
}


def _servers_only(store: Store) -> None:
    if store.backend == "sqlite":
        pytest.skip("SQLite has no server to close a connection")


def _kill_pooled_connection(store: Store) -> None:
    """End, from another engine's connection, the session of the one connection in the pool."""
    own_id, kill = KILL[store.backend]
    with store.engine.connect() as conn:
        victim = conn.execute(text(own_id)).scalar()
    other = create_engine_for(store.engine.url.render_as_string(hide_password=False))
    with other.connect() as conn:
        conn.execute(text(kill.format(victim)))
        conn.commit()
    other.dispose()


def test_a_connection_the_server_closed_while_idle_is_replaced(store: Store, monkeypatch) -> None:
    _servers_only(store)
    _kill_pooled_connection(store)
    # Every pooled connection counts as idle: the check runs, finds it dead, replaces it.
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 0.0)
    assert store.counts() is not None


def test_a_connection_used_moments_ago_is_not_pinged(store: Store, monkeypatch) -> None:
    _servers_only(store)
    pings = []
    dialect = store.engine.dialect
    monkeypatch.setattr(dialect, "do_ping", lambda conn: pings.append(conn) or True)
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 3600.0)
    for _ in range(3):
        store.counts()
    assert pings == []
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 0.0)
    store.counts()
    assert len(pings) == 1
