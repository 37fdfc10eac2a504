"""The store's leases on approved pairs: how a writer claims a pair, keeps it and gives it back.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). A writer claims approved pairs
(:meth:`ClaimsMixin.claim_approved`, a locking read that skips rows others hold), confirms
each is still its own right before the edit (:meth:`ClaimsMixin.confirm_claim`), renews its
leases while it works and releases what it did not handle. The renew/release/list methods
cover file claims too, so one call settles everything a worker holds; claiming files for a
stage is in ``files``, recording a write's outcome in ``writes``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from sqlalchemy import func, or_, select, update

from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import candidates, files
from wikivel_bot.types import ApprovedEdit, CandidateState


class ClaimsMixin(StoreBase):
    """Claiming approved pairs and managing every lease a worker holds."""

    # -- claiming ----------------------------------------------------------------------

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
                       candidates.c.prominent, candidates.c.reviewer, candidates.c.attempts,
                       candidates.c.evidence)
                .where(*conditions)
                .order_by(candidates.c.id)
                .limit(limit)
            )
            rows = conn.execute(query.with_for_update(skip_locked=True)).all()
            if not rows:
                return []
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
        return [
            ApprovedEdit(
                candidate_id=r.id, file_id=r.file_id, page_id=pages[r.file_id].page_id,
                title=pages[r.file_id].title, qid=r.qid, prominent=bool(r.prominent),
                reviewer=r.reviewer or "", attempts=r.attempts,
                **_file_text(pages[r.file_id].media), evidence=_sources(r.evidence),
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


def _sources(evidence: Any) -> Tuple[Dict[str, Any], ...]:
    """The candidate's stored evidence sources (``core.evidence.Evidence.as_dict`` each): what
    the writer's safety re-check reads to see whether evidence ties the file to the item."""
    found = evidence.get("sources") if isinstance(evidence, dict) else None
    return tuple(dict(s) for s in found if isinstance(s, dict)) if isinstance(found, list) else ()


def _file_text(media: Any) -> Dict[str, Any]:
    """The description and categories of a file's media document."""
    media = media if isinstance(media, dict) else {}
    categories = media.get("categories")
    return {"description": str(media.get("description") or ""),
            "categories": tuple(str(c) for c in categories) if isinstance(categories, list) else ()}
