"""The stages as plain functions over the ports: the CLI and the daemon call these.

A port is anything with the right methods (see the Protocols below): the store is
:class:`wikivel_bot.queue.store.Store`, the poller :class:`wikivel_bot.commons.poller.
UploadPoller`, the fetcher :class:`wikivel_bot.commons.fetcher.Fetcher`. No SQL and no
pywikibot here: this module decides what happens to a file, the ports do the talking, and
each function returns counters that the caller prints (pywikibot bots print theirs at exit).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import AbstractSet, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

from wikivel_bot.commons.filters import reason_kind
from wikivel_bot.commons.outcomes import Deferred, FetchOutcome, Ineligible, Unavailable
from wikivel_bot.core.safety import rule_count, withheld_by_rule
from wikivel_bot.errors import FileUnavailable
from wikivel_bot.events import event
from wikivel_bot.types import Cursor, FileState, FileWork, MediaFile, Upload

# Claims of one file before a transient failure (the media server failing) is given up on.
MAX_FETCH_ATTEMPTS = 5


class PollBatchLike(Protocol):
    """One page of the upload log (``commons.poller.PollBatch``)."""

    @property
    def uploads(self) -> Sequence[Upload]: ...

    @property
    def ineligible(self) -> Mapping[int, str]: ...

    @property
    def cursor(self) -> Cursor: ...

    @property
    def read(self) -> int: ...

    @property
    def unrecorded(self) -> int: ...


class Poller(Protocol):
    """A source of upload batches (``commons.poller.UploadPoller``)."""

    @property
    def source(self) -> str: ...

    def batches(self, start: Optional[Cursor]) -> Iterable[PollBatchLike]: ...


class FetcherPort(Protocol):
    """The fetch stage (``commons.fetcher.Fetcher``)."""

    @property
    def batch_size(self) -> int: ...

    def fetch(self, page_ids: Iterable[int]) -> Mapping[int, FetchOutcome]: ...


class QueueStore(Protocol):
    def enqueue(self, uploads: Iterable[Upload], ineligible: Optional[Mapping[int, str]] = None,
                cursor: Optional[Tuple[str, Cursor]] = None) -> int: ...

    def get_cursor(self, source: str) -> Optional[Cursor]: ...

    def claim_files(self, state: FileState, limit: int, worker: str) -> List[FileWork]: ...

    def release_files(self, file_ids: Sequence[int]) -> None: ...

    def mark_fetched(self, file_id: int, media: MediaFile) -> None: ...

    def mark_unavailable(self, file_id: int, reason: str) -> None: ...

    def mark_ineligible(self, file_id: int, reason: str) -> None: ...

    def rejected_items(self, file_id: int) -> AbstractSet[str]: ...

    def save_candidates(self, file_id: int, proposed: Sequence[object],
                        withheld: Optional[Mapping[str, int]] = None) -> int: ...


@dataclass
class PollCounters:
    """What one or more polls did.

    :param read: upload log entries read. :param enqueued: new files queued for linking.
    :param ineligible: new files recorded as ineligible, by reason kind.
    :param known: files that were already in the queue.
    :param unrecorded: log entries without a page id (cannot be queued at all).
    """

    read: int = 0
    enqueued: int = 0
    ineligible: Counter = field(default_factory=Counter)
    known: int = 0
    unrecorded: int = 0
    cursor: Optional[Cursor] = None

    def add(self, other: "PollCounters") -> None:
        self.read += other.read
        self.enqueued += other.enqueued
        self.ineligible.update(other.ineligible)
        self.known += other.known
        self.unrecorded += other.unrecorded
        self.cursor = other.cursor or self.cursor

    def lines(self) -> List[str]:
        """The counters as lines to print, the way pywikibot bots report at exit."""
        out = [
            f"{self.read} log entries read",
            f"{self.enqueued} files enqueued",
            f"{sum(self.ineligible.values())} files ineligible",
        ]
        out += [f"    {n} {kind}" for kind, n in sorted(self.ineligible.items()) if n]
        out.append(f"{self.known} already known")
        if self.unrecorded:
            out.append(f"{self.unrecorded} without a page id (not recorded)")
        if self.cursor is not None:
            out.append(f"cursor: {self.cursor.timestamp:%Y-%m-%dT%H:%M:%S}Z log id {self.cursor.log_id}")
        return out


@dataclass
class FetchCounters:
    """What one fetch round did (by reason kind for the files not fetched)."""

    claimed: int = 0
    fetched: int = 0
    unavailable: Counter = field(default_factory=Counter)
    ineligible: Counter = field(default_factory=Counter)
    deferred: int = 0

    def add(self, other: "FetchCounters") -> None:
        self.claimed += other.claimed
        self.fetched += other.fetched
        self.unavailable.update(other.unavailable)
        self.ineligible.update(other.ineligible)
        self.deferred += other.deferred

    def lines(self) -> List[str]:
        out = [f"{self.claimed} files claimed", f"{self.fetched} fetched"]
        for name, counts in (("unavailable", self.unavailable), ("ineligible", self.ineligible)):
            out.append(f"{sum(counts.values())} {name}")
            out += [f"    {n} {kind}" for kind, n in sorted(counts.items()) if n]
        out.append(f"{self.deferred} deferred (to be tried again)")
        return out


def poll_once(store: QueueStore, poller: Poller, since: Optional[datetime] = None) -> PollCounters:
    """Read the upload log from the stored cursor to its end and queue what is new.

    Each page of the log is committed with its cursor before the next one is read, so a
    failure loses at most the page being read and the next poll resumes after the last
    committed one. Uploads already queued are left alone (and counted as known).

    :param since: start here instead of at the stored cursor (the cursor moves on anyway).
    :raises WikiError: the wiki failed; everything committed so far stays.
    """
    start = Cursor(since, 0) if since is not None else store.get_cursor(poller.source)
    counters = PollCounters()
    for batch in poller.batches(start):
        done = _enqueue_batch(store, poller.source, batch)
        counters.add(done)
        event("poll", "batch", read=done.read, enqueued=done.enqueued,
              ineligible=sum(done.ineligible.values()), known=done.known,
              cursor=f"{batch.cursor.timestamp:%Y-%m-%dT%H:%M:%S}Z/{batch.cursor.log_id}")
    return counters


def _enqueue_batch(store: QueueStore, source: str, batch: PollBatchLike) -> PollCounters:
    uploads = {u.page_id: u for u in batch.uploads}
    refused: Dict[str, Dict[int, str]] = {}
    for page_id, why in batch.ineligible.items():
        if page_id in uploads:
            refused.setdefault(reason_kind(why), {})[page_id] = why
    counters = PollCounters(read=batch.read, unrecorded=batch.unrecorded, cursor=batch.cursor)
    # One enqueue per reason kind tells how many *new* files each kind refused; the rows are
    # idempotent, so only the last call, which also moves the cursor, has to be atomic.
    for kind, reasons in sorted(refused.items()):
        new = store.enqueue([uploads[p] for p in reasons], ineligible=reasons)
        if new:
            counters.ineligible[kind] += new
    eligible = [u for p, u in uploads.items() if p not in batch.ineligible]
    counters.enqueued = store.enqueue(eligible, cursor=(source, batch.cursor))
    counters.known = len(uploads) - counters.enqueued - sum(counters.ineligible.values())
    return counters


def fetch_pending(
    store: QueueStore, fetcher: FetcherPort, limit: int, worker: str,
    max_attempts: int = MAX_FETCH_ATTEMPTS,
) -> FetchCounters:
    """Claim up to ``limit`` discovered files, fetch them and record each outcome.

    A file the fetcher could not finish for a transient reason stays claimed until its lease
    expires, then is tried again (and marked unavailable once it has been claimed
    ``max_attempts`` times). If the wiki
    fails altogether, the files not yet recorded are given back and the error is raised.

    :param worker: this worker's name (claims carry it).
    :raises WikiError: from the fetcher.
    """
    works = store.claim_files(FileState.DISCOVERED, max(0, limit), worker)
    counters = FetchCounters(claimed=len(works))
    pending = {w.id: w for w in works}
    try:
        size = max(1, fetcher.batch_size)
        for start in range(0, len(works), size):
            chunk = works[start:start + size]
            outcomes = fetcher.fetch([w.page_id for w in chunk])
            for work in chunk:
                outcome = outcomes.get(work.page_id, Deferred("the fetcher gave no answer"))
                _record(store, work, outcome, counters, max_attempts)
                pending.pop(work.id, None)
    finally:
        if pending:
            store.release_files(list(pending))
    return counters


def _record(store: QueueStore, work: FileWork, outcome: FetchOutcome, counters: FetchCounters,
            max_attempts: int) -> None:
    if isinstance(outcome, MediaFile):
        store.mark_fetched(work.id, outcome)
        counters.fetched += 1
        event("fetch", "fetched", file=work.mid, depicts=len(outcome.depicts))
    elif isinstance(outcome, Unavailable):
        store.mark_unavailable(work.id, outcome.reason)
        counters.unavailable[reason_kind(outcome.reason)] += 1
        event("fetch", "unavailable", file=work.mid, reason=outcome.reason)
    elif isinstance(outcome, Ineligible):
        store.mark_ineligible(work.id, outcome.reason)
        counters.ineligible[reason_kind(outcome.reason)] += 1
        event("fetch", "ineligible", file=work.mid, reason=outcome.reason)
    elif work.attempts >= max_attempts:
        why = f"gave up after {work.attempts} attempts: {outcome.reason}"
        store.mark_unavailable(work.id, why)
        counters.unavailable[reason_kind(why)] += 1
        event("fetch", "unavailable", file=work.mid, reason=why)
    else:
        # Left claimed on purpose: the claim's lease (db.claim_lease_s) is the back-off
        # before another worker, or this one, tries the file again.
        counters.deferred += 1
        event("fetch", "deferred", file=work.mid, reason=outcome.reason)


class ThumbnailsPort(Protocol):
    """Downloads thumbnails (``commons.thumbnails.ThumbnailClient``)."""

    def get_many(self, urls: Sequence[str]) -> Mapping[str, object]: ...


class LinkPort(Protocol):
    """Links (file, bytes) pairs (``linker.link.link_files`` with its linker and rules bound).

    Returns one outcome per input in order: an object with ``candidates`` (linked) or with
    ``reason`` (this file could not be linked; the batch goes on).
    """

    def __call__(self, files: Sequence[Tuple[MediaFile, bytes]],
                 rejected: Mapping[int, AbstractSet[str]]) -> Sequence[object]: ...


@dataclass
class LinkCounters:
    """What one link round did."""

    claimed: int = 0
    linked: int = 0
    candidates: int = 0
    unavailable: Counter = field(default_factory=Counter)
    deferred: int = 0
    # Suggestions the safety rules withheld, by rule (named person, sensitive class, ...).
    withheld: Counter = field(default_factory=Counter)

    def add(self, other: "LinkCounters") -> None:
        self.claimed += other.claimed
        self.linked += other.linked
        self.candidates += other.candidates
        self.unavailable.update(other.unavailable)
        self.deferred += other.deferred
        self.withheld.update(other.withheld)

    def lines(self) -> List[str]:
        out = [f"{self.claimed} files claimed", f"{self.linked} linked",
               f"{self.candidates} candidates proposed",
               f"{sum(self.unavailable.values())} unavailable"]
        out += [f"    {n} {kind}" for kind, n in sorted(self.unavailable.items()) if n]
        out.append(f"{self.deferred} deferred (to be tried again)")
        out.append(f"{sum(self.withheld.values())} suggestions withheld by the safety rules")
        out += [f"    {rule_count(n, rule)}" for rule, n in sorted(self.withheld.items()) if n]
        return out


def link_pending(
    store: QueueStore, thumbnails: ThumbnailsPort, link: LinkPort, limit: int, worker: str,
    max_attempts: int = MAX_FETCH_ATTEMPTS,
) -> LinkCounters:
    """Claim up to ``limit`` fetched files, download their thumbnails, link and save.

    Rejected (file, item) pairs are passed to the linker so they are never proposed again.
    A corrupt or vanished thumbnail marks only that file unavailable; a media-server failure
    leaves the file claimed (its lease is the back-off) until ``max_attempts``.

    :param link: see :class:`LinkPort`.
    :param worker: this worker's name (claims carry it).
    """
    works = store.claim_files(FileState.FETCHED, max(0, limit), worker)
    counters = LinkCounters(claimed=len(works))
    pending = {w.id: w for w in works}
    try:
        ready: List[Tuple[FileWork, MediaFile, bytes]] = []
        urls = [w.media.thumb_url for w in works if w.media is not None and w.media.thumb_url]
        fetched = thumbnails.get_many(urls) if urls else {}
        for work in works:
            media = work.media
            got = fetched.get(media.thumb_url) if media is not None and media.thumb_url else None
            if media is None or not media.thumb_url:
                _unavailable(store, work, "no thumbnail: the fetcher found no thumbnail URL", counters)
            elif isinstance(got, bytes):
                ready.append((work, media, got))
                continue
            elif isinstance(got, FileUnavailable):
                _unavailable(store, work, str(got), counters)
            elif work.attempts >= max_attempts:
                _unavailable(store, work, f"gave up after {work.attempts} attempts: {got}", counters)
            else:
                counters.deferred += 1  # left claimed: the lease is the back-off
            pending.pop(work.id, None)
        rejected = {media.page_id: store.rejected_items(work.id) for work, media, _ in ready}
        outcomes = link([(media, data) for _, media, data in ready], rejected) if ready else []
        for (work, _, _), outcome in zip(ready, outcomes):
            found = getattr(outcome, "candidates", None)
            if found is None:
                _unavailable(store, work, str(getattr(outcome, "reason", "linker gave no result")), counters)
            else:
                withheld = withheld_record(outcome)
                saved = store.save_candidates(work.id, list(found), withheld=withheld)
                counters.candidates += saved
                counters.linked += 1
                by_rule = withheld_counts(withheld)
                counters.withheld.update(by_rule)
                event("link", "linked", file=work.mid, candidates=saved,
                      top=found[0].qid if found else None, withheld=sum(by_rule.values()))
            pending.pop(work.id, None)
    finally:
        if pending:
            store.release_files(list(pending))
    return counters


def withheld_record(outcome: object) -> Dict[str, int]:
    """What the safety rules withheld for a linked file, as stored with the file (the daemon's
    ``link_pending`` and the backfill's link stage both record it so): ``{rule: suggestions}``
    only. Which items were withheld is never kept: "this photo shows person X" is the very
    inference the rules exist to keep from leaking (``suggest --show-withheld`` names them
    in a local run)."""
    ranking = getattr(outcome, "ranking", None)
    return dict(Counter(str(w.rule) for w in getattr(ranking, "withheld", ())))


def withheld_counts(record: object) -> Counter:
    """``{rule: suggestions}`` of a :func:`withheld_record` (``core.safety.withheld_by_rule``)."""
    return Counter(withheld_by_rule(record))


def _unavailable(store: QueueStore, work: FileWork, reason: str, counters: LinkCounters) -> None:
    store.mark_unavailable(work.id, reason)
    counters.unavailable[reason_kind(reason)] += 1
    event("link", "unavailable", file=work.mid, reason=reason)
