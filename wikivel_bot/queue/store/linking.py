"""The store's record of what the linker found: one file at a time, or a block at once.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). The daemon saves each file's candidates
with ``Store.save_candidates``; the backfill settles a whole block of files —
fetched, linked, unavailable, ineligible or given back — in one transaction with
``Store.settle_files``. Both write candidates through the same helper, so a pair a
human already decided is left alone whichever path re-links its file.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Union

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from wikivel_bot.core import states
from wikivel_bot.core.safety import withheld_by_rule
from wikivel_bot.errors import UsageError
from wikivel_bot.queue.rows import media_to_json
from wikivel_bot.queue.store.base import ENQUEUE_CHUNK, StoreBase
from wikivel_bot.queue.tables import candidates, files
from wikivel_bot.types import Candidate, CandidateState, FileState, MediaFile, is_qid


class LinkingMixin(StoreBase):
    """Saving candidates and settling blocks of files (see the module docstring)."""

    def save_candidates(
        self, file_id: int, proposed: Sequence[Candidate], withheld: Optional[Mapping[str, int]] = None
    ) -> int:
        """Save the linker's candidates and move the file to ``linked``.

        A pair a human already decided (rejected, approved, written, …) keeps its row
        untouched: a rejection is permanent, and a re-link never resurrects it.
        :param withheld: how many suggestions each safety rule withheld for the file
            (``{rule: n}``), kept in the file's media document under ``withheld`` so
            exports and reports can count it; None leaves it as it was. Counts only: a
            per-item list given here is stored as its counts (no withheld item is kept).
        :return: the number of candidates now proposed for the file from this call.
        """
        now = self._now()
        _check_qids(proposed)
        with self.transaction() as conn:
            self._check_file_move(conn, file_id, FileState.LINKED)
            existing = self._candidates_of(conn, [file_id]).get(file_id, {})
            saved = self._save_candidates_in(conn, file_id, proposed, existing, now)
            extra: Dict[str, Any] = {}
            if withheld is not None:
                media = conn.execute(select(files.c.media).where(files.c.id == file_id)).scalar()
                extra["media"] = with_withheld(media, withheld)
            conn.execute(
                update(files).where(files.c.id == file_id).values(
                    state=FileState.LINKED.value, claimed_by=None, claimed_at=None, updated_at=now, **extra
                )
            )
        return saved

    def settle_files(self, outcomes: Sequence[FileOutcome]) -> List[Union[int, str]]:
        """Record what happened to many files in one transaction (the backfill writes each
        block of files so): candidates for ``linked`` (as :meth:`save_candidates`: a pair
        is inserted once, a decided pair is left alone), the reason for ``unavailable`` /
        ``ineligible``, a release for ``None``. Each file's move is checked as the single
        methods check it; a file whose move is illegal (another worker moved it) is left
        as it is, its claim given back, and the rest of the block goes on.

        :return: per outcome, in order: the candidates now proposed (0 for other moves), or
            the refusal as a string.
        :raises UsageError: a candidate is not an item id (nothing of the block is written).
        """
        now = self._now()
        for outcome in outcomes:
            _check_qids(outcome.candidates)
        ids = sorted({o.file_id for o in outcomes})
        out: List[Union[int, str]] = []
        with self.transaction() as conn:
            current: Dict[int, str] = {}
            for start in range(0, len(ids), ENQUEUE_CHUNK):
                # Locked in id order: two blocks writing the same rows cannot deadlock.
                current.update(conn.execute(
                    select(files.c.id, files.c.state).where(files.c.id.in_(ids[start:start + ENQUEUE_CHUNK]))
                    .order_by(files.c.id).with_for_update()).all())
            linked = [o.file_id for o in outcomes if o.state is FileState.LINKED]
            existing = self._candidates_of(conn, linked)
            # The media documents the withheld record joins (as save_candidates does).
            joined = [o.file_id for o in outcomes
                      if o.state is FileState.LINKED and o.withheld is not None and o.media is None]
            stored: Dict[int, Any] = dict(conn.execute(
                select(files.c.id, files.c.media).where(files.c.id.in_(joined))).all()) if joined else {}
            refused: List[int] = []
            done: Set[int] = set()
            for o in outcomes:
                refusal = f"file row {o.file_id} given twice" if o.file_id in done else _refusal(o, current.get(o.file_id))
                done.add(o.file_id)
                if refusal:
                    refused.append(o.file_id)
                    out.append(refusal)
                    continue
                values: Dict[str, Any] = {"claimed_by": None, "claimed_at": None}
                saved = 0
                if o.state is not None:
                    values.update(state=o.state.value, updated_at=now)
                    if o.media is not None:
                        values.update(media=media_to_json(o.media), reason=None)
                    if o.state is FileState.LINKED:
                        saved = self._save_candidates_in(conn, o.file_id, o.candidates,
                                                         existing.get(o.file_id, {}), now)
                        if o.withheld is not None:
                            values["media"] = with_withheld(values.get("media", stored.get(o.file_id)), o.withheld)
                    else:
                        values["reason"] = o.reason
                conn.execute(update(files).where(files.c.id == o.file_id).values(**values))
                out.append(saved)
            if refused:
                conn.execute(update(files).where(files.c.id.in_(refused)).values(claimed_by=None, claimed_at=None))
        return out

    def _candidates_of(self, conn: Connection, file_ids: Sequence[int]) -> Dict[int, Dict[str, Any]]:
        """{file id: {qid: (id, qid, state)}} of the candidates the files have."""
        out: Dict[int, Dict[str, Any]] = {}
        for start in range(0, len(file_ids), ENQUEUE_CHUNK):
            for r in conn.execute(select(candidates.c.file_id, candidates.c.id, candidates.c.qid, candidates.c.state)
                                  .where(candidates.c.file_id.in_(file_ids[start:start + ENQUEUE_CHUNK]))):
                out.setdefault(r.file_id, {})[r.qid] = r
        return out

    def _save_candidates_in(self, conn: Connection, file_id: int, proposed: Sequence[Candidate],
                            existing: Mapping[str, Any], now: datetime) -> int:
        """Insert new pairs (one statement), refresh proposed ones, leave decided ones."""
        saved = 0
        new_rows = []
        for cand in proposed:
            values = dict(
                score=cand.score,
                rank=cand.rank,
                linker=cand.linker,
                linker_version=cand.linker_version,
                labelset_hash=cand.labelset_hash,
                evidence=dict(cand.evidence),
                updated_at=now,
            )
            row = existing.get(cand.qid)
            if row is None:
                new_rows.append(dict(file_id=file_id, qid=cand.qid, state=CandidateState.PROPOSED.value,
                                     prominent=0, attempts=0, created_at=now, **values))
                saved += 1
            elif row.state == CandidateState.PROPOSED.value:
                conn.execute(update(candidates).where(candidates.c.id == row.id).values(**values))
                saved += 1
        if new_rows:
            conn.execute(insert(candidates), new_rows)
        return saved


@dataclasses.dataclass(frozen=True)
class FileOutcome:
    """One file's result for :meth:`Store.settle_files`.

    :param state: ``linked``, ``unavailable`` or ``ineligible``; None gives the claim back.
    :param media: what the fetcher learned (stored, the file passing through ``fetched``).
    :param candidates: for ``linked``. :param reason: for ``unavailable``/``ineligible``.
    :param withheld: for ``linked``: how many suggestions each safety rule withheld, as
        ``save_candidates`` takes it; None leaves the record as it was.
    """

    file_id: int
    state: Optional[FileState]
    reason: str = ""
    media: Optional[MediaFile] = None
    candidates: Sequence[Candidate] = ()
    withheld: Optional[Mapping[str, int]] = None


def with_withheld(media: Optional[Mapping[str, Any]], withheld: Any) -> Dict[str, Any]:
    """A file's media document with the safety rules' record of what they withheld (both the
    daemon's ``save_candidates`` and the backfill's ``settle_files`` store it so).

    The record is ``{rule: n}``, whatever the caller passed: a per-item list (``qid``,
    ``rule``, ...) is reduced to its counts here, at the one place that writes it, so no
    withheld item's id reaches the database.
    """
    return {**(media or {}), "withheld": withheld_by_rule(withheld)}


def _refusal(outcome: FileOutcome, state: Optional[str]) -> str:
    """Why ``outcome`` cannot be recorded from the file's ``state`` ("" when it can)."""
    if state is None:
        return f"no file row {outcome.file_id}"
    if outcome.state is None:
        return ""
    here = FileState(state)
    if outcome.media is not None and here is not FileState.FETCHED:
        if FileState.FETCHED not in states.FILE_MOVES[here]:
            return f"file row {outcome.file_id} cannot move from {state} to fetched"
        here = FileState.FETCHED
    if outcome.state not in states.FILE_MOVES[here]:
        return f"file row {outcome.file_id} cannot move from {here.value} to {outcome.state.value}"
    return ""


def _check_qids(proposed: Sequence[Candidate]) -> None:
    for cand in proposed:
        if not is_qid(cand.qid):
            raise UsageError(f"not a Wikidata item id: {cand.qid!r}")
