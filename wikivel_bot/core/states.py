"""The queue's state machines: which moves are legal. The store enforces these.

Files::

    discovered ──fetch──> fetched ──link──> linked
        │                   │  └──relink──> linked (label set or linker changed)
        ├──> ineligible     └──> unavailable
        └──> unavailable

Candidates (one per file and item)::

    proposed ──approve──> approved ──write──> written ──revert──> reverted
       │  ^                  │  └──> write_skipped, write_failed
       │  └──undo────────────┘
       └──reject──> rejected   (permanent: the pair is never proposed again)

A write that fails transiently leaves the candidate ``approved`` with a retry time; only a
permanent failure moves it to ``write_failed``. A dry run changes no state at all: the pair stays
``approved`` (``simulated_at`` marks it simulated, the audit trail has a ``dry_run`` row), so a
community trial's approvals are written for real by the next real ``write``.
"""

from __future__ import annotations

from typing import Dict, FrozenSet

from wikivel_bot.types import CandidateState as C
from wikivel_bot.types import DecisionAction
from wikivel_bot.types import FileState as F

FILE_MOVES: Dict[F, FrozenSet[F]] = {
    F.DISCOVERED: frozenset({F.FETCHED, F.INELIGIBLE, F.UNAVAILABLE}),
    F.FETCHED: frozenset({F.LINKED, F.UNAVAILABLE, F.INELIGIBLE, F.DISCOVERED}),
    F.LINKED: frozenset({F.LINKED, F.FETCHED, F.UNAVAILABLE}),
    F.INELIGIBLE: frozenset(),
    F.UNAVAILABLE: frozenset({F.DISCOVERED}),
}

CANDIDATE_MOVES: Dict[C, FrozenSet[C]] = {
    C.PROPOSED: frozenset({C.APPROVED, C.REJECTED}),
    C.APPROVED: frozenset({C.PROPOSED, C.REJECTED, C.WRITTEN, C.WRITE_SKIPPED, C.WRITE_FAILED}),
    C.REJECTED: frozenset({C.PROPOSED}),  # only through an explicit undo
    C.WRITTEN: frozenset({C.REVERTED}),
    C.WRITE_SKIPPED: frozenset({C.APPROVED}),
    C.WRITE_FAILED: frozenset({C.APPROVED}),
    C.REVERTED: frozenset(),
}

# The candidate state a decision leads to (skip changes nothing).
DECISION_TARGET: Dict[DecisionAction, C] = {
    DecisionAction.APPROVE: C.APPROVED,
    DecisionAction.APPROVE_PROMINENT: C.APPROVED,
    DecisionAction.REJECT: C.REJECTED,
    DecisionAction.SKIP: C.PROPOSED,
}


def file_sources(target: F) -> FrozenSet[F]:
    """The file states from which ``target`` may be reached."""
    return frozenset(src for src, targets in FILE_MOVES.items() if target in targets)


def candidate_sources(target: C) -> FrozenSet[C]:
    """The candidate states from which ``target`` may be reached."""
    return frozenset(src for src, targets in CANDIDATE_MOVES.items() if target in targets)


def decision_sources(action: DecisionAction) -> FrozenSet[C]:
    """The candidate states a reviewer's decision may be applied to.

    Decisions apply to pairs still waiting for a human, and a reviewer may change their mind
    about a pair not yet written (approve → reject, reject → approve is an undo).
    """
    if action is DecisionAction.SKIP:
        return frozenset({C.PROPOSED})
    if action is DecisionAction.REJECT:
        return frozenset({C.PROPOSED, C.APPROVED})
    return frozenset({C.PROPOSED, C.APPROVED})
