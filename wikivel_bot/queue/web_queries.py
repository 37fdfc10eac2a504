"""Read queries for the web review (``wikivel_bot.web``): paged queue, one file, tallies, batches.

Like :mod:`wikivel_bot.queue.reviews` this module only reads; every state change goes
through :class:`~wikivel_bot.queue.store.Store`. Results are the plain values of
``core.review_rules`` or the small dataclasses below.

Paging is by ``files.id`` (``after=`` the last id of the previous page), never OFFSET, so a
page costs the same at the millionth file as at the first and a reviewer's page does not
shift when someone else decides a file meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Dict, List, Optional, Tuple

from sqlalchemy import and_, exists, func, select
from sqlalchemy.exc import DBAPIError

from wikivel_bot.core.review_rules import ReviewFile, ReviewFilter, category_matches
from wikivel_bot.core.safety import ItemCheck
from wikivel_bot.errors import DatabaseUnavailable
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, decisions, edits, files
from wikivel_bot.types import CandidateState, DecisionAction


@dataclass(frozen=True)
class QueueQuery:
    """What ``GET /api/queue`` and the grid ask for.

    :param flt: states, minimum score, category, linker (as the terminal review's filters).
    :param item: only pairs proposing this item (the grid: one item across many files).
    :param max_score: only pairs scoring below this (with ``flt.min_score``: a score band).
    """

    flt: ReviewFilter = field(default_factory=ReviewFilter)
    item: str = ""
    max_score: Optional[float] = None


@dataclass(frozen=True)
class BatchSummary:
    """One write run: its id, when it ran, and its outcomes counted."""

    batch_id: str
    started: Optional[datetime]
    finished: Optional[datetime]
    outcomes: Dict[str, int]


def ping(store: Store) -> None:
    """Raise DatabaseUnavailable unless the queue's tables answer a query."""
    try:
        with store.transaction() as conn:
            conn.execute(select(files.c.id).limit(1)).all()
    except DBAPIError as exc:
        raise DatabaseUnavailable(f"the queue does not answer: {type(exc.orig).__name__}") from None


def queue_page(store: Store, query: QueueQuery, after_id: int = 0, limit: int = 24
               ) -> Tuple[List[ReviewFile], Optional[int]]:
    """Up to ``limit`` files after ``after_id`` with their matching pairs, oldest first.

    :return: the files and the ``after`` value of the next page (None when this was the last).
    """
    cond = reviews._candidate_condition(query.flt)
    if query.item:
        cond = and_(cond, candidates.c.qid == query.item)
    if query.max_score is not None:
        cond = and_(cond, candidates.c.score < query.max_score)
    found: List[ReviewFile] = []
    chunk = max(limit, 1) if not query.flt.category else reviews.CHUNK
    while True:
        # The candidates are read after the files, each query on its own (no transaction):
        # a pair decided in between is left out, as it would be a moment later.
        with store.reading() as conn:
            rows = conn.execute(
                select(files.c.id, files.c.page_id, files.c.title, files.c.uploader,
                       files.c.uploaded_at, files.c.media)
                .where(files.c.id > after_id, *reviews._file_conditions(query.flt))
                .where(exists().where(candidates.c.file_id == files.c.id, cond))
                .order_by(files.c.id)
                .limit(chunk)
            ).all()
            wanted = [r for r in rows if not query.flt.category
                      or category_matches(query.flt.category, reviews._categories(r.media))]
            by_file = reviews._candidates_of(conn, [r.id for r in wanted], cond)
        for row in wanted:
            shown = reviews._review_file(row, by_file[row.id], query.flt.safety) if by_file.get(row.id) else None
            if shown is not None and shown.candidates:
                found.append(shown)
                if len(found) == limit:
                    return found, int(row.id)
        if len(rows) < chunk:
            return found, None
        after_id = int(rows[-1].id)


def file_detail(store: Store, page_id: int, safety: Optional[ItemCheck] = None) -> Optional[ReviewFile]:
    """A live file with every one of its pairs, whatever their state; None when not queued.

    :param safety: the current safety rules: queued pairs they withhold are left out.
    """
    flt = ReviewFilter(states=tuple(CandidateState), page_ids=(page_id,), safety=safety)
    return reviews.next_review_file(store, flt)


def file_after(store: Store, flt: ReviewFilter, file_id: int, backwards: bool = False) -> Optional[ReviewFile]:
    """The next (or previous) file waiting for review next to ``file_id``, for ←/→."""
    if not backwards:
        return reviews.next_review_file(store, flt, after_id=file_id)
    cond = reviews._candidate_condition(flt)
    with store.transaction() as conn:
        found = conn.execute(
            select(files.c.id).where(files.c.id < file_id, *reviews._file_conditions(flt))
            .where(exists().where(candidates.c.file_id == files.c.id, cond))
            .order_by(files.c.id.desc()).limit(1)
        ).scalar()
    if found is None:
        return None
    return reviews.next_review_file(store, flt, after_id=int(found) - 1)


def newest_decision(store: Store, page_id: int, qid: str, reviewer: str) -> Optional[int]:
    """The id of ``reviewer``'s newest decision on the pair, if it is the pair's newest at all.

    Undo takes back only the decision that put the pair where it is: when someone else
    decided after this reviewer, there is nothing of theirs left to undo.
    """
    with store.transaction() as conn:
        row = conn.execute(
            select(decisions.c.id, decisions.c.reviewer)
            .join(candidates, candidates.c.id == decisions.c.candidate_id)
            .join(files, files.c.id == candidates.c.file_id)
            .where(files.c.page_id == page_id, candidates.c.qid == qid)
            .order_by(decisions.c.id.desc()).limit(1)
        ).first()
    if row is None or row.reviewer != reviewer:
        return None
    return int(row.id)


def tally(store: Store, reviewer: str = "", since: Optional[datetime] = None) -> Dict[str, int]:
    """Decisions recorded, by action: one reviewer's (``reviewer``) or everyone's."""
    query = select(decisions.c.action, func.count()).group_by(decisions.c.action)
    if reviewer:
        query = query.where(decisions.c.reviewer == reviewer)
    if since is not None:
        query = query.where(decisions.c.decided_at >= since)
    out = {a.value: 0 for a in DecisionAction}
    with store.transaction() as conn:
        for action, n in conn.execute(query):
            out[action] = int(n)
    return out


def recent_batches(store: Store, limit: int = 50) -> List[BatchSummary]:
    """The newest ``limit`` write batches, newest first, with their outcomes counted."""
    with store.transaction() as conn:
        newest = conn.execute(
            select(edits.c.batch_id, func.min(edits.c.started_at), func.max(edits.c.finished_at))
            .group_by(edits.c.batch_id)
            .order_by(func.max(edits.c.finished_at).desc()).limit(limit)
        ).all()
        ids = [r[0] for r in newest]
        counts: Dict[str, Dict[str, int]] = {b: {} for b in ids}
        if ids:
            for batch_id, outcome, n in conn.execute(
                select(edits.c.batch_id, edits.c.outcome, func.count())
                .where(edits.c.batch_id.in_(ids)).group_by(edits.c.batch_id, edits.c.outcome)
            ):
                counts[batch_id][outcome] = int(n)
    # Whole seconds for both: a writer's start time carries microseconds, the recorded finish
    # does not, and the page showed one with and one without.
    return [BatchSummary(r[0], _whole_second(r[1]), _whole_second(r[2]), counts[r[0]]) for r in newest]


def _whole_second(when: Optional[datetime]) -> Optional[datetime]:
    return when.replace(microsecond=0) if when is not None else None


def review_filter(flt: ReviewFilter, states: Tuple[CandidateState, ...]) -> ReviewFilter:
    """``flt`` with other candidate states (the API's ``state=`` parameter)."""
    return replace(flt, states=states)


def top_items(store: Store, limit: int = 40, safety: Optional[ItemCheck] = None) -> List[Tuple[str, int, str]]:
    """The items with the most pairs waiting for review: (qid, pairs, a label from evidence).

    The grid's start page: one item across many files goes fastest where an item has many.
    :param safety: the current safety rules: an item they withhold without evidence (a
        person) is not listed (its pairs in files whose evidence ties them to it show in
        that file's grid).
    """
    with store.transaction() as conn:
        rows = conn.execute(
            select(candidates.c.qid, func.count(), func.max(candidates.c.id))
            .where(candidates.c.state == CandidateState.PROPOSED.value)
            .group_by(candidates.c.qid).order_by(func.count().desc(), candidates.c.qid).limit(limit)
        ).all()
        ids = [int(r[2]) for r in rows]
        evidence = dict(conn.execute(select(candidates.c.id, candidates.c.evidence).where(candidates.c.id.in_(ids))).all()) if ids else {}
    out = []
    for qid, n, newest in rows:
        if safety is not None and safety(qid, ()).withheld:
            continue
        ev = evidence.get(newest)
        out.append((qid, int(n), str(ev.get("label") or "") if isinstance(ev, dict) else ""))
    return out


def file_title(store: Store, page_id: int) -> Optional[str]:
    """The queued file's title (``File:Name.jpg``), None when it is not queued."""
    with store.reading() as conn:
        return conn.execute(select(files.c.title).where(files.c.page_id == page_id)).scalar()


def pair_state(store: Store, page_id: int, qid: str) -> Tuple[bool, Optional[CandidateState]]:
    """(file queued?, the pair's state or None) in one query: the decision API's pre-check,
    on every decision, so one round trip rather than :func:`reviews.pair_status`'s three."""
    with store.transaction() as conn:
        row = conn.execute(
            select(files.c.id, candidates.c.state)
            .select_from(files.outerjoin(candidates, and_(candidates.c.file_id == files.c.id,
                                                          candidates.c.qid == qid)))
            .where(files.c.page_id == page_id)
        ).first()
    if row is None:
        return False, None
    return True, CandidateState(row.state) if row.state else None
