"""The store's record of write requests: each one noted before it leaves, settled once its
fate is known.

Part of :class:`~wikivel_bot.queue.store.Store`. MediaWiki finishes a POST after the client
hung up, so a request whose answer never came — a read timeout, a process killed after the
wiki saved — may be applied minutes later, after the writer recorded a failure or a reviewer
rejected the pair. So the writer notes every statement it is about to send
(:meth:`SendsMixin.record_sending`, committed before the request leaves) and the row stays
*unsettled* until:

* the edit is recorded ``written`` with that GUID (``record_edit`` settles it ``applied``);
* an error answer came (:meth:`SendsMixin.mark_answered`): nothing was applied, and the next
  re-read settles it ``not_applied`` at once;
* a re-read of the file decides (``commons.writer.unsettled``): the GUID is on the file, or
  this bot's revision added it, and it is recorded ``written`` as *applied late*
  (:meth:`SendsMixin.settle_send`; the pair's last decision then stands, and a follow-up
  removes a rejected statement), or it is not and the horizon
  (``commons.writer.unsettled.SETTLE_HORIZON``) has passed since it was sent: ``not_applied``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple

from sqlalchemy import func, insert, select, update

from wikivel_bot.queue.store.writes import APPLIED, APPLIED_LATE, NOT_APPLIED, WritesMixin
from wikivel_bot.queue.tables import candidates, edits, files, sends
from wikivel_bot.types import CandidateState, EditOutcome, Written

__all__ = ["SendsMixin", "UnsettledSend"]


@dataclass(frozen=True)
class UnsettledSend:
    """One write request whose fate is not known yet."""

    send_id: int
    candidate_id: int
    page_id: int
    title: str
    qid: str
    statement_id: str
    batch_id: str
    sent_at: datetime
    answered: bool  # an error answer came: nothing was applied by this request
    state: CandidateState  # the pair now: its last decision
    prominent: bool

    @property
    def mid(self) -> str:
        return f"M{self.page_id}"


class SendsMixin(WritesMixin):
    """Noting, listing and settling write requests (see the module docstring)."""

    def record_sending(self, pairs: Sequence[Tuple[int, str]], batch_id: str, worker: str) -> List[int]:
        """Note that one request is about to carry the statements ``pairs`` (candidate id,
        GUID); committed before it returns. The send ids, in the order given."""
        now = self._now()
        ids: List[int] = []
        with self.transaction() as conn:
            for candidate_id, guid in pairs:
                result = conn.execute(insert(sends).values(
                    candidate_id=candidate_id, statement_id=guid, batch_id=batch_id,
                    worker=worker[:200], sent_at=now))
                key = result.inserted_primary_key
                assert key is not None  # an INSERT of one row always has one
                ids.append(int(key[0]))
        return ids

    def mark_answered(self, send_ids: Sequence[int]) -> None:
        """The wiki answered these requests with an error: nothing of them was applied."""
        if not send_ids:
            return
        with self.transaction() as conn:
            conn.execute(update(sends).where(sends.c.id.in_(list(send_ids)), sends.c.answered_at.is_(None))
                         .values(answered_at=self._now()))

    def unsettled_sends(self, limit: Optional[int] = None) -> List[UnsettledSend]:
        """The requests not settled yet, oldest first."""
        query = (
            select(sends.c.id, sends.c.candidate_id, files.c.page_id, files.c.title, candidates.c.qid,
                   sends.c.statement_id, sends.c.batch_id, sends.c.sent_at, sends.c.answered_at,
                   candidates.c.state, candidates.c.prominent)
            .join(candidates, candidates.c.id == sends.c.candidate_id)
            .join(files, files.c.id == candidates.c.file_id)
            .where(sends.c.settled_at.is_(None))
            .order_by(sends.c.id)
        )
        if limit is not None:
            query = query.limit(limit)
        with self.transaction() as conn:
            rows = conn.execute(query).all()
        return [UnsettledSend(send_id=int(r.id), candidate_id=int(r.candidate_id), page_id=int(r.page_id),
                              title=r.title, qid=r.qid, statement_id=r.statement_id, batch_id=r.batch_id,
                              sent_at=r.sent_at, answered=r.answered_at is not None,
                              state=CandidateState(r.state), prominent=bool(r.prominent))
                for r in rows]

    def unsettled_summary(self) -> Dict[str, Any]:
        """``{"count": n, "oldest": sent_at or None}`` of the unsettled requests (``status``)."""
        with self.transaction() as conn:
            row = conn.execute(select(func.count(), func.min(sends.c.sent_at))
                               .where(sends.c.settled_at.is_(None))).first()
        return {"count": int(row[0] or 0) if row else 0, "oldest": row[1] if row else None}

    def unsettled_candidates(self, candidate_ids: Sequence[int]) -> Dict[int, datetime]:
        """{candidate id: when its oldest unsettled request was sent} among ``candidate_ids``
        (the review page marks those pairs)."""
        if not candidate_ids:
            return {}
        with self.transaction() as conn:
            rows = conn.execute(select(sends.c.candidate_id, func.min(sends.c.sent_at))
                                .where(sends.c.candidate_id.in_(list(candidate_ids)),
                                       sends.c.settled_at.is_(None))
                                .group_by(sends.c.candidate_id)).all()
        return {int(r[0]): r[1] for r in rows}

    def settle_send(self, send: UnsettledSend, found: Optional[Written], started_at: object) -> bool:
        """Settle one request from a re-read: ``found`` is the edit that applied it (its
        revision and GUID; recorded ``written`` as applied late, the pair keeping its last
        decision), or None (not applied). False when another process settled it first
        (nothing is recorded twice)."""
        now = self._now()
        with self.transaction() as conn:
            still = conn.execute(select(sends.c.settled_at).where(sends.c.id == send.send_id)
                                 .with_for_update()).first()
            if still is None or still.settled_at is not None:
                return False
            recorded = found is not None and conn.execute(
                select(edits.c.id).where(edits.c.candidate_id == send.candidate_id,
                                         edits.c.statement_id == found.statement_id,
                                         edits.c.revid == found.revid,
                                         edits.c.outcome == EditOutcome.WRITTEN.value)).first() is not None
            if recorded and found is not None:
                # That edit is in the audit already (another request of the same GUID that
                # got its answer): settled, not recorded twice.
                conn.execute(update(sends).where(sends.c.id == send.send_id)
                             .values(settled_at=now, settled_as=APPLIED, revid=found.revid))
            elif found is not None:
                # record_edit settles every send of this GUID as "applied"; this one was late.
                self._record_edit_in(conn, send.candidate_id, send.batch_id, found, started_at,
                                     max_attempts=1, worker=None, now=now)
                conn.execute(update(sends).where(sends.c.candidate_id == send.candidate_id,
                                                 sends.c.statement_id == send.statement_id)
                             .where(sends.c.settled_as == "applied", sends.c.settled_at == now)
                             .values(settled_as=APPLIED_LATE))
            else:
                conn.execute(update(sends).where(sends.c.id == send.send_id)
                             .values(settled_at=now, settled_as=NOT_APPLIED))
        return True
