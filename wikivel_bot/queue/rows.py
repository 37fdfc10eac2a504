"""Converting between value types and table rows; time is stored as naive UTC everywhere.

Naive UTC because MySQL/MariaDB DATETIME has no time zone and SQLite has no datetime type at
all: one convention on every backend keeps comparisons (leases, retry times) correct.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict, Mapping, Optional

from wikivel_bot.types import Depiction, FileState, FileWork, MediaFile


def utcnow() -> datetime:
    """Now as naive UTC, whole seconds (MySQL's DATETIME drops fractions anyway)."""
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def to_db_time(value: Optional[datetime]) -> Optional[datetime]:
    """Aware datetimes become naive UTC; naive ones are taken to be UTC already."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def from_db_time(value: Optional[datetime]) -> Optional[datetime]:
    """Naive UTC from the database becomes an aware UTC datetime."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc)


def media_to_json(media: MediaFile) -> Dict[str, Any]:
    """The ``files.media`` document; page id and title already have their own columns."""
    return {
        "thumb_url": media.thumb_url,
        "description": media.description,
        "categories": list(media.categories),
        "depicts": [{"qid": d.qid, "rank": d.rank} for d in media.depicts],
        "revid": media.revid,
        "protected": media.protected,
        "bots_allowed": media.bots_allowed,
        "references": list(media.references),
    }


def media_from_json(page_id: int, title: str, doc: Mapping[str, Any]) -> MediaFile:
    return MediaFile(
        page_id=page_id,
        title=title,
        thumb_url=doc.get("thumb_url", ""),
        description=doc.get("description", ""),
        categories=tuple(doc.get("categories", ())),
        depicts=tuple(Depiction(d["qid"], d.get("rank", "normal")) for d in doc.get("depicts", ())),
        revid=int(doc.get("revid", 0)),
        protected=bool(doc.get("protected", False)),
        bots_allowed=bool(doc.get("bots_allowed", True)),
        # Records written before evidence references existed have none.
        references=tuple(doc.get("references", ())),
    )


def file_work(row: Any) -> FileWork:
    """A claimed ``files`` row as the value a stage works on."""
    media = media_from_json(row.page_id, row.title, row.media) if row.media else None
    return FileWork(
        id=row.id,
        page_id=row.page_id,
        title=row.title,
        state=FileState(row.state),
        attempts=row.attempts,
        media=media,
    )
