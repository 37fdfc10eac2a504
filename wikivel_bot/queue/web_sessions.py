"""Logins to the web review, kept in the queue database (table ``web_sessions``).

The web app (``wikivel_bot.web.sessions``) gives the browser a random session id and keeps
only its SHA-256 here (a copy of the database opens no login), with the reviewer's wiki
profile (groups; blocked, the wiki's reason, and a partial block's restrictions as JSON) and two times: when the login ends, fixed
at login (no sliding renewal), and when the profile was last read from the wiki (and when a
re-read last failed, so an outage is not asked again on every request). Every web worker
reads the same rows, so a logout or an expiry ends the login everywhere at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, Optional, Tuple

from sqlalchemy import delete, null, select, update

from wikivel_bot.queue.rows import to_db_time
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import web_sessions


@dataclass(frozen=True)
class WebSession:
    """One open login: who, their wiki profile as last read, and its times (naive UTC)."""

    user_name: str
    user_id: str
    groups: Tuple[str, ...]
    blocked: bool
    expires_at: datetime
    checked_at: datetime
    block_reason: str = ""
    # When the last re-read of the profile failed (the wiki did not answer); None after a success.
    check_failed_at: Optional[datetime] = None
    # A partial block's restrictions as the web wrote them (JSON); None: none, or sitewide.
    block_restrictions: Optional[Dict[str, Any]] = None


def open_session(store: Store, key: str, user_name: str, user_id: str, groups: Tuple[str, ...],
                 blocked: bool, now: datetime, expires_at: datetime, block_reason: str = "",
                 block_restrictions: Optional[Dict[str, Any]] = None) -> None:
    """Record a new login under ``key`` (the id's hash); ended logins are swept meanwhile,
    so the table holds only live ones without a job of its own."""
    with store.transaction() as conn:
        conn.execute(delete(web_sessions).where(web_sessions.c.expires_at <= to_db_time(now)))
        conn.execute(web_sessions.insert().values(
            id=key, user_name=user_name[:255], user_id=user_id[:32], user_groups=list(groups), blocked=blocked,
            block_reason=block_reason or None, block_restrictions=_json(block_restrictions), created_at=to_db_time(now), expires_at=to_db_time(expires_at), checked_at=to_db_time(now)))


def find_session(store: Store, key: str, now: datetime) -> Optional[WebSession]:
    """The login under ``key`` if it is open at ``now``; None when it was ended or expired."""
    with store.reading() as conn:
        row = conn.execute(select(web_sessions).where(
            web_sessions.c.id == key, web_sessions.c.expires_at > to_db_time(now))).first()
    if row is None:
        return None
    groups = row.user_groups if isinstance(row.user_groups, list) else []
    return WebSession(user_name=row.user_name, user_id=row.user_id, groups=tuple(str(g) for g in groups),
                      blocked=bool(row.blocked), expires_at=row.expires_at, checked_at=row.checked_at,
                      block_reason=row.block_reason or "", check_failed_at=row.check_failed_at,
                      block_restrictions=row.block_restrictions if isinstance(row.block_restrictions, dict) else None)


def update_profile(store: Store, key: str, groups: Tuple[str, ...], blocked: bool, now: datetime,
                   block_reason: str = "", block_restrictions: Optional[Dict[str, Any]] = None) -> None:
    """Save the profile just read from the wiki, and when it was read (a failure noted
    before is forgotten)."""
    with store.transaction() as conn:
        conn.execute(update(web_sessions).where(web_sessions.c.id == key).values(
            user_groups=list(groups), blocked=blocked, block_reason=block_reason or None,
            block_restrictions=_json(block_restrictions), checked_at=to_db_time(now), check_failed_at=None))


def _json(value: Optional[Dict[str, Any]]) -> Any:
    """A JSON value for the column, or SQL NULL (not JSON ``null``) for None."""
    return null() if value is None else value


def note_check_failed(store: Store, key: str, now: datetime) -> None:
    """Note that the wiki could not be asked for the profile at ``now``; the profile and
    ``checked_at`` stay as they were, so the re-read remains due."""
    with store.transaction() as conn:
        conn.execute(update(web_sessions).where(web_sessions.c.id == key).values(check_failed_at=to_db_time(now)))


def end_session(store: Store, key: str) -> bool:
    """End the login under ``key`` (logout); True when there was one."""
    with store.transaction() as conn:
        return bool(conn.execute(delete(web_sessions).where(web_sessions.c.id == key)).rowcount)
