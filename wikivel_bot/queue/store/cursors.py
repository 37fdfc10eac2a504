"""The store's bookkeeping outside the state machine: poll cursors and rows per state.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). Nothing here moves a file or a pair: a
cursor is where a poller resumes (saved with each enqueued batch by ``Store.enqueue``, or on
its own by :meth:`CursorsMixin.set_cursor`), and :meth:`CursorsMixin.counts` is what
`status`, the web and the metrics endpoint show of the queue's size. The rest of what they read
(held leases, daemon state) is in ``claims`` and ``monitor``.
"""

from __future__ import annotations

from typing import Dict, Optional

from sqlalchemy import func, select

from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import candidates, cursors, files
from wikivel_bot.types import CandidateState, Cursor, FileState


class CursorsMixin(StoreBase):
    """Poll cursors and per-state counts (see the module docstring)."""

    # -- cursors and counts --------------------------------------------------------------

    def get_cursor(self, source: str) -> Optional[Cursor]:
        with self.transaction() as conn:
            row = conn.execute(select(cursors).where(cursors.c.source == source)).first()
        return None if row is None else Cursor(timestamp=row.timestamp, log_id=int(row.log_id))

    def set_cursor(self, source: str, cursor: Cursor) -> None:
        with self.transaction() as conn:
            self._save_cursor(conn, source, cursor, self._now())

    def all_cursors(self) -> Dict[str, Cursor]:
        with self.transaction() as conn:
            return {
                r.source: Cursor(r.timestamp, int(r.log_id))
                for r in conn.execute(select(cursors).order_by(cursors.c.source))
            }

    def counts(self) -> Dict[str, Dict[str, int]]:
        """Rows by state: {"files": {state: n}, "candidates": {state: n}}, every state listed."""
        out: Dict[str, Dict[str, int]] = {
            "files": {s.value: 0 for s in FileState},
            "candidates": {s.value: 0 for s in CandidateState},
        }
        with self.transaction() as conn:
            for name, table in (("files", files), ("candidates", candidates)):
                for state, n in conn.execute(
                    select(table.c.state, func.count()).group_by(table.c.state)
                ):
                    out[name][state] = int(n)
        return out
