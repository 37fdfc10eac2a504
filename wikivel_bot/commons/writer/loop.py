"""The loop over the queue: claim approved pairs by whole files, write each file's pairs as
one edit with the writer, record each pair's outcome, count.

:func:`write_approved` is what ``wikivel-bot write`` and the daemon's write job run. The
queue's leases keep two writers off one pair: a :class:`LeaseKeeper` renews them while a batch
is worked on, the writer confirms each claim after its re-read and again right before the
edit request leaves, and whatever a run claimed and did not handle is released on the way
out. A pair approved while its file's edit is being made is claimed by the next round and
goes into the file's next edit. One edit itself (re-read, plan, write, recover) is
:class:`~wikivel_bot.commons.writer.statement_writer.StatementWriter`'s.

A decision that arrived after an edit's request left is honoured by a follow-up edit
(:mod:`wikivel_bot.commons.writer.follow_up`): the run makes every follow-up owed when it starts
and after each batch, so a reject that lands while its statement is being written has the
statement removed again in the same run (or, if it lands after the run, in the next). A
group edit that left one of its items on the file twice has its new statement removed
again right after it is recorded. Before the follow-ups, the requests whose answer never
came are settled by a re-read (:mod:`wikivel_bot.commons.writer.unsettled`): one applied
late is recorded, and then followed up like any other.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, List, Optional, Protocol, Sequence, Set

from wikivel_bot.commons.writer.edit_group import Lost
from wikivel_bot.commons.writer.follow_up import FollowUpQueue, remove_twins, settle_follow_ups
from wikivel_bot.commons.writer.statement_writer import Outcome, StatementWriter
from wikivel_bot.commons.writer.unsettled import Journal, SendQueue, settle_unsettled
from wikivel_bot.commons.writer.edit_budget import MAX_EDITS_PER_FILE
from wikivel_bot.errors import LeaseLost
from wikivel_bot.events import event
from wikivel_bot.types import QID_REGEX, ApprovedEdit, CandidateState, DryRun, Skipped, Written

__all__ = ["LeaseKeeper", "WriteCounters", "WriteQueue", "reason_kind", "write_approved"]


class WriteQueue(FollowUpQueue, SendQueue, Protocol):
    def claim_approved(self, limit: int, worker: str, *, dry_run: bool = False) -> List[ApprovedEdit]: ...

    def confirm_claim(self, candidate_id: int, worker: str) -> bool: ...

    def renew_claims(self, worker: str, *, candidate_ids: Sequence[int] = ()) -> int: ...

    def release_candidates(self, candidate_ids: Sequence[int], worker: str) -> int: ...

    def record_edit(self, candidate_id: int, batch_id: str, outcome: Outcome, started_at: object,
                    max_attempts: int = 5, worker: Optional[str] = None) -> CandidateState: ...


class LeaseKeeper:
    """Renews a worker's leases every ``interval_s`` seconds on a background thread while a
    batch is being written, so a batch that outlives its lease is never handed to a second
    writer. A context manager; the thread stops on exit.

    :param renew: called with no argument to renew (``store.renew_claims`` of the batch's ids).
    :param interval_s: a fraction of the lease (a third: two renewals may fail in a row).
    """

    def __init__(self, renew: Callable[[], Any], interval_s: float) -> None:
        self._renew = renew
        self._interval = max(0.05, interval_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._renew()
            except Exception as exc:  # noqa: BLE001 - the edit's own confirm is the last guard
                event("write", "lease-renewal-failed", error=" ".join(str(exc).split())[:200])


# Item ids inside a reason (types' one rule), blanked so that reasons of a kind count together.
_QID = re.compile(rf"\b{QID_REGEX}\b", re.ASCII)


def reason_kind(reason: str) -> str:
    """A skip or failure reason without its item ids and details, for counting."""
    return _QID.sub("Q…", reason.split(":", 1)[0]).strip()


@dataclass
class WriteCounters:
    """What a write run did; ``lines()`` is printed at exit."""

    claimed: int = 0
    written: int = 0
    dry_run: int = 0
    lost: int = 0
    # Follow-up edits made (a later decision honoured) and second statements removed.
    followed_up: int = 0
    twins_removed: int = 0
    # Requests whose answer never came, settled by a re-read (commons.writer.unsettled).
    applied_late: int = 0
    not_applied: int = 0
    unsettled: int = 0
    # Pairs left for the next run: their file had its edits for now (edit_budget).
    deferred: int = 0
    skipped: Counter = field(default_factory=Counter)
    retrying: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    batch_id: str = ""
    # The revisions the written pairs are in: one edit per file writes all its pairs.
    revisions: Set[int] = field(default_factory=set)

    def add(self, outcome: Outcome, state: CandidateState) -> None:
        """Count one recorded outcome (``state``: the pair's state after recording)."""
        if isinstance(outcome, Written):
            self.written += 1
            self.revisions.add(outcome.revid)
        elif isinstance(outcome, DryRun):
            self.dry_run += 1
        elif isinstance(outcome, Skipped):
            self.skipped[reason_kind(outcome.reason)] += 1
        elif state is CandidateState.APPROVED:
            self.retrying[reason_kind(outcome.reason)] += 1
        else:
            self.failed[reason_kind(outcome.reason)] += 1

    def lines(self) -> List[str]:
        out = [f"batch {self.batch_id}"] if self.batch_id else []
        edits = len(self.revisions)
        written = f" in {edits} edit{'' if edits == 1 else 's'}" if self.written else ""
        out += [f"{self.claimed} approved pairs claimed", f"{self.written} written{written}"]
        if self.dry_run:
            out.append(f"{self.dry_run} dry-run (would have been written; still approved for a "
                       "real write)")
        if self.followed_up:
            out.append(f"{self.followed_up} follow-up edits (a decision made after its edit "
                       "was sent: statement removed again or its rank changed)")
        if self.twins_removed:
            out.append(f"{self.twins_removed} second statements of an item removed again")
        if self.applied_late:
            out.append(f"{self.applied_late} edits whose answer never came found applied late "
                       "(recorded; a later decision is followed up)")
        if self.not_applied:
            out.append(f"{self.not_applied} edits whose answer never came found not applied")
        if self.unsettled:
            out.append(f"{self.unsettled} edits sent without an answer, not on the file yet "
                       "(checked again by the next runs)")
        if self.deferred:
            out.append(f"{self.deferred} left for the next run (their file had its "
                       f"{MAX_EDITS_PER_FILE} bot edits of the hour)")
        if self.lost:
            out.append(f"{self.lost} left to another writer or a later decision (lease taken "
                       "over, or no longer approved; not written)")
        for name, counts in (("skipped", self.skipped), ("failed, will retry", self.retrying),
                             ("failed, left for a human", self.failed)):
            out.append(f"{sum(counts.values())} {name}")
            out += [f"    {n} {kind}" for kind, n in sorted(counts.items())]
        return out


def write_approved(store: WriteQueue, writer: StatementWriter, *, batch_size: int, worker: str,
                   max_attempts: int = 5, limit: Optional[int] = None,
                   clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                   counters: Optional[WriteCounters] = None,
                   lease_renewal_s: Optional[float] = None) -> WriteCounters:
    """Claim approved pairs ``batch_size`` at a time (whole files: a file's claimable pairs
    come together), write each file's pairs as one edit, record each pair's outcome.

    Returns when nothing is claimable (pairs waiting for a retry time are not), or after
    ``limit`` pairs (a file's group is not cut, so a few more may be written). Each edit's
    outcomes are committed before the next edit starts. While a batch is worked on, its
    leases are renewed (``lease_renewal_s``), and right before each edit the writer confirms
    it still holds each pair; whatever the run claimed and did not handle
    (an exception, Ctrl-C, a stop) is released on the way out, so no pair waits for a lease
    to expire. A dry-run writer claims only pairs not simulated since their approval.

    :param store: the queue (``claim_approved``, ``confirm_claim``, ``record_edit``, ...).
    :param writer: a :class:`StatementWriter` (its ``batch_id`` goes into the audit rows).
    :param worker: the lease holder's name.
    :param max_attempts: transient failures after which a pair is left for a human.
    :param counters: added to (and returned), for callers that loop.
    :param lease_renewal_s: seconds between lease renewals (a third of the lease); None
        renews only at each confirm.
    :raises WriteStopped, WriteRefused: the run must end (its unhandled claims are released).
    :raises WritingPaused: the stop page says stop (read before every edit); likewise.
    """
    counters = counters if counters is not None else WriteCounters()
    counters.batch_id = writer.batch_id
    writer.journal = Journal(store, writer.batch_id, worker)
    # Pairs whose file had its edits for now (edit_budget): held until the run ends, so the
    # next claim does not hand them out again, then released unattempted.
    deferred: List[int] = []
    try:
        _write_batches(store, writer, batch_size, worker, max_attempts, limit, clock, counters,
                       lease_renewal_s, deferred)
    finally:
        store.release_candidates(deferred, worker)
    # Those still unsettled, this run's included (a count in the queue; nothing re-read).
    counters.unsettled = int(store.unsettled_summary()["count"])
    return counters


def _write_batches(store: WriteQueue, writer: StatementWriter, batch_size: int, worker: str,
                   max_attempts: int, limit: Optional[int], clock: Callable[[], datetime],
                   counters: WriteCounters, lease_renewal_s: Optional[float], deferred: List[int]) -> None:
    # Once a run, first: the requests whose answer never came. One applied late is recorded,
    # and the follow-ups below then honour its pair's last decision in the same run. Not
    # after each batch: a request of this run without an answer was just re-read.
    settled = settle_unsettled(store, writer, clock=clock)
    counters.applied_late += settled.applied_late
    counters.not_applied += settled.not_applied
    _follow_up(store, writer, worker, clock, counters)
    done = 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        claimed = store.claim_approved(size, worker, dry_run=writer.simulates)
        if not claimed:
            break
        counters.claimed += len(claimed)
        pending = [edit.candidate_id for edit in claimed]
        # Renewed by id, the pairs not yet handled: a pair lost to a decision is not kept.
        keeper: Any = (LeaseKeeper(lambda: store.renew_claims(worker, candidate_ids=list(pending)),
                                   lease_renewal_s)
                       if lease_renewal_s else nullcontext())
        try:
            with keeper:
                for group in writer.groups(claimed):
                    # Its own edit and the twin removal it may need right after.
                    if writer.budget.allows(group[0].page_id, 2):
                        done += _write_group(store, writer, group, worker, max_attempts, clock, counters)
                    else:
                        counters.deferred += len(group)
                        deferred.extend(edit.candidate_id for edit in group)
                        event("write", "deferred", file=group[0].mid, pairs=len(group),
                              reason="the file's edit budget is spent for now")
                    for edit in group:
                        pending.remove(edit.candidate_id)
        finally:
            store.release_candidates(pending, worker)
        # Decisions that arrived while this batch's requests were in flight.
        _follow_up(store, writer, worker, clock, counters)


def _follow_up(store: WriteQueue, writer: StatementWriter, worker: str,
               clock: Callable[[], datetime], counters: WriteCounters) -> None:
    for outcome in settle_follow_ups(store, writer, worker, clock=clock):
        if isinstance(outcome, Written):
            counters.followed_up += 1


def _write_group(store: WriteQueue, writer: StatementWriter, group: Sequence[ApprovedEdit],
                 worker: str, max_attempts: int, clock: Callable[[], datetime],
                 counters: WriteCounters) -> int:
    """Write one file's claimed pairs as one edit and record each pair's outcome; the number
    of outcomes recorded (a pair lost to another writer or a human is not)."""
    started = clock()
    results = writer.write_group(group, still_ours=lambda candidate_id: store.confirm_claim(candidate_id, worker))
    recorded = 0
    for edit, outcome in results:
        try:
            if isinstance(outcome, Lost):
                raise LeaseLost(outcome.reason)
            # A Written is recorded whatever happened to the pair meanwhile (record_edit):
            # every edit the bot made is in the audit.
            state = store.record_edit(edit.candidate_id, writer.batch_id, outcome, started,
                                      max_attempts, worker=worker)
        except LeaseLost as exc:
            counters.lost += 1
            event("write", "lease-lost", file=edit.mid, item=edit.qid, batch=writer.batch_id,
                  reason=str(exc))
            continue
        counters.add(outcome, state)
        event("write", type(outcome).__name__.lower(), file=edit.mid, item=edit.qid,
              batch=getattr(outcome, "batch_id", "") or writer.batch_id, state=state.value,
              revid=getattr(outcome, "revid", None), reason=getattr(outcome, "reason", None))
        recorded += 1
    if writer.sent.twins:
        for candidate_id, guid, removal in remove_twins(writer, group[0].page_id, writer.sent.twins):
            if isinstance(removal, Written):
                store.record_twin_removed(candidate_id, writer.batch_id, removal.revid, guid,
                                          "a second statement of the item, removed again")
                counters.twins_removed += 1
            event("write", "twin-" + type(removal).__name__.lower(), file=group[0].mid,
                  statement=guid, reason=getattr(removal, "reason", None))
    return recorded
