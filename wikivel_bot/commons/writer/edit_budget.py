"""How many bot edits one file may get: a small, fixed number per hour from one writer.

Every edit the writer makes on a file is a human's yes carried out — a group of approved
statements, a twin statement removed again, a follow-up that honours a later decision, a
late edit's follow-up. None of them should repeat, but a bug, a wiki that answers oddly or a
fast stream of decisions could make one file churn; a community judges a bot by its worst
file history. So each writer counts the requests it sends per file (simulated ones too) and
keeps to :data:`MAX_EDITS_PER_FILE` within :data:`WINDOW_S`:

* a group edit goes only while two edits are left (its own, and the twin removal it may
  need right after, which is never refused);
* a follow-up goes only while one is left;
* what does not go waits: its pairs are released unattempted, its follow-up stays owed, and
  the next run (or the next hour of a daemon) makes it.

Five edits an hour are enough for the most one file needs in a run: up to three group edits
(a group names about ten items in its summary, and files with more than 30 approved items
are rare), a twin removal and a follow-up.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable, Deque, Dict

__all__ = ["EditBudget", "MAX_EDITS_PER_FILE", "WINDOW_S"]

MAX_EDITS_PER_FILE = 5
WINDOW_S = 3600.0


class EditBudget:
    """Edit requests per file within a sliding window.

    :param monotonic: the clock (the writer's own, so tests can move it).
    """

    def __init__(self, max_edits: int = MAX_EDITS_PER_FILE, window_s: float = WINDOW_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.max_edits = max_edits
        self.window_s = window_s
        self.monotonic = monotonic
        self._sent: Dict[int, Deque[float]] = {}

    def left(self, page_id: int) -> int:
        """Edits the file may still get now."""
        sent = self._sent.get(page_id)
        if sent is None:
            return self.max_edits
        cutoff = self.monotonic() - self.window_s
        while sent and sent[0] <= cutoff:
            sent.popleft()
        return self.max_edits - len(sent)

    def allows(self, page_id: int, edits: int = 1) -> bool:
        return self.left(page_id) >= edits

    def spend(self, page_id: int) -> None:
        """Count one request about to be sent for the file."""
        self._sent.setdefault(page_id, deque()).append(self.monotonic())
