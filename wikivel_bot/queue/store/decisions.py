"""The store's record of reviewers' decisions on (file, item) pairs, and their undo.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). A decision moves a candidate (approve,
reject, skip, …) and appends to ``decisions`` in the same transaction, with the state before,
so an undo can put the pair back — unless something (a write) moved it since. No decision
silently replaces another reviewer's: the change is a compare-and-set on the state the
reviewer saw, and only an operator's override (recorded as one) changes a pair someone else
decided. A rejection is
the queue's permanent memory: :meth:`DecisionsMixin.rejected_items` is what the linker asks
so it never proposes a rejected item again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, List, Optional, Set

from sqlalchemy import ColumnElement, insert, select, update

from wikivel_bot.core import states
from wikivel_bot.core.evidence_view import HAND_MARK
from wikivel_bot.core.review_rules import state_text
from wikivel_bot.errors import DecisionConflict, IllegalTransition, NotFound, UsageError
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
        *, add_unproposed: bool = True, seen: Optional[Seen] = None, override: bool = False,
    ) -> "Recorded":
        """Apply a reviewer's decision on (file, item) and keep it in the audit trail.

        A pair that was never proposed can still be decided (a reviewer adding or refusing
        an item by hand): its candidate row is created on the spot, unless
        ``add_unproposed`` is False (the web decides only what was proposed).

        No silent override: a pair another reviewer decided changes only with ``override``
        (an operator), and the decision row names whose decision it replaced (``overrode``).
        With ``seen`` (what the reviewer's screen showed), the pair changes only if it is
        still so: a compare-and-set UPDATE on that state in the same transaction.

        One transaction, and on the usual path (the pair exists) three statements: the
        pair is found and locked by page id directly, the file's row id is only looked up
        when the pair is missing. The web records a decision per request, so its round
        trips are the request's latency on a server database.
        :return: the decision's id (for undo), a :class:`Recorded`: its ``in_flight`` says
            whether a writer held the pair (the reviewer is told what will follow).
        :raises NotFound: the file is not queued, or (``add_unproposed`` False, or a skip)
            the pair was never proposed. :raises DecisionConflict: (an IllegalTransition)
            the pair is in a state this decision cannot apply to (e.g. already written), is
            no longer as ``seen``, or another reviewer decided it and this is no override;
            nothing is changed.
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
                select(candidates.c.id, candidates.c.state, candidates.c.prominent, candidates.c.reviewer,
                       candidates.c.claimed_by, candidates.c.claimed_at)
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
                        evidence=dict(HAND_MARK),  # read back as "added by hand", never "image only"
                    )
                )
                cand_id, now_is = _new_id(result), Seen()
            else:
                cand_id = int(row.id)
                now_is = Seen(CandidateState(row.state), row.reviewer or "", bool(row.prominent))
            pair = f"M{page_id} {qid}"
            if seen is not None and not seen.matches(now_is):
                raise _conflict(f"{pair} is {now_is.describe()} now, not {seen.describe()} as you saw it: "
                                "nothing changed", now_is)
            if now_is.state not in states.decision_sources(action):
                raise _conflict(f"cannot {action.value} {pair}: it is already {now_is.describe()}", now_is)
            overrode = now_is.reviewer if now_is.decided and now_is.reviewer != reviewer else None
            if overrode and not override:
                raise _conflict(f"{pair} is {now_is.describe()}: only an operator may override another "
                                "reviewer's decision; nothing changed", now_is)
            # Compare-and-set: the row changes only while it is still as read above.
            moved = conn.execute(
                update(candidates).where(candidates.c.id == cand_id, *now_is.conditions()).values(
                    state=states.DECISION_TARGET[action].value,
                    prominent=int(action is DecisionAction.APPROVE_PROMINENT),
                    # A pair waiting for review has no reviewer: a skip is no decision.
                    reviewer=None if action is DecisionAction.SKIP else reviewer,
                    # A new decision is a new approval: a dry run simulates it afresh.
                    retry_after=None, simulated_at=None, updated_at=now,
                    # Any writer's claim ends with the decision it was working for: a pair
                    # approved again must be claimable at once, not after a lease.
                    claimed_by=None, claimed_at=None,
                )
            ).rowcount
            if moved != 1:
                raise _conflict(f"{pair} changed meanwhile: nothing changed", now_is)
            result = conn.execute(
                insert(decisions).values(
                    candidate_id=cand_id, action=action.value, reviewer=reviewer,
                    source=source, previous_state=now_is.state.value, decided_at=now,
                    overrode=overrode,
                )
            )
            # Read under the lock above, before the UPDATE cleared it: a writer held the pair.
            writing = row is not None and self._writing(row, now)
            if writing and action is DecisionAction.REJECT:
                return Recorded(_new_id(result), REMOVED_AGAIN)
            if writing and row is not None and int(action is DecisionAction.APPROVE_PROMINENT) != int(row.prominent):
                return Recorded(_new_id(result), RANK_CHANGED)
            return Recorded(_new_id(result))

    def _writing(self, row: Any, now: datetime) -> bool:
        """Whether a writer held this approved pair (its edit may be on its way)."""
        return (row.state == CandidateState.APPROVED.value and row.claimed_by is not None
                and row.claimed_at is not None and row.claimed_at >= now - self.claim_lease)

    def undo_decision(self, decision_id: int) -> "Recorded":
        """Put the pair back to where it was before the decision, if nothing moved since.

        The pair goes back to its previous state and reviewer: none for a pair waiting for
        review, the overridden reviewer after an override; an approval restored keeps the
        rank of the decision that made it.

        :return: the undone decision's id; its ``in_flight`` says an undone approval's pair
            was being written (the statement will be removed again if its edit left).
        """
        now = self._now()
        with self.transaction() as conn:
            decision = conn.execute(select(decisions).where(decisions.c.id == decision_id)).first()
            if decision is None:
                raise NotFound(f"no decision {decision_id}")
            action = DecisionAction(decision.action)
            target = states.DECISION_TARGET[action].value
            moved_since = [candidates.c.id == decision.candidate_id, candidates.c.state == target]
            if action is not DecisionAction.SKIP:
                # Someone else's later decision (an operator's override) is not ours to undo.
                moved_since.append(candidates.c.reviewer == decision.reviewer)
            pair = conn.execute(
                select(candidates.c.state, candidates.c.claimed_by, candidates.c.claimed_at)
                .where(candidates.c.id == decision.candidate_id).with_for_update()
            ).first()
            decided_before = decision.previous_state != CandidateState.PROPOSED.value
            before = conn.execute(
                select(decisions.c.action).where(decisions.c.candidate_id == decision.candidate_id,
                                                 decisions.c.id < decision_id)
                .order_by(decisions.c.id.desc()).limit(1)
            ).scalar() if decided_before else None
            moved = conn.execute(
                update(candidates).where(*moved_since).values(
                    state=decision.previous_state,
                    prominent=int(before == DecisionAction.APPROVE_PROMINENT.value),
                    reviewer=(decision.overrode or decision.reviewer) if decided_before else None,
                    updated_at=now, claimed_by=None, claimed_at=None,  # as a decision
                )
            ).rowcount
            if moved != 1:
                raise IllegalTransition(f"decision {decision_id} can no longer be undone")
            conn.execute(decisions.delete().where(decisions.c.id == decision_id))
        writing = pair is not None and self._writing(pair, now) and action is not DecisionAction.SKIP
        if not writing:
            return Recorded(decision_id)
        # Back to an earlier approval: the statement stays, at that approval's rank.
        back_to_approved = decision.previous_state == CandidateState.APPROVED.value
        return Recorded(decision_id, RANK_CHANGED if back_to_approved else REMOVED_AGAIN)


