"""Two worker processes claiming from one queue never get the same row, on every backend.

Both workers meet at a rendezvous right after their first claim, so each is guaranteed work
before either can drain the queue: SQLite's lock is not fair, and on a loaded machine one
process could otherwise take all 400 rows before the other was scheduled (the race then
proved nothing). After the rendezvous they race freely over the remaining rows.
"""

from __future__ import annotations

import multiprocessing
from datetime import datetime, timezone

import pytest

from tests.db_support import open_store
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction, FileState, MediaFile, Upload

FILES = 400


def _fetch_worker(url: str, worker: str, out: "multiprocessing.Queue", first_claimed) -> None:
    """Claim files in small batches and mark them fetched until none are left."""
    store = open_store(url)
    got = []
    while True:
        batch = store.claim_files(FileState.DISCOVERED, 7, worker)
        if not got:
            first_claimed.wait(timeout=120)  # both hold their first batch before racing on
        if not batch:
            break
        for work in batch:
            got.append(work.page_id)
            store.mark_fetched(work.id, MediaFile(page_id=work.page_id, title=work.title))
    store.close()
    out.put((worker, got))


def _write_worker(url: str, worker: str, out: "multiprocessing.Queue", first_claimed) -> None:
    """Claim approved pairs and record them written until none are left."""
    from wikivel_bot.types import Written

    store = open_store(url)
    got = []
    while True:
        batch = store.claim_approved(5, worker)
        if not got:
            first_claimed.wait(timeout=120)  # both hold their first batch before racing on
        if not batch:
            break
        for edit in batch:
            got.append(edit.candidate_id)
            store.record_edit(edit.candidate_id, "b", Written(revid=1), datetime.now(timezone.utc))
    store.close()
    out.put((worker, got))


def _guarded(target, url: str, worker: str, out: "multiprocessing.Queue", start, first_claimed) -> None:
    """Start both workers together; report a crash through the queue instead of hanging."""
    import traceback

    try:
        open_store(url).close()  # pay the import and connect cost before the race
        start.wait(timeout=120)
        target(url, worker, out, first_claimed)
    except BaseException:  # noqa: BLE001 - everything must reach the parent
        out.put((worker, traceback.format_exc()))


def _run_pair(target, url: str) -> list:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start, first_claimed = ctx.Barrier(2), ctx.Barrier(2)
    procs = [ctx.Process(target=_guarded, args=(target, url, f"w{i}", out, start, first_claimed))
             for i in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    for worker, got in results:
        assert not isinstance(got, str), f"worker {worker} crashed:\n{got}"
    return [got for _, got in sorted(results)]


def _prepare(store: Store) -> None:
    store.enqueue(
        Upload(page_id=i, title=f"File:F{i}.jpg", timestamp=datetime(2026, 1, 1, tzinfo=timezone.utc))
        for i in range(1, FILES + 1)
    )


def test_two_processes_claim_files_disjointly(db_url: str, store: Store) -> None:
    if db_url == "sqlite://":
        pytest.skip("an in-memory SQLite database cannot be shared between processes")
    _prepare(store)
    first, second = _run_pair(_fetch_worker, db_url)
    assert not set(first) & set(second), "a file was claimed by both workers"
    assert sorted(first + second) == list(range(1, FILES + 1))
    assert first and second, "one worker got no work at all: the test proved nothing"
    assert store.counts()["files"]["fetched"] == FILES


def test_two_processes_claim_approved_pairs_disjointly(db_url: str, store: Store) -> None:
    if db_url == "sqlite://":
        pytest.skip("an in-memory SQLite database cannot be shared between processes")
    from tests.test_store import candidate

    _prepare(store)
    pairs = 0
    for work in store.claim_files(FileState.DISCOVERED, 60, "prep"):
        store.mark_fetched(work.id, MediaFile(page_id=work.page_id, title=work.title))
        store.save_candidates(work.id, [candidate("Q146"), candidate("Q144", rank=2)])
        for qid in ("Q146", "Q144"):
            store.record_decision(work.page_id, qid, DecisionAction.APPROVE, "Bob", "cli")
            pairs += 1
    first, second = _run_pair(_write_worker, db_url)
    assert not set(first) & set(second), "an approved pair was claimed by both writers"
    assert len(first) + len(second) == pairs
    assert first and second, "one writer got no work at all: the test proved nothing"
    assert store.counts()["candidates"]["written"] == pairs
