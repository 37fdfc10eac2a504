"""The queue as the backfill sees it: what is known about a batch of pages, and claiming
named pages (rather than the oldest rows of a state, as the daemon's stages do).

A backfill run has a stable worker name (``backfill:<run name>``). A claim succeeds on a row
that nobody holds or whose lease expired. A run starts by giving back the rows its own name
still holds (:func:`held_by`, then ``Store.release_files``): that is what lets a run killed
with -9 be started again at once, instead of waiting for its leases (``db.claim_lease_s``). State changes still go
through :class:`~wikivel_bot.queue.store.Store` (``settle_files``: a block of ``mark_*`` and ``save_candidates`` moves in one transaction), so
the same state checks apply as for the daemon.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from sqlalchemy import or_, select, update

from wikivel_bot.queue.rows import media_from_json
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, files
from wikivel_bot.types import CandidateState, FileState, MediaFile

# (linker name, linker version, label-set hash): who proposed a candidate.
LinkerIdentity = Tuple[str, str, str]
# IN-lists per statement: well below SQLite's and MariaDB's limits.
CHUNK = 500


@dataclass(frozen=True)
class PageRow:
    """One queued file as the backfill needs it.

    :param linkers: identities of the linkers whose candidates the file has (any state).
    :param rejected: QIDs reviewers rejected for this file.
    """

    file_id: int
    page_id: int
    title: str
    state: FileState
    reason: str = ""
    media: Optional[MediaFile] = None
    linkers: FrozenSet[LinkerIdentity] = field(default_factory=frozenset)
    rejected: FrozenSet[str] = field(default_factory=frozenset)


def lookup_pages(store: Store, page_ids: Sequence[int]) -> Dict[int, PageRow]:
    """{page id: PageRow} for the queued ones among ``page_ids`` (two reads per chunk)."""
    out: Dict[int, PageRow] = {}
    ids = list(dict.fromkeys(page_ids))
    with store.transaction() as conn:
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
            rows = conn.execute(
                select(files.c.id, files.c.page_id, files.c.title, files.c.state, files.c.reason,
                       files.c.media).where(files.c.page_id.in_(chunk))
            ).all()
            by_id = {r.id: r for r in rows}
            linkers: Dict[int, set] = {i: set() for i in by_id}
            rejected: Dict[int, set] = {i: set() for i in by_id}
            if by_id:
                for c in conn.execute(
                    select(candidates.c.file_id, candidates.c.qid, candidates.c.state, candidates.c.linker,
                           candidates.c.linker_version, candidates.c.labelset_hash)
                    .where(candidates.c.file_id.in_(list(by_id)))
                ):
                    if c.linker:
                        linkers[c.file_id].add((c.linker, c.linker_version or "", c.labelset_hash or ""))
                    if c.state == CandidateState.REJECTED.value:
                        rejected[c.file_id].add(c.qid)
            for r in rows:
                out[int(r.page_id)] = PageRow(
                    file_id=int(r.id), page_id=int(r.page_id), title=r.title, state=FileState(r.state),
                    reason=r.reason or "",
                    media=media_from_json(r.page_id, r.title, r.media) if r.media else None,
                    linkers=frozenset(linkers[r.id]), rejected=frozenset(rejected[r.id]),
                )
    return out


def claim_pages(store: Store, file_ids: Sequence[int], worker: str,
                states: Sequence[FileState] = (FileState.DISCOVERED, FileState.FETCHED, FileState.LINKED),
                ) -> List[int]:
    """Claim the given file rows for ``worker``; the ids actually claimed.

    A row is taken when it is in one of ``states`` and free or its lease expired (a row this
    run holds already is not taken twice): a locking read and an update in one transaction
    per chunk, so two workers racing for a row cannot both get it.
    """
    if not file_ids:
        return []
    now = store._now()  # the store's clock, so tests with a fake clock agree on leases
    expired = now - store.claim_lease
    claimed: List[int] = []
    ids = list(dict.fromkeys(file_ids))
    with store.transaction() as conn:
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
            # A locking read, then the update: PostgreSQL and MariaDB re-check the condition
            # on a row another transaction just changed, so a row is never claimed twice.
            free = [int(i) for i in conn.execute(
                select(files.c.id).where(
                    files.c.id.in_(chunk),
                    files.c.state.in_([s.value for s in states]),
                    or_(files.c.claimed_by.is_(None), files.c.claimed_at < expired),
                ).with_for_update()
            ).scalars()]
            if free:
                conn.execute(
                    update(files).where(files.c.id.in_(free))
                    .values(claimed_by=worker, claimed_at=now, attempts=files.c.attempts + 1)
                )
            claimed += free
    return claimed


def held_by(store: Store, worker: str) -> List[int]:
    """File row ids ``worker`` holds (what a killed run left claimed)."""
    with store.transaction() as conn:
        return [int(i) for i in conn.execute(select(files.c.id).where(files.c.claimed_by == worker)).scalars()]


def states_of(store: Store, page_ids: Sequence[int]) -> Mapping[int, str]:
    """{page id: state} (for summaries and tests)."""
    out: Dict[int, str] = {}
    ids = list(page_ids)
    with store.transaction() as conn:
        for start in range(0, len(ids), CHUNK):
            for pid, state in conn.execute(
                select(files.c.page_id, files.c.state).where(files.c.page_id.in_(ids[start:start + CHUNK]))
            ):
                out[int(pid)] = state
    return out
