"""The queue side of ``revert --batch``: what a batch wrote, and recording the reverts.

Standalone functions over a :class:`~wikivel_bot.queue.store.Store` until they are folded
into it as methods of the same names (``written_statements``, ``mark_reverted``,
``record_revert_problem``); :class:`RevertQueue` offers them with that method shape already,
so callers do not change when that happens.

A revert's audit rows go under the *original* batch id, so ``audit --batch`` shows each
statement's write and its removal together, and running the revert again finds only what is
still ``written``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Dict, List, Optional

from sqlalchemy import exists, func, insert, select, update

from wikivel_bot.errors import IllegalTransition, NotFound
from wikivel_bot.queue.rows import to_db_time, utcnow
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, edits, files
from wikivel_bot.types import CandidateState, EditOutcome

# Revert problems are stored as edits rows of these outcomes, their reason prefixed so they
# are not mistaken for the write's own skips and failures.
REVERT_PREFIX = "revert: "


@dataclass(frozen=True)
class WrittenStatement:
    """A statement a batch wrote that is still recorded as on the wiki (``written``)."""

    candidate_id: int
    page_id: int
    title: str
    qid: str
    prominent: bool
    statement_id: str
    revid: int


def written_statements(store: Store, batch_id: str) -> List[WrittenStatement]:
    """The statements ``batch_id`` wrote and nobody reverted yet, oldest first.

    Every statement the batch's edits added counts, also one whose pair a human rejected or
    undid while its edit was in flight (``record_edit`` keeps that edit in the audit, the
    pair keeps the human's state): it is on the wiki, so ``revert`` must be able to remove it.
    A statement the writer removed again as a follow-up has a ``reverted`` row and is left
    out (never removed twice); one whose rank a follow-up changed is listed once, with the
    rank it has now (its latest ``written`` row).

    :param store: a ``Store``.
    :raises NotFound: the batch has no audit row at all (a mistyped id).
    """
    undone = edits.alias("undone")
    query = (
        select(candidates.c.id, files.c.page_id, files.c.title, candidates.c.qid,
               candidates.c.prominent, edits.c.statement_id, edits.c.revid, edits.c.rank)
        .join(candidates, candidates.c.id == edits.c.candidate_id)
        .join(files, files.c.id == candidates.c.file_id)
        .where(edits.c.batch_id == batch_id, edits.c.outcome == EditOutcome.WRITTEN.value,
               candidates.c.state != CandidateState.REVERTED.value,
               edits.c.statement_id.is_not(None),
               ~exists().where(undone.c.candidate_id == edits.c.candidate_id,
                               undone.c.statement_id == edits.c.statement_id,
                               undone.c.outcome == EditOutcome.REVERTED.value))
        .order_by(edits.c.id)
    )
    with store.transaction() as conn:
        rows = conn.execute(query).all()
        if not rows and conn.execute(
            select(edits.c.id).where(edits.c.batch_id == batch_id).limit(1)
        ).first() is None:
            raise NotFound(f"no batch {batch_id!r} in the audit trail")
    latest = {(r.id, r.statement_id): r for r in rows}  # a follow-up's rank row wins
    return [
        WrittenStatement(candidate_id=int(r.id), page_id=int(r.page_id), title=r.title, qid=r.qid,
                         prominent=(r.rank == "preferred") if r.rank else bool(r.prominent),
                         statement_id=r.statement_id, revid=int(r.revid or 0))
        for r in (latest[key] for key in dict.fromkeys((r.id, r.statement_id) for r in rows))
    ]


def batch_outcomes(store: Store, batch_id: str) -> Dict[str, int]:
    """{outcome: audit rows} of ``batch_id`` (``written``, ``dry_run``, ``skipped``, ...):
    ``revert`` tells a dry-run batch, which wrote nothing, from one whose statements are gone."""
    query = (select(edits.c.outcome, func.count()).where(edits.c.batch_id == batch_id)
             .group_by(edits.c.outcome))
    with store.transaction() as conn:
        return {str(outcome): int(n) for outcome, n in conn.execute(query).all()}


def mark_reverted(store: Store, candidate_id: int, batch_id: str, revid: int,
                  statement_id: str = "", started_at: Optional[datetime] = None) -> CandidateState:
    """Move a pair ``written`` → ``reverted`` and add a ``reverted`` edits row.

    A pair a human rejected or undid after its statement was written keeps that state: only
    the ``reverted`` row is added (its statement is then no longer in ``written_statements``).
    :param revid: the revision that removed the statement.
    :raises IllegalTransition: the pair is reverted already, or was never written.
    """
    now = utcnow()
    with store.transaction() as conn:
        row = conn.execute(select(candidates.c.state).where(
            candidates.c.id == candidate_id).with_for_update()).first()
        if row is None:
            raise NotFound(f"no candidate {candidate_id}")
        current = CandidateState(row.state)
        if current is CandidateState.WRITTEN:
            conn.execute(update(candidates).where(candidates.c.id == candidate_id).values(
                state=CandidateState.REVERTED.value, claimed_by=None, claimed_at=None, updated_at=now))
        elif current is CandidateState.REVERTED or conn.execute(
                select(edits.c.id).where(edits.c.candidate_id == candidate_id,
                                         edits.c.outcome == EditOutcome.WRITTEN.value).limit(1)).first() is None:
            raise IllegalTransition(f"candidate {candidate_id} is {current.value}, not written")
        conn.execute(insert(edits).values(
            candidate_id=candidate_id, batch_id=batch_id, outcome=EditOutcome.REVERTED.value,
            revid=revid, statement_id=statement_id or None, error=None, attempt=1,
            started_at=to_db_time(started_at) or now, finished_at=now))
    return CandidateState.REVERTED


def record_revert_problem(store: Store, candidate_id: int, batch_id: str, outcome: EditOutcome,
                          reason: str, started_at: Optional[datetime] = None) -> None:
    """Keep a revert that was left alone (``skipped``) or failed (``failed``) in the audit
    trail; the pair stays ``written``.

    :param reason: why (stored as ``revert: <reason>``).
    """
    if outcome not in (EditOutcome.SKIPPED, EditOutcome.FAILED):
        raise ValueError(f"a revert problem is skipped or failed, not {outcome.value}")
    now = utcnow()
    with store.transaction() as conn:
        conn.execute(insert(edits).values(
            candidate_id=candidate_id, batch_id=batch_id, outcome=outcome.value, revid=None,
            statement_id=None, error=REVERT_PREFIX + reason, attempt=1,
            started_at=to_db_time(started_at) or now, finished_at=now))


class RevertQueue:
    """The functions above as methods of one store (the shape ``Store`` will have)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def written_statements(self, batch_id: str) -> List[WrittenStatement]:
        return written_statements(self.store, batch_id)

    def batch_outcomes(self, batch_id: str) -> Dict[str, int]:
        return batch_outcomes(self.store, batch_id)

    def mark_reverted(self, candidate_id: int, batch_id: str, revid: int, statement_id: str = "",
                      started_at: Optional[datetime] = None) -> CandidateState:
        return mark_reverted(self.store, candidate_id, batch_id, revid, statement_id, started_at)

    def record_revert_problem(self, candidate_id: int, batch_id: str, outcome: EditOutcome,
                              reason: str, started_at: Optional[datetime] = None) -> None:
        record_revert_problem(self.store, candidate_id, batch_id, outcome, reason, started_at)

