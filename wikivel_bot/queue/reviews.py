"""Read queries for review, export, import and audit (SQLAlchemy Core on the queue tables).

State changes stay in :class:`~wikivel_bot.queue.store.Store` (``record_decision``,
``undo_decision``); this module only reads, so every function here is safe to call while the
daemon works on the same database. Results are the plain values of
``wikivel_bot.core.review_rules`` or the small dataclasses below, never rows.

Why files are read in chunks ordered by id: a session walks the queue oldest first and an
export streams it, so neither ever holds a whole queue of millions of pairs in memory, and
the walk resumes with ``id > last`` (an index range) rather than an OFFSET.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.sql.elements import ColumnElement

from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.core.review_rules import (
    ReviewCandidate,
    ReviewFile,
    ReviewFilter,
    candidate_order,
    category_matches,
    file_title,
    normalize_name,
    without_withheld,
)
from wikivel_bot.core.safety import ItemCheck, withheld_by_rule
from wikivel_bot.queue.rows import media_from_json
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, decisions, edits, files, sends
from wikivel_bot.types import CandidateState, DecisionAction, FileState

# Files whose candidates are worth a reviewer's time: linked, or being re-linked (their
# proposed pairs stay valid until the linker replaces them). Deleted (unavailable) files are
# never shown, whatever their candidates.
LIVE_FILE_STATES = (FileState.LINKED.value, FileState.FETCHED.value)

# Files read per query while walking the queue.
CHUNK = 200


@dataclass(frozen=True)
class PairStatus:
    """Where one (file, item) pair stands, for the import's checks.

    :param file_known: the file is in the queue at all.
    :param state: the pair's state; None when the item was never proposed for the file.
    :param last_action: the newest decision recorded on the pair, if any.
    """

    file_known: bool
    state: Optional[CandidateState] = None
    prominent: bool = False
    reviewer: str = ""
    last_action: Optional[DecisionAction] = None


@dataclass(frozen=True)
class AuditEvent:
    """One line of the audit trail: a reviewer's decision or a write attempt.

    ``kind`` is ``decision`` (``action`` = approve, approve_prominent, reject, skip; ``who``
    and ``source`` say who and from where) or ``edit`` (``action`` = written, skipped,
    failed, dry_run, reverted; ``batch_id``, ``revid``, ``statement_id``, ``error``).
    ``state`` is the pair's state now.
    """

    at: datetime
    kind: str
    page_id: int
    title: str
    qid: str
    action: str
    state: str
    who: str = ""
    source: str = ""
    batch_id: str = ""
    revid: Optional[int] = None
    statement_id: str = ""
    error: str = ""
    attempt: int = 0
    event_id: int = 0
    # A decision that was an operator's override: whose decision it replaced.
    overrode: str = ""


def iter_review_files(store: Store, flt: ReviewFilter, after_id: int = 0) -> Iterator[ReviewFile]:
    """Files with at least one candidate matching ``flt``, oldest first, with those candidates.

    :param store: the queue.
    :param flt: which files and pairs; ``flt.states`` says which candidate states count.
    :param after_id: start after this ``files.id`` (a session's position in the queue).
    """
    cand_cond = _candidate_condition(flt)
    while True:
        with store.transaction() as conn:
            rows = conn.execute(
                select(files.c.id, files.c.page_id, files.c.title, files.c.uploader,
                       files.c.uploaded_at, files.c.media)
                .where(files.c.id > after_id, *_file_conditions(flt))
                .where(exists().where(candidates.c.file_id == files.c.id, cand_cond))
                .order_by(files.c.id)
                .limit(CHUNK)
            ).all()
            # The category lives in the media JSON document; matching it in Python keeps one
            # rule (MediaWiki's name normalisation) on every backend's JSON flavour.
            wanted = [r for r in rows if not flt.category or category_matches(flt.category, _categories(r.media))]
            by_file = _candidates_of(conn, [r.id for r in wanted], cand_cond)
        for row in wanted:
            found = _review_file(row, by_file[row.id], flt.safety) if by_file.get(row.id) else None
            if found is not None and found.candidates:
                yield found
        if len(rows) < CHUNK:
            return
        after_id = rows[-1].id


def next_review_file(store: Store, flt: ReviewFilter, after_id: int = 0) -> Optional[ReviewFile]:
    """The first file after ``after_id`` that ``iter_review_files`` would give, or None."""
    return next(iter_review_files(store, flt, after_id), None)


def count_review_files(store: Store, flt: ReviewFilter) -> int:
    """How many files ``iter_review_files`` would give (for "file 3 of 17").

    Counted in the database: a file whose every pair the current safety rules now withhold
    (``flt.safety``, after a rule change) is counted though not shown."""
    cand_cond = _candidate_condition(flt)
    matching = exists().where(candidates.c.file_id == files.c.id, cand_cond)
    if not flt.category:
        with store.transaction() as conn:
            return int(conn.execute(select(func.count()).select_from(files).where(*_file_conditions(flt), matching))
                       .scalar() or 0)
    # A category needs the media document of each file: walk them in chunks.
    total, after_id = 0, 0
    while True:
        with store.transaction() as conn:
            rows = conn.execute(
                select(files.c.id, files.c.media)
                .where(files.c.id > after_id, *_file_conditions(flt), matching)
                .order_by(files.c.id)
                .limit(CHUNK * 5)
            ).all()
        total += sum(1 for r in rows if category_matches(flt.category, _categories(r.media)))
        if len(rows) < CHUNK * 5:
            return total
        after_id = rows[-1].id


def page_id_for_title(store: Store, title: str) -> Optional[int]:
    """The page id of a queued file named ``title`` (``File:`` optional), or None."""
    names = {title.strip(), file_title(title)}
    with store.transaction() as conn:
        found = conn.execute(select(files.c.page_id).where(files.c.title.in_(sorted(names)))).scalar()
    return None if found is None else int(found)


def pair_status(store: Store, page_id: int, qid: str) -> PairStatus:
    """The state of the pair (file ``page_id``, item ``qid``) and its newest decision."""
    with store.transaction() as conn:
        file_id = conn.execute(select(files.c.id).where(files.c.page_id == page_id)).scalar()
        if file_id is None:
            return PairStatus(file_known=False)
        row = conn.execute(
            select(candidates.c.id, candidates.c.state, candidates.c.prominent, candidates.c.reviewer)
            .where(candidates.c.file_id == file_id, candidates.c.qid == qid)
        ).first()
        if row is None:
            return PairStatus(file_known=True)
        action = conn.execute(
            select(decisions.c.action).where(decisions.c.candidate_id == row.id)
            .order_by(decisions.c.id.desc()).limit(1)
        ).scalar()
    return PairStatus(
        file_known=True, state=CandidateState(row.state), prominent=bool(row.prominent),
        reviewer=row.reviewer or "", last_action=DecisionAction(action) if action else None,
    )


def audit_events(
    store: Store,
    batch_id: Optional[str] = None,
    page_id: Optional[int] = None,
    reviewer: Optional[str] = None,
    limit: Optional[int] = None,
) -> List[AuditEvent]:
    """Decisions and write attempts merged into one trail, oldest first.

    :param batch_id: only pairs written (or tried) in this batch: their edits of the batch
        and the decisions that approved them.
    :param page_id: only this file.
    :param reviewer: only this reviewer's decisions, and the edits of pairs they approved.
    :param limit: only the newest ``limit`` events.
    """
    cond_d: List[ColumnElement[bool]] = []
    cond_e: List[ColumnElement[bool]] = []
    if batch_id is not None:
        in_batch = select(edits.c.candidate_id).where(edits.c.batch_id == batch_id)
        cond_d.append(decisions.c.candidate_id.in_(in_batch))
        cond_e.append(edits.c.batch_id == batch_id)
    if page_id is not None:
        cond_d.append(files.c.page_id == page_id)
        cond_e.append(files.c.page_id == page_id)
    if reviewer is not None:
        cond_d.append(decisions.c.reviewer == reviewer)
        cond_e.append(candidates.c.reviewer == reviewer)
    pair = (files.c.page_id, files.c.title, candidates.c.qid, candidates.c.state.label("pair_state"))
    query_d = (
        select(decisions, *pair)
        .join(candidates, candidates.c.id == decisions.c.candidate_id)
        .join(files, files.c.id == candidates.c.file_id)
        .where(*cond_d).order_by(decisions.c.decided_at.desc(), decisions.c.id.desc())
    )
    query_e = (
        select(edits, *pair)
        .join(candidates, candidates.c.id == edits.c.candidate_id)
        .join(files, files.c.id == candidates.c.file_id)
        .where(*cond_e).order_by(edits.c.finished_at.desc(), edits.c.id.desc())
    )
    if limit is not None:
        query_d, query_e = query_d.limit(limit), query_e.limit(limit)
    with store.transaction() as conn:
        made = [_decision_event(r) for r in conn.execute(query_d)]
        tried = [_edit_event(r) for r in conn.execute(query_e)]
    # A decision comes before the write it allowed when both fall in the same second.
    merged = list(heapq.merge(reversed(made), reversed(tried), key=_event_key))
    return merged[-limit:] if limit is not None else merged


# -- helpers -----------------------------------------------------------------------------


def _candidate_condition(flt: ReviewFilter) -> ColumnElement[bool]:
    conds: List[ColumnElement[bool]] = [candidates.c.state.in_([s.value for s in flt.states])]
    if flt.min_score is not None:
        # A pair a reviewer added by hand has no score: a threshold is no reason to hide it.
        conds.append(or_(candidates.c.score.is_(None), candidates.c.score >= flt.min_score))
    if flt.linker:
        conds.append(candidates.c.linker == flt.linker)
    return and_(*conds)


def _file_conditions(flt: ReviewFilter) -> List[ColumnElement[bool]]:
    conds: List[ColumnElement[bool]] = [files.c.state.in_(LIVE_FILE_STATES)]
    if flt.uploader:
        conds.append(files.c.uploader == normalize_name(flt.uploader, "User"))
    if flt.since is not None:
        conds.append(files.c.uploaded_at >= flt.since)
    if flt.until is not None:
        conds.append(files.c.uploaded_at < flt.until)
    if flt.page_ids:
        conds.append(files.c.page_id.in_(list(flt.page_ids)))
    return conds


# What _review_candidate reads: only these, as a page of the web review reads ~120 pairs
# and every further column (timestamps above all) is decoded for each.
REVIEW_COLUMNS = tuple(candidates.c[name] for name in (
    "id", "file_id", "qid", "score", "rank", "linker", "state", "prominent", "reviewer", "evidence"))


def _unsettled_since() -> Any:
    """When the pair's oldest unsettled edit request was sent (``queue.store.sends``): one
    index probe per pair, NULL for nearly all."""
    return (select(func.min(sends.c.sent_at))
            .where(sends.c.candidate_id == candidates.c.id, sends.c.settled_at.is_(None))
            .scalar_subquery().label("unsettled_since"))


def _candidates_of(conn: Any, file_ids: Sequence[int], cond: ColumnElement[bool]) -> Dict[int, List[Any]]:
    out: Dict[int, List[Any]] = {}
    if not file_ids:
        return out
    query = select(*REVIEW_COLUMNS, _unsettled_since()).where(candidates.c.file_id.in_(list(file_ids)), cond)
    for row in conn.execute(query):
        out.setdefault(row.file_id, []).append(row)
    return out


def _categories(media: Optional[Mapping[str, Any]]) -> List[str]:
    return list((media or {}).get("categories", ()))


def _review_file(row: Any, cand_rows: Sequence[Any], safety: Optional[ItemCheck] = None) -> ReviewFile:
    """A file as the review shows it; with ``safety``, without the queued pairs the current
    safety rules withhold (``core.review_rules.without_withheld``)."""
    media = media_from_json(row.page_id, row.title, row.media or {})
    return without_withheld(ReviewFile(
        file_id=int(row.id), page_id=int(row.page_id), title=row.title, uploader=row.uploader or "",
        uploaded_at=row.uploaded_at, thumb_url=media.thumb_url, description=media.description,
        categories=media.categories, depicts=media.depicts,
        candidates=candidate_order([_review_candidate(c) for c in cand_rows]),
        withheld=tuple(sorted(withheld_by_rule((row.media or {}).get("withheld")).items())),
    ), safety)


def _review_candidate(row: Any) -> ReviewCandidate:
    evidence: Mapping[str, Any] = row.evidence if isinstance(row.evidence, dict) else {}
    notes = evidence.get("notes") or ()
    if isinstance(notes, str):
        notes = (notes,)
    warnings = tuple(str(w) for w in evidence.get("warnings") or ())
    if evidence.get("random_weights"):
        # Every view marks a random-weights candidate itself (random_weights below): the
        # linker's own warning as a note would say it a second time on the same card.
        warnings = tuple(w for w in warnings if not w.startswith("random weights"))
    notes = tuple(str(n) for n in notes) + warnings
    return ReviewCandidate(
        candidate_id=int(row.id), qid=row.qid, score=row.score, rank=row.rank, linker=row.linker or "",
        state=CandidateState(row.state), prominent=bool(row.prominent), reviewer=row.reviewer or "",
        label=str(evidence.get("label") or ""), description=str(evidence.get("description") or ""),
        notes=notes, random_weights=bool(evidence.get("random_weights")),
        alpha=_optional_float(evidence.get("alpha")), probability=_optional_float(evidence.get("probability")),
        evidence=shown_evidence(evidence),
        unsettled_since=getattr(row, "unsettled_since", None),
    )


def _optional_float(value: Any) -> Optional[float]:
    """A number stored in the evidence JSON (cascade α, verifier probability), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _decision_event(row: Any) -> AuditEvent:
    return AuditEvent(
        at=row.decided_at, kind="decision", page_id=int(row.page_id), title=row.title, qid=row.qid,
        action=row.action, state=row.pair_state, who=row.reviewer, source=row.source, event_id=int(row.id),
        overrode=row.overrode or "",
    )


def _edit_event(row: Any) -> AuditEvent:
    return AuditEvent(
        at=row.finished_at, kind="edit", page_id=int(row.page_id), title=row.title, qid=row.qid,
        action=row.outcome, state=row.pair_state, batch_id=row.batch_id,
        revid=None if row.revid is None else int(row.revid), statement_id=row.statement_id or "",
        error=row.error or "", attempt=int(row.attempt or 0), event_id=int(row.id),
    )


def _event_key(event: AuditEvent) -> tuple:
    return (event.at, 0 if event.kind == "decision" else 1, event.event_id)
