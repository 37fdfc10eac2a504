"""The one retry rule of the bot's own HTTP clients, and the one ``Retry-After`` parser.

A wiki that is busy says so with HTTP 429 or 503, or (the Action API) with a ``maxlag`` error;
each usually comes with ``Retry-After``, either in seconds (``120``) or as an HTTP date
(``Wed, 21 Oct 2015 07:28:00 GMT``). The header wins over the exponential backoff, every wait
is capped (a wrong or hostile header cannot stall the bot for hours), and the number of
attempts is bounded. Sleeping is injectable, so tests check the waits without waiting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

# urllib3's own parser knows both forms; one instance serves every call (it holds no state
# that parsing changes).
_PARSER = Retry(total=0)


def retry_after_seconds(value: Optional[str], max_wait_s: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` as seconds from now (0 for a date in the past); None when absent or garbled.

    :param value: the header's value, seconds or an HTTP date.
    :param max_wait_s: the longest wait returned (None: uncapped).
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(_PARSER.parse_retry_after(value))
    except (InvalidHeader, ValueError, OverflowError):
        return None
    return seconds if max_wait_s is None else float(min(seconds, max_wait_s))


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try and how long to wait in between.

    :param attempts: tries in all (at least 1).
    :param backoff_s: the first wait without a ``Retry-After``, doubled each time.
    :param max_wait_s: the longest single wait, also for a large ``Retry-After``.
    :param sleep: ``time.sleep``; tests pass a recorder.
    """

    attempts: int = 4
    backoff_s: float = 1.0
    max_wait_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep

    def wait(self, attempt: int, retry_after: Optional[float] = None) -> float:
        """Seconds to wait after failed try number ``attempt`` (0 = the first).

        :param retry_after: the server's ``Retry-After`` in seconds, if it sent one.
        """
        wanted = retry_after if retry_after is not None else self.backoff_s * (2 ** attempt)
        return min(max(wanted, 0.0), self.max_wait_s)

    def pause(self, attempt: int, retry_after: Optional[float] = None) -> float:
        """Sleep :meth:`wait` seconds; returns them."""
        seconds = self.wait(attempt, retry_after)
        self.sleep(seconds)
        return seconds
