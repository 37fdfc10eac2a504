"""The queue store: the only code that reads and writes the queue tables.

Every state change goes through a method here that checks the move against
``core.states`` inside the same transaction as the change, so two processes racing on a row
cannot both move it. Work is handed out by *claiming*: rows get a lease (worker name and
time) inside a locking transaction — ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL and
MariaDB, ``BEGIN IMMEDIATE`` on SQLite — so no two workers ever get the same row, and a
crashed worker's rows come back once its lease has expired.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import (
    Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union,
)

from sqlalchemy import ColumnElement, Select, Table, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from wikivel_bot.core import states
from wikivel_bot.errors import DatabaseUnavailable, IllegalTransition, LeaseLost, NotFound, UsageError
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import backend_name, redacted_url
from wikivel_bot.queue.rows import file_work, media_to_json, to_db_time, utcnow
from wikivel_bot.queue.tables import candidates, cursors, decisions, edits, files
from wikivel_bot.types import (
    ApprovedEdit,
    Candidate,
    CandidateState,
    Cursor,
    DecisionAction,
    DryRun,
    Failed,
    FileState,
    FileWork,
    MediaFile,
    Skipped,
    Upload,
    Written,
    is_qid,
)

Outcome = Union[Written, Skipped, Failed, DryRun]

# Rows per INSERT statement when enqueueing: big enough to amortise round trips, small
# enough for MySQL's max_allowed_packet and SQLite's variable limit.
ENQUEUE_CHUNK = 500


class Store:
    """The queue on one database. Safe to share between threads of one process."""

    def __init__(
        self,
        engine: Engine,
        claim_lease_s: int = 900,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """
        :param engine: from :func:`wikivel_bot.queue.engine.create_engine_for`.
        :param claim_lease_s: seconds before a claimed row can be claimed by another worker.
        :param clock: returns naive-UTC now; tests pass a fake one.
        """
        self.engine = engine
        self.backend = backend_name(engine)
        self.claim_lease = timedelta(seconds=claim_lease_s)
        self._now = clock

    def close(self) -> None:
        self.engine.dispose()

    # -- schema ------------------------------------------------------------------------

    def check_schema(self) -> None:
        """Raise SchemaOutdated/DatabaseUnavailable unless the database is at the head."""
        migrate.check_at_head(self.engine)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction (for the read queries of ``queue/``); a failure to connect
        becomes DatabaseUnavailable (one line)."""
        with self._connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection for read queries that need no common snapshot (the web's queue page).

        On PostgreSQL it runs in autocommit, each statement in a snapshot of its own:
        psycopg sends BEGIN and COMMIT as round trips of their own, two of the four a
        page costs. Elsewhere it is :meth:`transaction` (SQLite's reads are in-process;
        switching PyMySQL's autocommit on and off costs more round trips than it saves).
        """
        if self.backend != "postgresql":
            with self.transaction() as conn:
                yield conn
            return
        with self._connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def _connect(self) -> Connection:
        """A pooled connection; a failure to connect becomes DatabaseUnavailable (one line)."""
        try:
            return self.engine.connect()
        except DBAPIError as exc:
            raise DatabaseUnavailable(
                f"cannot connect to {redacted_url(self.engine)}: {exc.orig}"
            ) from None

    # -- files -------------------------------------------------------------------------

    def enqueue(
        self,
        uploads: Iterable[Upload],
        ineligible: Optional[Mapping[int, str]] = None,
        cursor: Optional[Tuple[str, Cursor]] = None,
    ) -> int:
        """Add uploads to the queue; an upload already there (same page id) is left alone.

        :param uploads: the uploads, in any order.
        :param ineligible: {page id: reason} for uploads a filter refused; they are stored
            as ``ineligible`` with the reason, so `status` can say why and they are never
            fetched.
        :param cursor: (source, cursor) saved in the same transaction, so a poll that dies
            half-way resumes exactly after the last batch it committed.
        :return: the number of new rows.
        """
        ineligible = ineligible or {}
        now = self._now()
        batch = {u.page_id: u for u in uploads}  # the same page twice in one batch = once
        new_rows = 0
        with self.transaction() as conn:
            page_ids = list(batch)
            for start in range(0, len(page_ids), ENQUEUE_CHUNK):
                chunk = page_ids[start:start + ENQUEUE_CHUNK]
                known = set(
                    conn.execute(select(files.c.page_id).where(files.c.page_id.in_(chunk))).scalars()
                )
                rows = [
                    _upload_row(batch[pid], ineligible.get(pid), now)
                    for pid in chunk
                    if pid not in known
                ]
                if rows:
                    # "Insert or ignore" covers a racing worker inserting the same page.
                    conn.execute(self._insert_ignore(files), rows)
                    new_rows += len(rows)
            if cursor is not None:
                self._save_cursor(conn, cursor[0], cursor[1], now)
        return new_rows

    def claim_files(self, state: FileState, limit: int, worker: str) -> List[FileWork]:
        """Reserve up to ``limit`` files in ``state`` for ``worker``, oldest first."""
        now = self._now()
        with self.transaction() as conn:
            query = (
                select(files)
                .where(files.c.state == state.value, self._claimable(files, now))
                .order_by(files.c.id)
                .limit(limit)
            )
            rows = conn.execute(self._locking(query)).all()
            if rows:
                conn.execute(
                    update(files)
                    .where(files.c.id.in_([r.id for r in rows]))
                    .values(claimed_by=worker, claimed_at=now, attempts=files.c.attempts + 1)
                )
        # The rows were read before the attempt was counted.
        return [dataclasses.replace(file_work(r), attempts=r.attempts + 1) for r in rows]

    def release_files(self, file_ids: Sequence[int]) -> None:
        """Give claimed files back without a state change (a worker shutting down)."""
        if file_ids:
            with self.transaction() as conn:
                conn.execute(
                    update(files).where(files.c.id.in_(list(file_ids))).values(claimed_by=None, claimed_at=None)
                )

    def mark_fetched(self, file_id: int, media: MediaFile) -> None:
        """Store what the fetcher learned; the file moves to ``fetched``."""
        self._move_file(file_id, FileState.FETCHED, media=media_to_json(media), reason=None)

    def mark_unavailable(self, file_id: int, reason: str) -> None:
        """The file is gone, corrupt or not an image; ``reason`` is shown to operators."""
        self._move_file(file_id, FileState.UNAVAILABLE, reason=reason)

    def mark_ineligible(self, file_id: int, reason: str) -> None:
        """A filter refused the file after fetching (e.g. it already has enough depicts)."""
        self._move_file(file_id, FileState.INELIGIBLE, reason=reason)

    def save_candidates(
        self, file_id: int, proposed: Sequence[Candidate], withheld: Optional[Sequence[Mapping[str, Any]]] = None
    ) -> int:
        """Save the linker's candidates and move the file to ``linked``.

        A pair a human already decided (rejected, approved, written, …) keeps its row
        untouched: a rejection is permanent, and a re-link never resurrects it.
        :param withheld: what the safety rules withheld for the file (``qid``, ``rule``,
            ``reason``, ``score`` each), kept in the file's media document under
            ``withheld`` so exports and reports can count it; None leaves it as it was.
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
                extra["media"] = {**(media or {}), "withheld": [dict(w) for w in withheld]}
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
                current.update(conn.execute(self.for_update(
                    select(files.c.id, files.c.state).where(files.c.id.in_(ids[start:start + ENQUEUE_CHUNK]))
                    .order_by(files.c.id))).all())
            linked = [o.file_id for o in outcomes if o.state is FileState.LINKED]
            existing = self._candidates_of(conn, linked)
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

    def file_id_of(self, page_id: int) -> int:
        """The queue's row id for a page id; NotFound when the file was never queued."""
        with self.transaction() as conn:
            found = conn.execute(select(files.c.id).where(files.c.page_id == page_id)).scalar()
        if found is None:
            raise NotFound(f"file M{page_id} is not in the queue")
        return int(found)

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

    # -- decisions ---------------------------------------------------------------------

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
                self.for_update(
                    select(candidates.c.id, candidates.c.state).where(
                        candidates.c.file_id == file_ids, candidates.c.qid == qid
                    )
                )
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

    # -- writing -----------------------------------------------------------------------

    def claim_approved(self, limit: int, worker: str, *, dry_run: bool = False) -> List[ApprovedEdit]:
        """Reserve approved pairs whose retry time (if any) has come, oldest first.

        :param dry_run: the claimer only simulates: pairs a dry run already simulated since
            their approval are left out, so a dry-run daemon does not simulate the same pair
            every cycle. A real writer claims every approved pair, simulated or not.
        """
        now = self._now()
        conditions = [
            candidates.c.state == CandidateState.APPROVED.value,
            or_(candidates.c.retry_after.is_(None), candidates.c.retry_after <= now),
            self._claimable(candidates, now),
        ]
        if dry_run:
            conditions.append(candidates.c.simulated_at.is_(None))
        with self.transaction() as conn:
            query = (
                select(candidates.c.id, candidates.c.file_id, candidates.c.qid,
                       candidates.c.prominent, candidates.c.reviewer, candidates.c.attempts)
                .where(*conditions)
                .order_by(candidates.c.id)
                .limit(limit)
            )
            rows = conn.execute(self._locking(query)).all()
            if not rows:
                return []
            conn.execute(
                update(candidates).where(candidates.c.id.in_([r.id for r in rows]))
                .values(claimed_by=worker, claimed_at=now)
            )
            pages = {
                r.id: r for r in conn.execute(
                    select(files.c.id, files.c.page_id, files.c.title)
                    .where(files.c.id.in_({r.file_id for r in rows}))
                )
            }
        return [
            ApprovedEdit(
                candidate_id=r.id, file_id=r.file_id, page_id=pages[r.file_id].page_id,
                title=pages[r.file_id].title, qid=r.qid, prominent=bool(r.prominent),
                reviewer=r.reviewer or "", attempts=r.attempts,
            )
            for r in rows
        ]

    # -- leases ------------------------------------------------------------------------

    def confirm_claim(self, candidate_id: int, worker: str) -> bool:
        """Whether ``worker`` still holds the pair, approved: checked right before an edit.

        Renews the lease in the same statement, so the pair cannot change hands between this
        check and the edit's end (the writer also renews while it works). False when the
        lease expired and another worker claimed the pair, or a human changed it meanwhile:
        the caller must not edit.
        """
        with self.transaction() as conn:
            moved = conn.execute(
                update(candidates).where(
                    candidates.c.id == candidate_id,
                    candidates.c.claimed_by == worker,
                    candidates.c.state == CandidateState.APPROVED.value,
                ).values(claimed_at=self._now())
            ).rowcount
        return moved == 1

    def renew_claims(self, worker: str) -> int:
        """Extend every lease ``worker`` holds (files and pairs) from now; the count renewed."""
        now = self._now()
        renewed = 0
        with self.transaction() as conn:
            for table in (files, candidates):
                renewed += conn.execute(
                    update(table).where(table.c.claimed_by == worker).values(claimed_at=now)
                ).rowcount
        return renewed

    def release_candidates(self, candidate_ids: Sequence[int], worker: str) -> int:
        """Give back pairs ``worker`` claimed and did not handle (a clean exit or an error
        before their edit), so the next writer can take them at once."""
        if not candidate_ids:
            return 0
        with self.transaction() as conn:
            return int(conn.execute(
                update(candidates).where(
                    candidates.c.id.in_(list(candidate_ids)), candidates.c.claimed_by == worker
                ).values(claimed_by=None, claimed_at=None)
            ).rowcount)

    def release_claims_of(self, worker: str) -> int:
        """Give back everything ``worker`` holds (it is known to be dead); the count freed."""
        freed = 0
        with self.transaction() as conn:
            for table in (files, candidates):
                freed += conn.execute(
                    update(table).where(table.c.claimed_by == worker)
                    .values(claimed_by=None, claimed_at=None)
                ).rowcount
        return freed

    def claims(self) -> List[Dict[str, Any]]:
        """Held leases, for `status`: one row per (table, state, worker) with the count and
        when the last of them expires unless renewed (naive UTC)."""
        now = self._now()
        out: List[Dict[str, Any]] = []
        with self.transaction() as conn:
            for name, table in (("files", files), ("candidates", candidates)):
                query = (
                    select(table.c.state, table.c.claimed_by, func.count(),
                           func.max(table.c.claimed_at))
                    .where(table.c.claimed_by.is_not(None), self._held(table, now))
                    .group_by(table.c.state, table.c.claimed_by)
                    .order_by(table.c.claimed_by)
                )
                for state, worker, n, last in conn.execute(query):
                    out.append(dict(table=name, state=state, worker=worker, count=int(n),
                                    expires_at=last + self.claim_lease))
        return out

    def record_edit(
        self, candidate_id: int, batch_id: str, outcome: Outcome, started_at: object,
        max_attempts: int = 5, worker: Optional[str] = None,
    ) -> CandidateState:
        """Store the outcome of one write attempt and move the pair accordingly.

        Transient failures (``Failed`` with ``retry_after``) keep the pair approved with a
        retry time until ``max_attempts`` is used up; then, like permanent failures, it is
        left as ``write_failed`` for a human. A ``DryRun`` changes nothing but the audit trail
        and the pair's ``simulated_at``: it stays approved for a real write.
        :param worker: the lease holder recording; when given, the pair must still be its
            claim, else :class:`LeaseLost` and nothing is recorded (a second writer that
            took the pair over records it once, not twice).
        :return: the pair's new state.
        """
        now = self._now()
        with self.transaction() as conn:
            row = conn.execute(
                self.for_update(select(candidates.c.state, candidates.c.attempts,
                                       candidates.c.claimed_by)
                                .where(candidates.c.id == candidate_id))
            ).first()
            if row is None:
                raise NotFound(f"no candidate {candidate_id}")
            if worker is not None and (row.claimed_by != worker
                                       or row.state != CandidateState.APPROVED.value):
                raise LeaseLost(f"candidate {candidate_id} is no longer claimed by {worker}")
            attempt = row.attempts + 1
            target, retry_at, kind = _edit_target(outcome, attempt, max_attempts, now)
            current = CandidateState(row.state)
            if target is not current and target not in states.CANDIDATE_MOVES[current]:
                raise IllegalTransition(f"candidate {candidate_id} is {current.value}, not approved")
            values: Dict[str, Any] = dict(
                state=target.value, attempts=attempt, retry_after=retry_at,
                claimed_by=None, claimed_at=None, updated_at=now,
            )
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
                    error=getattr(outcome, "reason", None), attempt=attempt,
                    started_at=to_db_time(started_at), finished_at=now,  # type: ignore[arg-type]
                )
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

    # -- cursors and counts --------------------------------------------------------------

    def get_cursor(self, source: str) -> Optional[Cursor]:
        with self.transaction() as conn:
            row = conn.execute(select(cursors).where(cursors.c.source == source)).first()
        return None if row is None else Cursor(timestamp=row.timestamp, log_id=int(row.log_id))

    def set_cursor(self, source: str, cursor: Cursor) -> None:
        with self.transaction() as conn:
            self._save_cursor(conn, source, cursor, self._now())

    def all_cursors(self) -> Dict[str, Cursor]:
        with self.transaction() as conn:
            return {
                r.source: Cursor(r.timestamp, int(r.log_id))
                for r in conn.execute(select(cursors).order_by(cursors.c.source))
            }

    def counts(self) -> Dict[str, Dict[str, int]]:
        """Rows by state: {"files": {state: n}, "candidates": {state: n}}, every state listed."""
        out: Dict[str, Dict[str, int]] = {
            "files": {s.value: 0 for s in FileState},
            "candidates": {s.value: 0 for s in CandidateState},
        }
        with self.transaction() as conn:
            for name, table in (("files", files), ("candidates", candidates)):
                for state, n in conn.execute(
                    select(table.c.state, func.count()).group_by(table.c.state)
                ):
                    out[name][state] = int(n)
        return out

    # -- helpers -----------------------------------------------------------------------

    def _move_file(self, file_id: int, target: FileState, **values: object) -> None:
        with self.transaction() as conn:
            self._check_file_move(conn, file_id, target)
            conn.execute(
                update(files).where(files.c.id == file_id).values(
                    state=target.value, claimed_by=None, claimed_at=None,
                    updated_at=self._now(), **values
                )
            )

    def _check_file_move(self, conn: Connection, file_id: int, target: FileState) -> None:
        state = conn.execute(self.for_update(select(files.c.state).where(files.c.id == file_id))).scalar()
        if state is None:
            raise NotFound(f"no file row {file_id}")
        if target not in states.FILE_MOVES[FileState(state)]:
            raise IllegalTransition(f"file row {file_id} cannot move from {state} to {target.value}")

    def _claimable(self, table: Table, now: datetime) -> ColumnElement[bool]:
        expired = now - self.claim_lease
        return or_(table.c.claimed_by.is_(None), table.c.claimed_at < expired)

    def _held(self, table: Table, now: datetime) -> ColumnElement[bool]:
        return table.c.claimed_at >= now - self.claim_lease

    def _locking(self, query: Select) -> Select:
        """For claims: lock the rows read, skipping rows another worker holds."""
        # SQLite has no row locks; BEGIN IMMEDIATE already serialises writers.
        if self.backend == "sqlite":
            return query
        return query.with_for_update(skip_locked=True)

    def for_update(self, query: Select) -> Select:
        """For a state check before a change: lock the row, waiting for other holders
        (the read queries of ``queue/`` use it too)."""
        if self.backend == "sqlite":
            return query
        return query.with_for_update()

    def _insert_ignore(self, table: Table) -> Any:
        if self.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table).on_conflict_do_nothing()
        if self.backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            return sqlite_insert(table).on_conflict_do_nothing()
        return insert(table).prefix_with("IGNORE")

    def _save_cursor(self, conn: Connection, source: str, cursor: Cursor, now: object) -> None:
        values = dict(timestamp=to_db_time(cursor.timestamp), log_id=cursor.log_id, updated_at=now)
        done = conn.execute(update(cursors).where(cursors.c.source == source).values(**values)).rowcount
        if not done:
            conn.execute(insert(cursors).values(source=source, **values))


@dataclasses.dataclass(frozen=True)
class FileOutcome:
    """One file's result for :meth:`Store.settle_files`.

    :param state: ``linked``, ``unavailable`` or ``ineligible``; None gives the claim back.
    :param media: what the fetcher learned (stored, the file passing through ``fetched``).
    :param candidates: for ``linked``. :param reason: for ``unavailable``/``ineligible``.
    """

    file_id: int
    state: Optional[FileState]
    reason: str = ""
    media: Optional[MediaFile] = None
    candidates: Sequence[Candidate] = ()


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


def _upload_row(upload: Upload, reason: Optional[str], now: object) -> Dict[str, object]:
    return dict(
        page_id=upload.page_id, title=upload.title, sha1=upload.sha1,
        uploaded_at=to_db_time(upload.timestamp), uploader=upload.uploader,
        log_id=upload.log_id, mime=upload.mime, size=upload.size, width=upload.width,
        height=upload.height,
        state=(FileState.INELIGIBLE if reason else FileState.DISCOVERED).value,
        reason=reason, attempts=0, discovered_at=now, updated_at=now,
    )


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


def _new_id(result: Any) -> int:
    """The primary key an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None, "INSERT without a primary key"
    return int(key[0])
