"""The daemon's leases: its heartbeat renews the work in progress by id and nothing else, and
a pair revoked while it was being written, then approved again, is written in the next cycle.

An in-process daemon driven job by job (a heartbeat is ``keep_leases``), on a SQLite queue
whose clock is moved by hand; the write runs through the real write loop and pywikibot
against the local test wiki. The moments where a reviewer or the heartbeat slip in are fixed
by hooks inside the stages, not by timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    ancestors_of,
    approve,
    clock,
    depicts_on_wiki,
    queue,
    site,
    states,
    targets,
    wiki,
)
from tests.test_store import upload
from wikivel_bot import pipeline
from wikivel_bot.commons.outcomes import Deferred
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.config import Settings
from wikivel_bot.daemon.scheduler import Daemon, Parts
from wikivel_bot.queue.leases import WorkInProgress
from wikivel_bot.types import DecisionAction, FileState, MediaFile

LEASE_S = 900  # the writer_support queue's (the Store default)
BATCH = "b-20260101000000-dlea"


@dataclass
class Check:
    paused: bool = False
    reason: str = ""


@dataclass
class Nothing:
    claimed: int = 0


def daemon_over(store: Any, work: WorkInProgress, **stages: Callable[..., Any]) -> Daemon:
    parts = Parts(store=store, poll=lambda: None, fetch=lambda n: Nothing(), link=lambda n: Nothing(),
                  write=None, stop_check=lambda: Check(), maintenance=lambda: None, description={},
                  work=work)
    for name, stage in stages.items():
        setattr(parts, name, stage)
    return Daemon(Settings().replace("write", batch_size=5), parts, write_interval_s=1)


class SlowFetcher:
    """Its first batch takes 1.6 leases, with a heartbeat in the middle; one file of it is
    deferred (the media server kept failing: its lease is the back-off)."""

    batch_size = 10

    def __init__(self, clock: Any, deferred: int) -> None:
        self.clock, self.deferred = clock, deferred
        self.daemon: Optional[Daemon] = None
        self.seen_by_other: List[Any] = []

    def fetch(self, page_ids: List[int]) -> Dict[int, Any]:
        assert self.daemon is not None
        self.clock.advance(LEASE_S * 0.8)
        self.daemon.keep_leases()  # a heartbeat while the batch is worked on
        self.clock.advance(LEASE_S * 0.8)
        self.seen_by_other = self.daemon.parts.store.claim_files(FileState.DISCOVERED, 10, "other")
        return {p: Deferred("HTTP 503 from the media server") if p == self.deferred
                else MediaFile(page_id=p, title=f"File:F{p}.jpg") for p in page_ids}


def test_the_heartbeat_renews_the_work_in_progress_and_nothing_else(queue, clock) -> None:
    queue.enqueue([upload(1), upload(2)])
    work = WorkInProgress()
    fetcher = SlowFetcher(clock, deferred=2)
    daemon = daemon_over(queue, work)
    daemon.parts.fetch = lambda n: work.run(queue, lambda q: pipeline.fetch_pending(q, fetcher, n, daemon.worker))
    fetcher.daemon = daemon

    daemon.link_job()
    assert fetcher.seen_by_other == [], "a batch in progress lost its lease despite the heartbeat"
    assert work.ids() == ([], []), "a finished stage is still in progress"
    (deferred,) = [c for c in queue.claims() if c["table"] == "files"]
    assert (deferred["worker"], deferred["count"]) == (daemon.worker, 1)

    # The deferred file is no work in progress: heartbeats leave its lease (the back-off) to
    # run out, and then another worker (or this one) tries it again.
    daemon.keep_leases()
    clock.advance(LEASE_S / 2)
    daemon.keep_leases()
    clock.advance(LEASE_S / 2 + 1)
    assert [w.page_id for w in queue.claim_files(FileState.DISCOVERED, 10, "other")] == [2]


class RevokeAtConfirm:
    """The queue as the daemon's write stage sees it; inside the first confirm (the writer's
    last check before its edit) ``hook`` runs: a reviewer changes their mind right then."""

    def __init__(self, store: Any, hook: Callable[[], None]) -> None:
        self._store, self._hook = store, hook

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def confirm_claim(self, candidate_id: int, worker: str) -> bool:
        hook, self._hook = self._hook, lambda: None
        hook()
        return bool(self._store.confirm_claim(candidate_id, worker))


def test_a_pair_approved_again_after_a_revoked_write_is_written_in_the_next_cycle(
        wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q146")
    work = WorkInProgress()
    writer = StatementWriter(site, BATCH, ancestors_of)
    undo: List[int] = []
    daemon: Daemon

    def revoke() -> None:
        if undo:
            return  # once
        undo.append(queue.record_decision(10004, "Q146", DecisionAction.REJECT, REVIEWER, "web"))
        daemon.keep_leases()  # the heartbeat beats while the write stage still runs

    def write(n: int) -> Any:
        return work.run(queue, lambda q: write_approved(RevokeAtConfirm(q, revoke), writer, batch_size=1,
                                                        worker=daemon.worker, limit=n, clock=clock))

    daemon = daemon_over(queue, work, write=write)
    daemon.write_job()
    assert states(queue)[(10004, "Q146")] == "rejected"
    assert targets(depicts_on_wiki(wiki, 10004)) == []
    assert queue.claims() == [], "the revoked pair is still claimed"

    daemon.keep_leases()
    queue.undo_decision(undo[0])  # the reviewer approves it again (undo in the terminal/web)
    daemon.keep_leases()
    daemon.write_job()  # the next cycle
    assert states(queue)[(10004, "Q146")] == "written"
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]
    assert queue.claims() == []
