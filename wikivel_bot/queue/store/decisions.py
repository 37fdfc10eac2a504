"""The store's record of reviewers' decisions on (file, item) pairs, and their undo.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). A decision moves a candidate (approve,
reject, skip, …) and appends to ``decisions`` in the same transaction, with the state before,
so an undo can put the pair back — unless something (a write) moved it since. A rejection is
the queue's permanent memory: :meth:`DecisionsMixin.rejected_items` is what the linker asks
so it never proposes a rejected item again.
"""

from __future__ import annotations

from typing import Any, Set

from sqlalchemy import insert, select, update

from wikivel_bot.core import states
from wikivel_bot.errors import IllegalTransition, NotFound, UsageError
from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import candidates, decisions, files
from wikivel_bot.types import CandidateState, DecisionAction, is_qid


class DecisionsMixin(StoreBase):
    """Recording, undoing and reading reviewers' decisions (see the module docstring)."""

    def rejected_items(self, file_id: int) -> Set[str]:
        """The items a human rejected for this file (never to be proposed again)."""
        with self.transaction() as conn:
            return set(
                conn.execute(
                    select(candidates.c.qid).where(
                        candidates.c.file_id == file_id,
                        candidates.c.state == CandidateState.REJECTED.value,
                    )
                ).scalars()
            )

    def record_decision(
        self, page_id: int, qid: str, action: DecisionAction, reviewer: str, source: str,
        *, add_unproposed: bool = True,
    ) -> int:
        """Apply a reviewer's decision on (file, item) and keep it in the audit trail.

        A pair that was never proposed can still be decided (a reviewer adding or refusing
        an item by hand): its candidate row is created on the spot, unless
        ``add_unproposed`` is False (the web decides only what was proposed).

        One transaction, and on the usual path (the pair exists) three statements: the
        pair is found and locked by page id directly, the file's row id is only looked up
        when the pair is missing. The web records a decision per request, so its round
        trips are the request's latency on a server database.
        :return: the decision's id (for undo).
        :raises NotFound: the file is not queued, or (``add_unproposed`` False, or a skip)
            the pair was never proposed. :raises IllegalTransition: the pair is in a state
            this decision cannot apply to (e.g. already written).
        """
        if not is_qid(qid):
            raise UsageError(f"not a Wikidata item id: {qid!r}")
        if not reviewer:
            raise UsageError("a decision needs a reviewer name (--reviewer or review.reviewer)")
        now = self._now()
        with self.transaction() as conn:
            # The file as a scalar subquery, not a join: a locking read then locks only the
            # pair's row (MariaDB has no FOR UPDATE OF), never the file's.
            file_ids = select(files.c.id).where(files.c.page_id == page_id).scalar_subquery()
            row = conn.execute(
                select(candidates.c.id, candidates.c.state)
                .where(candidates.c.file_id == file_ids, candidates.c.qid == qid)
                .with_for_update()
            ).first()
            if row is None:
                file_id = conn.execute(select(files.c.id).where(files.c.page_id == page_id)).scalar()
                if file_id is None:
                    raise NotFound(f"file M{page_id} is not in the queue")
                if action is DecisionAction.SKIP or not add_unproposed:
                    raise NotFound(f"M{page_id} {qid} was never proposed: there is nothing to "
                                   f"{action.value.replace('_', ' ')}")
                result = conn.execute(
                    insert(candidates).values(
                        file_id=file_id, qid=qid, state=CandidateState.PROPOSED.value,
                        prominent=0, attempts=0, created_at=now, updated_at=now,
                        evidence={"source": "added by reviewer"},
                    )
                )
                cand_id, previous = _new_id(result), CandidateState.PROPOSED.value
            else:
                cand_id, previous = int(row.id), row.state
            if CandidateState(previous) not in states.decision_sources(action):
                raise IllegalTransition(
                    f"cannot {action.value} M{page_id} {qid}: it is already {previous}"
                )
            conn.execute(
                update(candidates).where(candidates.c.id == cand_id).values(
                    state=states.DECISION_TARGET[action].value,
                    prominent=int(action is DecisionAction.APPROVE_PROMINENT),
                    # A new decision is a new approval: a dry run simulates it afresh.
                    reviewer=reviewer, retry_after=None, simulated_at=None, updated_at=now,
                )
            )
            result = conn.execute(
                insert(decisions).values(
                    candidate_id=cand_id, action=action.value, reviewer=reviewer,
                    source=source, previous_state=previous, decided_at=now,
                )
            )
            return _new_id(result)

    def undo_decision(self, decision_id: int) -> None:
        """Put the pair back to where it was before the decision, if nothing moved since."""
        with self.transaction() as conn:
            decision = conn.execute(select(decisions).where(decisions.c.id == decision_id)).first()
            if decision is None:
                raise NotFound(f"no decision {decision_id}")
            target = states.DECISION_TARGET[DecisionAction(decision.action)].value
            moved = conn.execute(
                update(candidates)
                .where(candidates.c.id == decision.candidate_id, candidates.c.state == target)
                .values(state=decision.previous_state, prominent=0, updated_at=self._now())
            ).rowcount
            if moved != 1:
                raise IllegalTransition(f"decision {decision_id} can no longer be undone")
            conn.execute(decisions.delete().where(decisions.c.id == decision_id))


def _new_id(result: Any) -> int:
    """The primary key an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None, "INSERT without a primary key"
    return int(key[0])
