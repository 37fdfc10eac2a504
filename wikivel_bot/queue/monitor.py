"""What `status`, the daemon and the metrics endpoint read about the queue's activity.

Kept apart from the store's state machine: nothing here moves a file or a candidate. The
daemon records its own condition (writing paused and why, last poll, recent errors) in
``daemon_state`` so that `wikivel-bot status`, run from another process, can show it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional

from sqlalchemy import func, select

from wikivel_bot.queue.rows import utcnow
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, daemon_state, edits, files
from wikivel_bot.types import CandidateState, FileState

# How many daemon errors `status` keeps and shows.
RECENT_ERRORS = 20


def set_state(store: Store, name: str, value: Dict[str, Any]) -> None:
    """Save one JSON document under ``name``; an atomic upsert, since several daemons may
    write the shared documents (``writing``, ``errors``) at the same moment."""
    now = utcnow()
    row = dict(name=name[:64], value=value, updated_at=now)
    dialect_insert: Any
    if store.backend == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    elif store.backend == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    else:
        from sqlalchemy.dialects.mysql import insert as mysql_insert

        statement = mysql_insert(daemon_state).values(**row)
        with store.transaction() as conn:
            conn.execute(statement.on_duplicate_key_update(value=value, updated_at=now))
        return
    statement = dialect_insert(daemon_state).values(**row)
    with store.transaction() as conn:
        conn.execute(statement.on_conflict_do_update(
            index_elements=[daemon_state.c.name], set_=dict(value=value, updated_at=now)))


def get_states(store: Store) -> Dict[str, Dict[str, Any]]:
    """Every saved document, with its ``updated_at`` added (ISO, UTC)."""
    with store.transaction() as conn:
        rows = conn.execute(select(daemon_state)).all()
    return {r.name: {**r.value, "updated_at": r.updated_at.isoformat() + "Z"} for r in rows}


def add_error(store: Store, stage: str, message: str) -> None:
    """Remember a daemon-level error (a stage that failed as a whole) for `status`."""
    errors = get_states(store).get("errors", {}).get("items", [])
    errors.append({"at": utcnow().isoformat() + "Z", "stage": stage, "message": message})
    set_state(store, "errors", {"items": errors[-RECENT_ERRORS:]})


def activity(store: Store, since: timedelta = timedelta(hours=1), now: Optional[datetime] = None) -> Dict[str, Any]:
    """Throughput over the last ``since`` and how far behind linking is.

    :return: ``files_linked``, ``files_unavailable``, ``edits`` by outcome in the window,
        ``waiting`` (files discovered or fetched, not linked yet) and ``oldest_waiting``
        (upload time of the oldest of them, ISO UTC, or None): the lag behind uploads.
    """
    now = now or utcnow()
    start = now - since
    with store.transaction() as conn:
        by_state: Dict[str, int] = dict(
            conn.execute(
                select(files.c.state, func.count()).where(files.c.updated_at >= start).group_by(files.c.state)
            ).all()
        )
        edit_counts: Dict[str, int] = dict(
            conn.execute(
                select(edits.c.outcome, func.count()).where(edits.c.finished_at >= start).group_by(edits.c.outcome)
            ).all()
        )
        waiting_states = [FileState.DISCOVERED.value, FileState.FETCHED.value]
        waiting, oldest = conn.execute(
            select(func.count(), func.min(files.c.uploaded_at)).where(files.c.state.in_(waiting_states))
        ).one()
    return {
        "window_s": int(since.total_seconds()),
        "files_linked": int(by_state.get(FileState.LINKED.value, 0)),
        "files_unavailable": int(by_state.get(FileState.UNAVAILABLE.value, 0)),
        "edits": {k: int(v) for k, v in edit_counts.items()},
        "waiting": int(waiting),
        "oldest_waiting": oldest.isoformat() + "Z" if oldest else None,
    }


def approved_backlog(store: Store, now: Optional[datetime] = None) -> Dict[str, Any]:
    """Approved pairs a writer could not take right now, and why: ``retry_later`` (a retry
    time in the future; ``next_retry`` the earliest, ISO), ``claimed_elsewhere`` (a live
    lease), ``simulated`` (a dry run simulated them; only a real write takes them)."""
    now = now or utcnow()
    approved = candidates.c.state == CandidateState.APPROVED.value
    held = candidates.c.claimed_at >= now - store.claim_lease
    with store.transaction() as conn:
        retry_later, next_retry = conn.execute(
            select(func.count(), func.min(candidates.c.retry_after))
            .where(approved, candidates.c.retry_after > now)
        ).one()
        claimed = conn.execute(
            select(func.count()).where(approved, candidates.c.claimed_by.is_not(None), held)
        ).scalar()
        simulated = conn.execute(
            select(func.count()).where(approved, candidates.c.simulated_at.is_not(None))
        ).scalar()
    return {
        "retry_later": int(retry_later or 0),
        "next_retry": next_retry.isoformat() + "Z" if next_retry else None,
        "claimed_elsewhere": int(claimed or 0),
        "simulated": int(simulated or 0),
    }


def owed_follow_ups(store: Store) -> Dict[str, int]:
    """Statements the bot wrote that their pair's last decision no longer wants as they are
    (``queue.store.follow_ups``): ``owed`` in all, ``remove`` (rejected or undone since),
    ``rank`` (a switch of prominence since). The writer makes these edits first."""
    owed = store.owed_follow_ups()
    remove = sum(1 for f in owed if f.wanted == "remove")
    return {"owed": len(owed), "remove": remove, "rank": len(owed) - remove}


def recent_file_problems(store: Store, limit: int = 10) -> List[Dict[str, Any]]:
    """The newest unavailable files with their reasons (corrupt, deleted, ...)."""
    with store.transaction() as conn:
        rows = conn.execute(
            select(files.c.page_id, files.c.title, files.c.reason, files.c.updated_at)
            .where(files.c.state == FileState.UNAVAILABLE.value)
            .order_by(files.c.updated_at.desc(), files.c.id.desc())
            .limit(limit)
        ).all()
    return [
        {"file": f"M{r.page_id}", "title": r.title, "reason": r.reason, "at": r.updated_at.isoformat() + "Z"}
        for r in rows
    ]


def maintain(store: Store) -> None:
    """Housekeeping the daemon runs now and then.

    SQLite: fold the write-ahead log back into the database file (it otherwise grows while
    readers are active) and let SQLite refresh its planner statistics. PostgreSQL and
    MariaDB run their own (autovacuum, InnoDB purge), so there is nothing to do.
    """
    if store.backend != "sqlite":
        return
    with store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA optimize")
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
