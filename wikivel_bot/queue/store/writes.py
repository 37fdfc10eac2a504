"""The store's record of write attempts: a pair's move after its edit, and the audit trail.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). Every attempt — written, skipped, failed or
simulated — appends one ``edits`` row in the transaction that moves the pair, so the audit
never disagrees with the queue. Claiming the pairs to write is in ``claims``; reverting a
batch's writes is in ``revert_queries``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, List, Optional, Tuple, Union

from sqlalchemy import insert, select, update

from wikivel_bot.core import states
from wikivel_bot.errors import IllegalTransition, LeaseLost, NotFound
from wikivel_bot.queue.rows import to_db_time
from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import candidates, edits, files, sends
from wikivel_bot.types import CandidateState, DryRun, Failed, Skipped, Written

Outcome = Union[Written, Skipped, Failed, DryRun]
# How a send was settled (``sends.settled_as``).
APPLIED, APPLIED_LATE, NOT_APPLIED = "applied", "applied_late", "not_applied"


class WritesMixin(StoreBase):
    """Recording write outcomes and reading them back (see the module docstring)."""

    def record_edit(
        self, candidate_id: int, batch_id: str, outcome: Outcome, started_at: object,
        max_attempts: int = 5, worker: Optional[str] = None,
    ) -> CandidateState:
        """Store the outcome of one write attempt and move the pair accordingly.

        Transient failures (``Failed`` with ``retry_after``) keep the pair approved with a
        retry time until ``max_attempts`` is used up; then, like permanent failures, it is
        left as ``write_failed`` for a human. A ``DryRun`` changes nothing but the audit trail
        and the pair's ``simulated_at``: it stays approved for a real write.

        A ``Written`` is always recorded, whatever happened to the pair meanwhile: the edit is
        on the wiki, so the audit (and ``revert``) must know it. When the pair is no longer
        approved (a reject or an undo arrived while the request was in flight) the row is
        added and the pair keeps the state the human gave it; when another writer holds it,
        it moves to ``written`` all the same.
        :param worker: the lease holder recording; when given, the pair must still be its
            claim for any other outcome, else :class:`LeaseLost` and nothing is recorded (a
            second writer that took the pair over records it once, not twice).
        :return: the pair's new state.
        """
        now = self._now()
        with self.transaction() as conn:
            return self._record_edit_in(conn, candidate_id, batch_id, outcome, started_at,
                                        max_attempts, worker, now)

    def _record_edit_in(self, conn: Any, candidate_id: int, batch_id: str, outcome: Outcome,
                        started_at: object, max_attempts: int, worker: Optional[str],
                        now: Any) -> CandidateState:
        """:meth:`record_edit` inside the caller's transaction (``sends`` records a late
        edit in the transaction that settles its send)."""
        row = conn.execute(
            select(candidates.c.state, candidates.c.attempts, candidates.c.claimed_by)
            .where(candidates.c.id == candidate_id)
            .with_for_update()
        ).first()
        if row is None:
            raise NotFound(f"no candidate {candidate_id}")
        made = isinstance(outcome, Written)
        if worker is not None and not made and (row.claimed_by != worker
                                                or row.state != CandidateState.APPROVED.value):
            raise LeaseLost(f"candidate {candidate_id} is no longer claimed by {worker}")
        attempt = row.attempts + 1
        target, retry_at, kind = _edit_target(outcome, attempt, max_attempts, now)
        current = CandidateState(row.state)
        if made and current is CandidateState.WRITE_FAILED:
            # The edit a writer gave up on landed after all (``sends``): the approval it
            # carried out is done.
            current = CandidateState.APPROVED
        if made and current is not CandidateState.APPROVED:
            target = current  # a human's later decision stands; the edit is recorded
        elif target is not current and target not in states.CANDIDATE_MOVES[current]:
            raise IllegalTransition(f"candidate {candidate_id} is {current.value}, not approved")
        values: Dict[str, Any] = dict(
            state=target.value, attempts=attempt, retry_after=retry_at,
            claimed_by=None, claimed_at=None, updated_at=now,
        )
        if made and current is not CandidateState.APPROVED:
            # Not ours to move: only our own claim (if any) is given back.
            values = dict(updated_at=now, attempts=attempt)
            if row.claimed_by is None or row.claimed_by == worker:
                values.update(claimed_by=None, claimed_at=None)
        if isinstance(outcome, DryRun):
            # Only an audit record: the approval stays for a later real write, and a
            # simulation is no attempt at writing.
            values.update(attempts=row.attempts, retry_after=None, simulated_at=now)
        conn.execute(update(candidates).where(candidates.c.id == candidate_id).values(**values))
        # A write recovered after a crash belongs to the run whose summary names it.
        recorded_batch = getattr(outcome, "batch_id", "") or batch_id
        conn.execute(
            insert(edits).values(
                candidate_id=candidate_id, batch_id=recorded_batch, outcome=kind,
                revid=getattr(outcome, "revid", None),
                statement_id=getattr(outcome, "statement_id", None) or None,
                rank=getattr(outcome, "rank", "") or None,
                error=getattr(outcome, "reason", None), attempt=attempt,
                started_at=to_db_time(started_at), finished_at=now,  # type: ignore[arg-type]
            )
        )
        if isinstance(outcome, Written) and outcome.statement_id:
            # The statement is on the wiki and in the audit: every request that carried it
            # is settled (``sends``), so no later re-read records it a second time.
            conn.execute(
                update(sends).where(sends.c.candidate_id == candidate_id,
                                    sends.c.statement_id == outcome.statement_id,
                                    sends.c.settled_at.is_(None))
                .values(settled_at=now, settled_as=APPLIED, revid=outcome.revid)
            )
        return target

    def audit_rows(
        self, batch_id: Optional[str] = None, page_id: Optional[int] = None
    ) -> List[Dict[str, object]]:
        """Write attempts, oldest first, with the file, item and approver of each."""
        query = (
            select(
                edits.c.id, edits.c.batch_id, edits.c.outcome, edits.c.revid,
                edits.c.statement_id, edits.c.error, edits.c.attempt, edits.c.finished_at,
                candidates.c.qid, candidates.c.reviewer, files.c.page_id, files.c.title,
            )
            .join(candidates, candidates.c.id == edits.c.candidate_id)
            .join(files, files.c.id == candidates.c.file_id)
            .order_by(edits.c.id)
        )
        if batch_id is not None:
            query = query.where(edits.c.batch_id == batch_id)
        if page_id is not None:
            query = query.where(files.c.page_id == page_id)
        with self.transaction() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]


def _edit_target(
    outcome: Outcome, attempt: int, max_attempts: int, now: object
) -> Tuple[CandidateState, Optional[object], str]:
    """(new candidate state, retry time, edits.outcome) for one write outcome."""
    if isinstance(outcome, Written):
        return CandidateState.WRITTEN, None, "written"
    if isinstance(outcome, DryRun):
        return CandidateState.APPROVED, None, "dry_run"
    if isinstance(outcome, Skipped):
        return CandidateState.WRITE_SKIPPED, None, "skipped"
    if outcome.retry_after is not None and attempt < max_attempts:
        retry_at = now + timedelta(seconds=outcome.retry_after)  # type: ignore[operator]
        return CandidateState.APPROVED, retry_at, "failed"
    return CandidateState.WRITE_FAILED, None, "failed"
