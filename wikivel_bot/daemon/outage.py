"""The daemon while its queue database is down: one line a minute, no tracebacks.

Every job and every heartbeat touches the database, so an outage (PostgreSQL restarting,
ToolsDB failing over, the network cut) would otherwise log an error, often a driver's
traceback, from each of them every few seconds. :class:`DatabaseOutage` turns those into
one warning when the outage begins and one a minute while it lasts ("database unreachable,
retrying"), and one line when the database answers again. The jobs keep running meanwhile:
each fails fast and is tried again at its next turn, and the releases the outage made fail
are made again at the first heartbeat that reaches the database (``Store.settle_releases``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

from wikivel_bot.events import event

# Seconds between two "still unreachable" lines.
REPEAT_S = 60.0


class DatabaseOutage:
    """Whether the database is down, and the rate-limited log lines about it.

    :param clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, repeat_s: float = REPEAT_S) -> None:
        self._clock = clock
        self._repeat_s = repeat_s
        self._lock = threading.Lock()
        self._since: Optional[float] = None
        self._said_at: Optional[float] = None

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, stage: str, exc: BaseException) -> bool:
        """Note a failure of ``stage``; True when it is the database being unreachable (then
        it is logged here, at most once a minute, and the caller logs nothing more)."""
        from wikivel_bot.queue.db_errors import unreachable

        if not unreachable(exc):
            return False
        now = self._clock()
        with self._lock:
            if self._since is None:
                self._since = now
            if self._said_at is not None and now - self._said_at < self._repeat_s:
                return True
            self._said_at = now
            down_s = now - self._since
        event("database", "unreachable", level=logging.WARNING, note="database unreachable, retrying",
              down_s=round(down_s), job=stage, error=_first_line(exc))
        return True

    def answered(self) -> None:
        """The database answered: if it was down, say once that it is back."""
        with self._lock:
            if self._since is None:
                return
            down_s = self._clock() - self._since
            self._since = self._said_at = None
        event("database", "reachable", note="database reachable again", down_s=round(down_s))


def _first_line(exc: BaseException) -> str:
    """The driver's message without SQLAlchemy's SQL, parameters and links."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:200]
