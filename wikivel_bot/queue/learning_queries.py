"""Read queries for learning from reviewers (``wikivel_bot.learning``): every human decision
with the pair it was made on and the file it was shown with.

Only reads, so safe while the daemon and reviewers work. The choice of which decisions count
(the newest per pair, undone ones already gone, skips, bot and dry-run outcomes never here)
is made above, in ``learning.records``; this module returns every decision row as it is, with
the pair's current state beside it, and the candidates each decided file was shown with.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Tuple

from sqlalchemy import select

from wikivel_bot.queue.rows import from_db_time
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, decisions, files


@dataclass(frozen=True)
class DecisionRow:
    """One row of ``decisions`` with its pair and file.

    :param state: the pair's state now (an approval since written stays an approval).
    :param uploaded_at: the file's upload time (UTC), for the date-ordered splits.
    """

    decision_id: int
    page_id: int
    title: str
    qid: str
    action: str
    reviewer: str
    source: str
    decided_at: Optional[datetime]
    state: str
    uploaded_at: Optional[datetime]


@dataclass(frozen=True)
class ShownFile:
    """What the reviewer saw of a file: its media document and its candidates (best first)."""

    page_id: int
    title: str
    uploaded_at: Optional[datetime]
    media: Mapping[str, Any]
    candidates: Tuple[Mapping[str, Any], ...]


def decision_rows(store: Store) -> List[DecisionRow]:
    """Every recorded decision, oldest first (by id: ids grow with time on every backend)."""
    query = (
        select(decisions.c.id, files.c.page_id, files.c.title, candidates.c.qid, decisions.c.action,
               decisions.c.reviewer, decisions.c.source, decisions.c.decided_at, candidates.c.state,
               files.c.uploaded_at)
        .join(candidates, candidates.c.id == decisions.c.candidate_id)
        .join(files, files.c.id == candidates.c.file_id)
        .order_by(decisions.c.id)
    )
    with store.reading() as conn:
        return [DecisionRow(int(r.id), int(r.page_id), r.title, r.qid, r.action, r.reviewer, r.source,
                            from_db_time(r.decided_at), r.state, from_db_time(r.uploaded_at))
                for r in conn.execute(query)]


def shown_files(store: Store, page_ids: List[int], chunk: int = 500) -> Dict[int, ShownFile]:
    """The decided files with every candidate the linker proposed for them (rank order)."""
    out: Dict[int, ShownFile] = {}
    with store.reading() as conn:
        for start in range(0, len(page_ids), chunk):
            part = page_ids[start:start + chunk]
            rows = conn.execute(
                select(files.c.id, files.c.page_id, files.c.title, files.c.uploaded_at, files.c.media)
                .where(files.c.page_id.in_(part))
            ).all()
            by_id = {int(r.id): r for r in rows}
            cands: Dict[int, List[Mapping[str, Any]]] = {i: [] for i in by_id}
            for c in conn.execute(
                select(candidates.c.file_id, candidates.c.qid, candidates.c.score, candidates.c.rank,
                       candidates.c.linker_version, candidates.c.evidence)
                .where(candidates.c.file_id.in_(list(by_id)))
                .order_by(candidates.c.file_id, candidates.c.rank, candidates.c.id)
            ):
                cands[int(c.file_id)].append({
                    "qid": c.qid, "score": None if c.score is None else float(c.score),
                    "rank": c.rank, "linker_version": c.linker_version, "evidence": c.evidence or {},
                })
            for file_id, r in by_id.items():
                out[int(r.page_id)] = ShownFile(int(r.page_id), r.title, from_db_time(r.uploaded_at),
                                                r.media or {}, tuple(cands[file_id]))
    return out


# Waiting files read to choose the most uncertain one (the uncertainty order is exact within
# this window of the oldest waiting files, so a session never reads a whole queue per file).
ORDER_WINDOW = 1000


def next_uncertain_file(store: Store, flt: Any, threshold: float, after_id: int = 0,
                        exclude: Tuple[int, ...] = (), window: int = ORDER_WINDOW) -> Any:
    """The next waiting file in the uncertainty order (``core.review_order``), after
    ``after_id`` in that order, among the oldest ``window`` waiting files; None when done.

    :param flt: the ``ReviewFilter`` of the session or page.
    :param exclude: files already shown in this session (a terminal session's skips).
    """
    from itertools import islice

    from wikivel_bot.core.review_order import next_in_order, uncertainty_order
    from wikivel_bot.queue.reviews import iter_review_files

    ordered = uncertainty_order(islice(iter_review_files(store, flt), window), threshold)
    return next_in_order(ordered, after_id, exclude)


def uncertain_queue_page(store: Store, query: Any, threshold: float, after_id: int = 0, limit: int = 24,
                         window: int = ORDER_WINDOW) -> Tuple[List[Any], Optional[int]]:
    """A grid page in the uncertainty order: ``limit`` files after ``after_id`` in that order,
    among the oldest ``window`` files matching ``query`` (from the top when ``after_id`` left
    it: a decided file has left the queue).

    :param query: the page's ``web_queries.QueueQuery``; with an item only that item's pairs are
        read, so a file is placed by that pair's distance from the boundary.
    :return: the files and the ``after`` value of the next page (None when this was the last).
    """
    from wikivel_bot.core.review_order import uncertainty_order
    from wikivel_bot.queue.web_queries import queue_page

    ordered = uncertainty_order(queue_page(store, query, limit=window)[0], threshold)
    ids = [f.file_id for f in ordered]
    start = ids.index(after_id) + 1 if after_id in ids else 0
    page = ordered[start:start + limit]
    return page, (page[-1].file_id if page and start + limit < len(ordered) else None)
