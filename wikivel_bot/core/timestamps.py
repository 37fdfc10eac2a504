"""MediaWiki's timestamps (``2024-05-01T08:00:00Z``, UTC, whole seconds): the one formatter and
the one parser.

The API writes every timestamp this way and reads it back in parameters (``lestart``,
``aistart``); the bot uses the same form for its own times (heartbeats, checkpoints, logs), so
what it stores compares and reads like the wiki's. Naive datetimes are UTC, as the queue
stores them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

# ISO 8601 as MediaWiki's TS_ISO_8601; also the logging ``datefmt`` (with a UTC converter).
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def format_timestamp(moment: Optional[datetime] = None) -> str:
    """``moment`` (now when None) as ``2024-05-01T08:00:00Z``; a naive datetime is UTC, an
    aware one is converted to UTC. Fractions of a second are dropped."""
    if moment is None:
        moment = datetime.now(timezone.utc)
    elif moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime(TIMESTAMP_FORMAT)


def parse_timestamp(text: str) -> datetime:
    """``2024-05-01T08:00:00Z`` as an aware UTC datetime.

    :raises ValueError: ``text`` is not in that form; the message names it.
    """
    try:
        return datetime.strptime(text, TIMESTAMP_FORMAT).replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        raise ValueError(f"not a MediaWiki timestamp: {text!r} (expected like 2024-05-01T08:00:00Z)") from None
