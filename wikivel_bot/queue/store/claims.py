"""The store's leases on approved pairs: how a writer claims a pair, keeps it and gives it back.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). A writer claims approved pairs
(:meth:`ClaimsMixin.claim_approved`, a locking read that skips rows others hold), confirms
each is still its own right before the edit (:meth:`ClaimsMixin.confirm_claim`), renews its
leases while it works and releases what it did not handle. The renew/release/list methods
cover file claims too; claiming files for a stage is in ``files``, recording a write's
outcome in ``writes``. Leases are renewed by id, for work in progress only; a release that
fails because the database is unreachable is remembered and made again
(:meth:`ClaimsMixin.settle_releases`), so an outage leaves no row claimed for good.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional, Sequence, Tuple

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from wikivel_bot.errors import DatabaseUnavailable
from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import candidates, edits, files
from wikivel_bot.types import ApprovedEdit, CandidateState, EditOutcome


class ClaimsMixin(StoreBase):
    """Claiming approved pairs and managing every lease a worker holds."""

    # -- claiming ----------------------------------------------------------------------

    def claim_approved(self, limit: int, worker: str, *, dry_run: bool = False) -> List[ApprovedEdit]:
        """Reserve approved pairs whose retry time (if any) has come, oldest first, whole
        files at a time.

        The writer makes one edit per file, so the other claimable pairs of every file among
        the first ``limit`` pairs come along (the result may hold more than ``limit``); a
        pair of the file approved after this claim goes into that file's next edit.

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
                       candidates.c.prominent, candidates.c.reviewer, candidates.c.attempts,
                       candidates.c.evidence)
                .where(*conditions)
                .order_by(candidates.c.id)
                .limit(limit)
            )
            rows = list(conn.execute(query.with_for_update(skip_locked=True)).all())
            if not rows:
                return []
            first = {r.id for r in rows}
            rows += [r for r in conn.execute(
                query.limit(None).where(candidates.c.file_id.in_({r.file_id for r in rows}))
                .with_for_update(skip_locked=True)
            ).all() if r.id not in first]
            rows.sort(key=lambda r: r.id)
            conn.execute(
                update(candidates).where(candidates.c.id.in_([r.id for r in rows]))
                .values(claimed_by=worker, claimed_at=now)
            )
            pages = {
                r.id: r for r in conn.execute(
                    select(files.c.id, files.c.page_id, files.c.title, files.c.media)
                    .where(files.c.id.in_({r.file_id for r in rows}))
                )
            }
            # Each pair's statement GUID is derived from it (and stays the same across
            # attempts); a separate query, as FOR UPDATE does not go with an aggregate.
            written: Dict[int, int] = dict(conn.execute(
                select(edits.c.candidate_id, func.count())
                .where(edits.c.candidate_id.in_([r.id for r in rows]),
                       edits.c.outcome == EditOutcome.WRITTEN.value)
                .group_by(edits.c.candidate_id)
            ).all())
        return [
            ApprovedEdit(
                candidate_id=r.id, file_id=r.file_id, page_id=pages[r.file_id].page_id,
                title=pages[r.file_id].title, qid=r.qid, prominent=bool(r.prominent),
                reviewer=r.reviewer or "", attempts=r.attempts,
                **_file_text(pages[r.file_id].media), evidence=_sources(r.evidence),
                label=_label(r.evidence), written_before=int(written.get(r.id, 0)),
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

    def renew_claims(self, worker: str, *, file_ids: Sequence[int] = (),
                     candidate_ids: Sequence[int] = ()) -> int:
        """Extend the leases of these rows from now, those ``worker`` still holds; the count.

        By id, for the work in progress only: a row the worker set aside (a deferred file,
        whose lease is its back-off), lost to a decision, or could not give back during an
        outage is left to expire, never kept alive by the worker merely existing.
        """
        if not file_ids and not candidate_ids:
            return 0
        now = self._now()
        renewed = 0
        with self.transaction() as conn:
            for table, ids in ((files, file_ids), (candidates, candidate_ids)):
                if ids:
                    renewed += conn.execute(
                        update(table).where(table.c.id.in_(list(ids)), table.c.claimed_by == worker)
                        .values(claimed_at=now)
                    ).rowcount
        return renewed

    def release_candidates(self, candidate_ids: Sequence[int], worker: str) -> int:
        """Give back pairs ``worker`` claimed and did not handle (a clean exit or an error
        before their edit), so the next writer can take them at once. When the database
        cannot be reached the release is owed (:meth:`settle_releases`) and the error raised."""
        if not candidate_ids:
            return 0
        return self._release(_Owed(("candidates",), tuple(candidate_ids), worker, self._now()))

    def release_files(self, file_ids: Sequence[int], worker: Optional[str] = None) -> None:
        """Give claimed files back without a state change (a worker shutting down); only
        those ``worker`` still holds when it is given. Owed like :meth:`release_candidates`."""
        if file_ids:
            self._release(_Owed(("files",), tuple(file_ids), worker, self._now()))

    def release_claims_of(self, worker: str) -> int:
        """Give back everything ``worker`` holds (it exits, or is known to be dead); the count
        freed. Owed like :meth:`release_candidates`."""
        return self._release(_Owed(("files", "candidates"), None, worker, self._now()))

    def settle_releases(self) -> int:
        """Retry the releases that failed because the database was unreachable; rows freed.

        The daemon calls it at every heartbeat, so once the database is back every row whose
        release failed is free within one beat. Raises while it is still unreachable (what
        is left stays owed).
        """
        freed = 0
        while True:
            with _OWED_LOCK:
                owed = self._owed()
                if not owed:
                    return freed
                first = owed[0]
            with self.transaction() as conn:
                freed += _release_rows(conn, first, retry=True)
            with _OWED_LOCK:
                self._owed().remove(first)

    def owed_releases(self) -> int:
        """How many releases wait for the database to come back."""
        with _OWED_LOCK:
            return len(self._owed())

    def _release(self, owed: "_Owed") -> int:
        try:
            with self.transaction() as conn:
                return _release_rows(conn, owed, retry=False)
        except (DBAPIError, DatabaseUnavailable):
            # The rows stay claimed, and nobody renews them; remember to give them back as
            # soon as the database answers again, instead of leaving them for the lease.
            with _OWED_LOCK:
                self._owed().append(owed)
            raise

    def _owed(self) -> List["_Owed"]:
        # Kept on the instance, created on first use (StoreBase knows nothing of leases).
        return vars(self).setdefault("_owed_releases", [])

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


# Guards every store's list of owed releases (the daemon's stages and heartbeat share one).
_OWED_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Owed:
    """A release to make: rows of ``tables`` (``ids``, or all of them) that ``worker`` holds
    (any holder when None). Retried, only rows claimed no later than ``failed_at``: a row
    claimed again since (its lease ran out during a long outage) is that claim's to keep."""

    tables: Tuple[str, ...]
    ids: Optional[Tuple[int, ...]]
    worker: Optional[str]
    failed_at: datetime


def _release_rows(conn: Connection, owed: _Owed, *, retry: bool) -> int:
    freed = 0
    for table in (files if name == "files" else candidates for name in owed.tables):
        where: List[ColumnElement[bool]] = [table.c.claimed_by.is_not(None)]
        if retry:
            # A second of slack: MySQL rounds a stored time to the second, MariaDB truncates.
            where.append(table.c.claimed_at < owed.failed_at + timedelta(seconds=1))
        if owed.ids is not None:
            where.append(table.c.id.in_(list(owed.ids)))
        if owed.worker is not None:
            where.append(table.c.claimed_by == owed.worker)
        freed += conn.execute(update(table).where(*where).values(claimed_by=None, claimed_at=None)).rowcount
    return freed


def _sources(evidence: Any) -> Tuple[Dict[str, Any], ...]:
    """The candidate's stored evidence sources (``core.evidence.Evidence.as_dict`` each): what
    the writer's safety re-check reads to see whether evidence ties the file to the item."""
    found = evidence.get("sources") if isinstance(evidence, dict) else None
    return tuple(dict(s) for s in found if isinstance(s, dict)) if isinstance(found, list) else ()


def _label(evidence: Any) -> str:
    """The item label the linker stored with the candidate ("" when none)."""
    label = evidence.get("label") if isinstance(evidence, dict) else None
    return " ".join(label.split()) if isinstance(label, str) else ""


def _file_text(media: Any) -> Dict[str, Any]:
    """The description and categories of a file's media document."""
    media = media if isinstance(media, dict) else {}
    categories = media.get("categories")
    return {"description": str(media.get("description") or ""),
            "categories": tuple(str(c) for c in categories) if isinstance(categories, list) else ()}
