"""The loop over the queue: claim approved pairs, write each with the writer, record, count.

:func:`write_approved` is what ``wikivel-bot write`` and the daemon's write job run. The
queue's leases keep two writers off one pair: a :class:`LeaseKeeper` renews them while a batch
is worked on, the writer confirms the claim right before each edit, and whatever a run
claimed and did not handle is released on the way out. One edit itself (re-read, plan,
write, recover) is :class:`~wikivel_bot.commons.writer.StatementWriter`'s.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, List, Optional, Protocol, Sequence

from wikivel_bot.commons.writer import Outcome, StatementWriter
from wikivel_bot.errors import LeaseLost
from wikivel_bot.events import event
from wikivel_bot.types import QID_REGEX, ApprovedEdit, CandidateState, DryRun, Skipped, Written

__all__ = ["LeaseKeeper", "WriteCounters", "WriteQueue", "reason_kind", "write_approved"]


class WriteQueue(Protocol):
    def claim_approved(self, limit: int, worker: str, *, dry_run: bool = False) -> List[ApprovedEdit]: ...

    def confirm_claim(self, candidate_id: int, worker: str) -> bool: ...

    def renew_claims(self, worker: str) -> int: ...

    def release_candidates(self, candidate_ids: Sequence[int], worker: str) -> int: ...

    def record_edit(self, candidate_id: int, batch_id: str, outcome: Outcome, started_at: object,
                    max_attempts: int = 5, worker: Optional[str] = None) -> CandidateState: ...


class LeaseKeeper:
    """Renews a worker's leases every ``interval_s`` seconds on a background thread while a
    batch is being written, so a batch that outlives its lease is never handed to a second
    writer. A context manager; the thread stops on exit.

    :param renew: called with no argument to renew (``lambda: store.renew_claims(worker)``).
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
    skipped: Counter = field(default_factory=Counter)
    retrying: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    batch_id: str = ""

    def add(self, outcome: Outcome, state: CandidateState) -> None:
        """Count one recorded outcome (``state``: the pair's state after recording)."""
        if isinstance(outcome, Written):
            self.written += 1
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
        out += [f"{self.claimed} approved pairs claimed", f"{self.written} written"]
        if self.dry_run:
            out.append(f"{self.dry_run} dry-run (would have been written; still approved for a "
                       "real write)")
        if self.lost:
            out.append(f"{self.lost} left to another writer (lease taken over; not written)")
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
    """Claim approved pairs ``batch_size`` at a time, write each, record each outcome.

    Returns when nothing is claimable (pairs waiting for a retry time are not), or after
    ``limit`` pairs. Each outcome is committed before the next write starts. While a batch is
    worked on, its leases are renewed (``lease_renewal_s``), and right before each edit the
    writer confirms it still holds the pair; whatever the run claimed and did not handle
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
    """
    counters = counters if counters is not None else WriteCounters()
    counters.batch_id = writer.batch_id
    done = 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        claimed = store.claim_approved(size, worker, dry_run=writer.simulates)
        if not claimed:
            break
        counters.claimed += len(claimed)
        pending = [edit.candidate_id for edit in claimed]
        keeper: Any = (LeaseKeeper(lambda: store.renew_claims(worker), lease_renewal_s)
                       if lease_renewal_s else nullcontext())
        try:
            with keeper:
                for edit in claimed:
                    done += _write_one(store, writer, edit, worker, max_attempts, clock, counters)
                    pending.remove(edit.candidate_id)
        finally:
            store.release_candidates(pending, worker)
    return counters


def _write_one(store: WriteQueue, writer: StatementWriter, edit: ApprovedEdit, worker: str,
               max_attempts: int, clock: Callable[[], datetime], counters: WriteCounters) -> int:
    """Write and record one claimed pair; 1 when an outcome was recorded, 0 when lost."""
    started = clock()
    try:
        outcome = writer.write(edit, still_ours=lambda: store.confirm_claim(edit.candidate_id, worker))
        state = store.record_edit(edit.candidate_id, writer.batch_id, outcome, started,
                                  max_attempts, worker=worker)
    except LeaseLost as exc:
        counters.lost += 1
        event("write", "lease-lost", file=edit.mid, item=edit.qid, batch=writer.batch_id,
              reason=str(exc))
        return 0
    counters.add(outcome, state)
    event("write", type(outcome).__name__.lower(), file=edit.mid, item=edit.qid,
          batch=getattr(outcome, "batch_id", "") or writer.batch_id, state=state.value,
          revid=getattr(outcome, "revid", None), reason=getattr(outcome, "reason", None))
    return 1