# What a decision that lands while its pair is being written does to a statement whose edit
# already left (``Recorded.in_flight``); the writer's follow-up makes it so.
REMOVED_AGAIN = "removed again"
RANK_CHANGED = "rank changed"


class Recorded(int):
    """A decision's id (an ``int``, as before) that also tells whether the pair was being
    written when it landed: ``in_flight`` is ``REMOVED_AGAIN`` or ``RANK_CHANGED`` then, else
    "". Read under the decision's own lock, so it is exact for that moment."""

    in_flight: str

    def __new__(cls, value: int, in_flight: str = "") -> "Recorded":
        made = super().__new__(cls, value)
        made.in_flight = in_flight
        return made


@dataclass(frozen=True)
class Seen:
    """A pair as a reviewer saw it: its state, who decided it ("" while it waits for review)
    and, when known, its rank. A decision made with it applies only while the pair is so."""

    state: CandidateState = CandidateState.PROPOSED
    reviewer: str = ""
    # None: the rank is not compared.
    prominent: Optional[bool] = None

    @property
    def decided(self) -> bool:
        """True when a reviewer's decision holds the pair (approved or rejected)."""
        return self.state in (CandidateState.APPROVED, CandidateState.REJECTED)

    def matches(self, now: "Seen") -> bool:
        """True when the pair is still as seen; who skipped a waiting pair does not matter."""
        if self.state is not now.state:
            return False
        if self.prominent is not None and self.state is CandidateState.APPROVED and self.prominent != now.prominent:
            return False
        return not self.decided or self.reviewer == now.reviewer

    def describe(self) -> str:
        """``approved (prominent) by Alice``, ``proposed``, ``written by the bot account,
        approved by Alice`` (``core.review_rules.state_text``)."""
        return state_text(self.state, self.reviewer, self.prominent)

    def conditions(self) -> List[ColumnElement[bool]]:
        """The WHERE conditions of a compare-and-set on this state (``prominent`` known)."""
        who = candidates.c.reviewer.is_(None) if not self.reviewer else candidates.c.reviewer == self.reviewer
        return [candidates.c.state == self.state.value, candidates.c.prominent == int(bool(self.prominent)), who]


def _conflict(message: str, now: Seen) -> DecisionConflict:
    return DecisionConflict(message, state=now.state.value, reviewer=now.reviewer, prominent=bool(now.prominent))


def _new_id(result: Any) -> int:
    """The primary key an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None, "INSERT without a primary key"
    return int(key[0])
