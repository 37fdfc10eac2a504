"""Stopping the daemon within a bounded time, whatever its jobs are doing.

A Toolforge job gets 15 s between SIGTERM and SIGKILL (a systemd unit gets
``TimeoutStopSec``). The daemon's jobs stop at the next item boundary, but one item can take
longer than that: an edit whose answer is slow, a maxlag wait, a large link batch. So the stop
waits for the running jobs at most :data:`JOBS_GRACE_S`, then leaves the process at once
(:func:`exit_now`), and the queue is consistent either way: every result is committed item by
item, and an edit whose answer never came is found in the file's history by the writer's
recovery on the next start (recorded once, never sent again).

* :class:`RunningJobs` — which scheduler jobs are running right now, and waiting for none;
* :func:`finish_within` — run the last records (release claims, state) on a thread with a
  deadline, since a hung database must not hold the stop either.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator, List

# The whole stop (jobs + last records) stays under 10 s: 5 s of margin to Toolforge's 15.
STOP_WITHIN_S = 10.0
# How long running jobs may take to finish their current item after a stop request.
JOBS_GRACE_S = 6.0
# How long the last records (claims released, state saved) may take after that.
FINAL_RECORDS_S = 2.5


class RunningJobs:
    """The names of the jobs running now (a job may run on a pool thread each)."""

    def __init__(self) -> None:
        self._running: Counter = Counter()
        self._changed = threading.Condition()

    @contextmanager
    def running(self, name: str) -> Iterator[None]:
        with self._changed:
            self._running[name] += 1
        try:
            yield
        finally:
            with self._changed:
                self._running[name] -= 1
                if self._running[name] <= 0:
                    del self._running[name]
                self._changed.notify_all()

    def wrap(self, name: str, job: Callable[[], None]) -> Callable[[], None]:
        def tracked() -> None:
            with self.running(name):
                job()

        tracked.__name__ = getattr(job, "__name__", name)
        return tracked

    def wait_idle(self, timeout_s: float) -> List[str]:
        """Wait until no job runs or ``timeout_s`` passed; the jobs still running (sorted)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return sorted(self._running)


def finish_within(call: Callable[[], None], timeout_s: float) -> bool:
    """Run ``call`` on a daemon thread; True when it returned within ``timeout_s``."""
    thread = threading.Thread(target=call, name="daemon-last-records", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return not thread.is_alive()


def exit_now(code: int = 0) -> None:
    """Flush the log lines and leave the process without waiting for the job threads (the
    scheduler's pool threads are joined at interpreter exit otherwise)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
