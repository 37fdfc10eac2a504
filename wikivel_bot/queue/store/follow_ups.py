"""The store's follow-ups: statements the bot wrote that the pair's last decision no longer
wants as they are.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). A reviewer's decision that lands after the
writer's request left cannot stop the edit; ``record_edit`` records it all the same and the
pair keeps the reviewer's state. Such a pair is *owed a follow-up*: the latest audit row
naming its statement (by GUID) is a ``written`` one, and

* the pair is ``rejected`` or back to ``proposed`` (an undo): the statement is to go, or
* the pair is ``written`` with a rank (``edits.rank``) other than its decision asks for (a
  switch to prominent, or back to normal, in flight): the rank is to change.

:meth:`FollowUpsMixin.claim_follow_ups` finds and claims them under the same lease rules as
approved pairs (a decision clears the claim), :meth:`FollowUpsMixin.confirm_follow_up` is the
last check before the follow-up edit, :meth:`FollowUpsMixin.record_follow_up` adds its audit
row under the batch that wrote the statement: ``reverted`` for a removal (so ``revert
--batch`` does not remove it twice), ``written`` with the new rank for a rank change, a
``skipped`` or permanent ``failed`` row naming the statement when it is left alone (a human
changed it, or the wiki already agrees), which ends the follow-up. A transient failure names
no statement and sets a retry time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Dict, List, Optional, Union

from sqlalchemy import and_, func, insert, or_, select, update

from wikivel_bot.queue.rows import to_db_time
from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import candidates, edits, files
from wikivel_bot.types import REMOVE, CandidateState, DryRun, EditOutcome, Failed, Skipped, Written, rank_of

FollowUpOutcome = Union[Written, Skipped, Failed, DryRun]
# States whose last decision wants no statement on the wiki.
UNWANTED = (CandidateState.REJECTED.value, CandidateState.PROPOSED.value)


@dataclass(frozen=True)
class FollowUp:
    """One statement the bot wrote that its pair's last decision disagrees with."""

    candidate_id: int
    page_id: int
    title: str
    qid: str
    statement_id: str
    batch_id: str  # the batch whose edit wrote the statement (or last set its rank)
    revid: int  # that edit's revision
    written_rank: str  # "normal" / "preferred"
    state: CandidateState  # the pair now: what its last decision says
    prominent: bool
    reviewer: str  # who made the last decision ("" after an undo)

    @property
    def wanted(self) -> str:
        """``remove``, or the rank the last decision asks for."""
        if self.state.value in UNWANTED:
            return REMOVE
        return rank_of(self.prominent)

    @property
    def mid(self) -> str:
        return f"M{self.page_id}"

    def decision(self) -> str:
        """The later decision in words, for summaries and messages."""
        who = f" by {self.reviewer}" if self.reviewer else ""
        if self.state is CandidateState.REJECTED:
            return f"rejected{who}"
        if self.state is CandidateState.PROPOSED:
            return "approval undone"
        return f"switched to {'prominent' if self.prominent else 'normal rank'}{who}"


