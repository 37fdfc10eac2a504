"""A database outage under a running daemon: one line a minute, then no claim left behind.

Real PostgreSQL and MariaDB, cut through a TCP proxy the test owns (the servers themselves
are shared and keep running). At the cut the daemon is in the middle of two stages: a fetch
batch (two files claimed, the real fetch stage) and a write (one pair claimed); both fail, and so do the releases
in their ``finally``. While the database is down every job and heartbeat fails; the log gets
one "database unreachable, retrying" line a minute (the daemon's clock is a fake one moved
by hand) and no traceback. Once it is back, a single heartbeat gives every claimed row back.
An in-process daemon, driven job by job: the stages' timing is fixed by events, not sleeps.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest
from sqlalchemy.engine import make_url

from tests.db_support import open_store, queue_url
from tests.tcp_proxy import TcpProxy
from tests.test_store import linked_file, upload
from wikivel_bot import pipeline
from wikivel_bot.config import Settings
from wikivel_bot.daemon.scheduler import Daemon, Parts
from wikivel_bot.queue.leases import WorkInProgress
from wikivel_bot.types import DecisionAction, FileState, MediaFile

DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}
UNREACHABLE = "database unreachable, retrying"


@dataclass
class Check:
    paused: bool = False
    reason: str = ""


@dataclass
class Nothing:
    claimed: int = 0


class FakeClock:
    """Monotonic seconds, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["postgresql", "mysql"])
def proxied(request: pytest.FixtureRequest, tmp_path: Path,
            _scratch_databases: Dict[str, Any]) -> Iterator[Tuple[str, str, TcpProxy]]:
    """(direct URL, URL through the proxy, the proxy) of an empty migrated queue."""
    url = queue_url(request.param, tmp_path, _scratch_databases)
    real = make_url(url)
    with TcpProxy(real.host or "127.0.0.1", real.port or DEFAULT_PORTS[request.param]) as proxy:
        through = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        yield url, through, proxy


class HeldFetcher:
    """Holds its batch until the test says so: the fetch stage is in progress meanwhile."""

    batch_size = 10

    def __init__(self) -> None:
        self.started, self.go_on = threading.Event(), threading.Event()

    def fetch(self, page_ids: Any) -> Dict[int, MediaFile]:
        self.started.set()
        assert self.go_on.wait(120), "the test never let the fetch go on"
        return {p: MediaFile(page_id=p, title=f"File:F{p}.jpg") for p in page_ids}


def cut_while_writing(queue: Any, worker: str, proxy: TcpProxy) -> Nothing:
    """The write stage's shape (claim, confirm right before the edit, release what was not
    handled on the way out), with the database going away between the claim and the edit."""
    claimed = queue.claim_approved(1, worker)
    try:
        proxy.cut()
        queue.confirm_claim(claimed[0].candidate_id, worker)
        raise AssertionError("confirm_claim answered without a database")
    finally:
        queue.release_candidates([e.candidate_id for e in claimed], worker)


def test_an_outage_logs_once_a_minute_and_leaves_no_claim(proxied, caplog: pytest.LogCaptureFixture) -> None:
    direct_url, through_url, proxy = proxied
    direct = open_store(direct_url)
    linked_file(direct, 3, ["Q146"])
    direct.record_decision(3, "Q146", DecisionAction.APPROVE, "Ann", "cli")
    direct.enqueue([upload(1), upload(2)])

    store = open_store(through_url)
    work = WorkInProgress()
    fetcher = HeldFetcher()
    clock = FakeClock()
    daemon: Daemon
    parts = Parts(
        store=store, poll=lambda: None,
        fetch=lambda n: work.run(store, lambda q: pipeline.fetch_pending(q, fetcher, n, daemon.worker)),
        link=lambda n: Nothing(),
        write=lambda n: work.run(store, lambda q: cut_while_writing(q, daemon.worker, proxy)),
        stop_check=lambda: Check(), maintenance=lambda: None, description={}, work=work)
    daemon = Daemon(Settings().replace("write", batch_size=1), parts, write_interval_s=1, clock=clock)
    try:
        with caplog.at_level(logging.INFO):
            # The fetch stage claims two files and waits for the wiki...
            fetching = threading.Thread(target=daemon.link_job)
            fetching.start()
            assert fetcher.started.wait(120)
            # ...when the write stage claims the pair and the database goes away under it.
            daemon.write_job()
            fetcher.go_on.set()
            fetching.join(timeout=120)
            assert not fetching.is_alive()
            held = {(c["table"], c["count"]) for c in direct.claims()}
            assert held == {("files", 2), ("candidates", 1)}, "the releases should have failed"

            # 150 s of outage, every job and heartbeat failing every 10 s.
            for _ in range(15):
                clock.advance(10)
                daemon.keep_leases()
                daemon._state("writing", {"paused": False})
                daemon.write_job()
                daemon.link_job()
            down_lines = [r for r in caplog.records if UNREACHABLE in r.getMessage()]
            assert len(down_lines) == 3, [r.getMessage() for r in down_lines]  # at 0, 60, 120 s

            # Back: one heartbeat later nothing is claimed, and the log says so once.
            proxy.restore()
            clock.advance(5)
            daemon.keep_leases()
            daemon._state("writing", {"paused": False})
        assert direct.claims() == []
        assert store.owed_releases() == 0
        assert sorted(w.page_id for w in direct.claim_files(FileState.DISCOVERED, 10, "other")) == [1, 2]
        assert [e.qid for e in direct.claim_approved(10, "other")] == ["Q146"]
        messages = [r.getMessage() for r in caplog.records]
        assert sum("database reachable again" in m for m in messages) == 1
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
        assert not [m for m in messages if "Traceback" in m or "outcome=error" in m], messages
    finally:
        fetcher.go_on.set()
        store.close()
        direct.close()