class FollowUpsMixin(StoreBase):
    """Finding, claiming and recording follow-up edits (see the module docstring)."""

    def owed_follow_ups(self, limit: Optional[int] = None) -> List[FollowUp]:
        """Every pair owed a follow-up now (claimed or not), oldest statement first."""
        return self._follow_ups(limit, claimable_only=False)

    def claim_follow_ups(self, limit: int, worker: str) -> List[FollowUp]:
        """Claim up to ``limit`` follow-ups nobody holds and whose retry time has come."""
        found = self._follow_ups(limit, claimable_only=True)
        if not found:
            return []
        now = self._now()
        with self.transaction() as conn:
            locked = set(conn.execute(
                select(candidates.c.id).where(candidates.c.id.in_([f.candidate_id for f in found]),
                                              self._claimable(candidates, now))
                .with_for_update(skip_locked=True)
            ).scalars())
            claimed = [f for f in found if f.candidate_id in locked]
            for item in claimed:
                # Only while the pair is as found: a decision meanwhile changes what is owed.
                moved = conn.execute(update(candidates).where(
                    candidates.c.id == item.candidate_id, candidates.c.state == item.state.value,
                    candidates.c.prominent == int(item.prominent),
                ).values(claimed_by=worker, claimed_at=now)).rowcount
                if moved != 1:
                    locked.discard(item.candidate_id)
        return [f for f in claimed if f.candidate_id in locked]

    def confirm_follow_up(self, item: FollowUp, worker: str) -> bool:
        """The last check before a follow-up edit: ``worker`` still holds the pair and it
        is still as claimed (any decision clears the claim). Renews the lease."""
        with self.transaction() as conn:
            return conn.execute(update(candidates).where(
                candidates.c.id == item.candidate_id, candidates.c.claimed_by == worker,
                candidates.c.state == item.state.value, candidates.c.prominent == int(item.prominent),
            ).values(claimed_at=self._now())).rowcount == 1

    def release_follow_up(self, item: FollowUp, worker: str) -> None:
        """Give the pair's claim back (nothing was done, e.g. a dry run or a lost check)."""
        with self.transaction() as conn:
            conn.execute(update(candidates).where(
                candidates.c.id == item.candidate_id, candidates.c.claimed_by == worker,
            ).values(claimed_by=None, claimed_at=None))

    def record_follow_up(self, item: FollowUp, outcome: FollowUpOutcome, started_at: object,
                         note: str, worker: Optional[str] = None) -> None:
        """Add the follow-up's audit row (see the module docstring) and give the claim back.

        :param note: what was done and why, kept as the row's reason.
        """
        now = self._now()
        started = to_db_time(started_at) or now  # type: ignore[arg-type]
        values: Dict[str, Any] = dict(candidate_id=item.candidate_id, batch_id=item.batch_id, attempt=1,
                                      started_at=started, finished_at=now, error=note,
                                      statement_id=item.statement_id, revid=None, rank=None)
        release: Dict[str, Any] = dict(claimed_by=None, claimed_at=None)
        if isinstance(outcome, DryRun):
            self.release_follow_up(item, worker or "")
            return
        if isinstance(outcome, Written):
            removed = item.wanted == REMOVE
            values.update(outcome=(EditOutcome.REVERTED if removed else EditOutcome.WRITTEN).value,
                          revid=outcome.revid, rank=None if removed else (outcome.rank or item.wanted))
        elif isinstance(outcome, Skipped):
            values.update(outcome=EditOutcome.SKIPPED.value, error=f"{note}: {outcome.reason}")
        else:
            values.update(outcome=EditOutcome.FAILED.value, error=f"{note}: {outcome.reason}")
            if outcome.retry_after is not None:
                # Transient: the follow-up stays owed, tried again after the delay.
                values.update(statement_id=None)
                release.update(retry_after=now + timedelta(seconds=outcome.retry_after))
        with self.transaction() as conn:
            conn.execute(insert(edits).values(**values))
            mine = [candidates.c.id == item.candidate_id]
            if worker is not None:
                mine.append(or_(candidates.c.claimed_by == worker, candidates.c.claimed_by.is_(None)))
            conn.execute(update(candidates).where(*mine).values(**release))

    def record_twin_removed(self, candidate_id: int, batch_id: str, revid: int, statement_id: str,
                            note: str) -> None:
        """A second statement of an item that this bot's edit just added, removed again:
        a ``reverted`` row for it (the pair's state is its other statement's)."""
        now = self._now()
        with self.transaction() as conn:
            conn.execute(insert(edits).values(
                candidate_id=candidate_id, batch_id=batch_id, outcome=EditOutcome.REVERTED.value,
                revid=revid, statement_id=statement_id, error=note, attempt=1, started_at=now,
                finished_at=now))

    def _follow_ups(self, limit: Optional[int], *, claimable_only: bool) -> List[FollowUp]:
        now = self._now()
        latest = (
            select(edits.c.candidate_id, edits.c.statement_id, func.max(edits.c.id).label("last_id"))
            .where(edits.c.statement_id.is_not(None))
            .group_by(edits.c.candidate_id, edits.c.statement_id)
            .subquery()
        )
        wanted_rank = func.coalesce(edits.c.rank, "")
        disagrees = or_(
            candidates.c.state.in_(UNWANTED),
            and_(candidates.c.state == CandidateState.WRITTEN.value, edits.c.rank.is_not(None),
                 or_(and_(candidates.c.prominent == 1, wanted_rank != "preferred"),
                     and_(candidates.c.prominent == 0, wanted_rank != "normal"))),
        )
        query = (
            select(candidates.c.id, files.c.page_id, files.c.title, candidates.c.qid,
                   edits.c.statement_id, edits.c.batch_id, edits.c.revid, edits.c.rank,
                   candidates.c.state, candidates.c.prominent, candidates.c.reviewer)
            .select_from(latest)
            .join(edits, edits.c.id == latest.c.last_id)
            .join(candidates, candidates.c.id == latest.c.candidate_id)
            .join(files, files.c.id == candidates.c.file_id)
            .where(edits.c.outcome == EditOutcome.WRITTEN.value, disagrees)
            .order_by(edits.c.id)
        )
        if claimable_only:
            query = query.where(self._claimable(candidates, now),
                                or_(candidates.c.retry_after.is_(None), candidates.c.retry_after <= now))
        if limit is not None:
            query = query.limit(limit)
        with self.transaction() as conn:
            rows = conn.execute(query).all()
        return [
            FollowUp(candidate_id=int(r.id), page_id=int(r.page_id), title=r.title, qid=r.qid,
                     statement_id=r.statement_id, batch_id=r.batch_id, revid=int(r.revid or 0),
                     written_rank=r.rank or "", state=CandidateState(r.state),
                     prominent=bool(r.prominent), reviewer=r.reviewer or "")
            for r in rows
        ]
