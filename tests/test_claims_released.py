"""Claims end with their work, on every backend: a decision clears the claim on its pair,
leases are renewed by id (what is in progress, nothing else), and a release that failed
because the database was unreachable is made again once it answers, without taking a row
another worker has claimed since. The queue's clock is moved by hand.
"""

from __future__ import annotations

from typing import Iterator, Tuple

import pytest
from sqlalchemy.engine import make_url

from tests.db_support import open_store, queue_url
from tests.tcp_proxy import TcpProxy
from tests.test_store import linked_file, upload
from tests.writer_support import Clock
from wikivel_bot.errors import WikivelError
from wikivel_bot.queue import migrate
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction, FileState

LEASE_S = 60


@pytest.fixture
def timed(db_url: str) -> Iterator[Tuple[Store, Clock]]:
    """The queue of ``db_url`` with a short lease, on a clock moved by hand."""
    clock = Clock()
    store = open_store(db_url, claim_lease_s=LEASE_S, clock=clock)
    if db_url.startswith("sqlite"):
        migrate.upgrade(store.engine)
    yield store, clock
    store.close()


def held(store: Store) -> set:
    return {(c["table"], c["worker"], c["count"]) for c in store.claims()}


@pytest.mark.parametrize("revoke", [DecisionAction.REJECT, DecisionAction.APPROVE_PROMINENT])
def test_a_decision_clears_the_claim_on_its_pair(timed, revoke: DecisionAction) -> None:
    """A writer holds the pair when a reviewer decides it again (reject; a switch to
    prominent); an undo approves it again: any writer can claim it at once."""
    store, _ = timed
    linked_file(store, 1, ["Q146"])
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Ann", "cli")
    (edit,) = store.claim_approved(5, "A")
    decision = store.record_decision(1, "Q146", revoke, "Ann", "web")
    assert held(store) == set(), "the decision left the writer's claim in place"
    assert not store.confirm_claim(edit.candidate_id, "A")  # A must not write it now
    store.undo_decision(decision)
    (again,) = store.claim_approved(5, "B")
    assert (again.candidate_id, again.prominent) == (edit.candidate_id, False)
    # The undo clears a claim too: B's, taken on the re-approved pair, ends with it.
    store.record_decision(1, "Q146", DecisionAction.REJECT, "Ann", "web")
    assert held(store) == set()


def test_leases_are_renewed_by_id_and_only_those(timed) -> None:
    """A worker holding two files and two pairs renews one of each: the other two expire
    and go to the next worker; the renewed ones stay its own."""
    store, clock = timed
    for page_id in (1, 2):
        linked_file(store, page_id, ["Q146"])
        store.record_decision(page_id, "Q146", DecisionAction.APPROVE, "Ann", "cli")
    store.enqueue([upload(3), upload(4)])
    files = store.claim_files(FileState.DISCOVERED, 5, "A")
    pairs = store.claim_approved(5, "A")
    assert len(files) == len(pairs) == 2

    clock.advance(LEASE_S * 0.8)
    assert store.renew_claims("A", file_ids=[files[0].id], candidate_ids=[pairs[0].candidate_id]) == 2
    assert store.renew_claims("B", file_ids=[files[1].id]) == 0, "renewed a row B does not hold"
    assert store.renew_claims("A") == 0  # nothing named, nothing renewed
    clock.advance(LEASE_S * 0.8)  # past the first lease, within the renewed one

    assert [w.id for w in store.claim_files(FileState.DISCOVERED, 5, "B")] == [files[1].id]
    assert [e.candidate_id for e in store.claim_approved(5, "B")] == [pairs[1].candidate_id]
    assert store.confirm_claim(pairs[0].candidate_id, "A")


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])  # the outage: a cut TCP connection
def test_a_failed_release_is_made_again_but_never_takes_a_newer_claim(
        backend: str, tmp_path, _scratch_databases) -> None:
    """The database goes away (a TCP proxy cut) before a worker gives back two files and a
    pair: the release fails and is owed. One file's lease runs out meanwhile and B claims
    it; once the database answers, the owed release frees the rest and leaves B's claim."""
    url = queue_url(backend, tmp_path, _scratch_databases)
    real = make_url(url)
    clock = Clock()
    direct = open_store(url, claim_lease_s=LEASE_S, clock=clock)
    with TcpProxy(real.host or "127.0.0.1", real.port or (5432 if backend == "postgresql" else 3306)) as proxy:
        store = open_store(real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False),
                           claim_lease_s=LEASE_S, clock=clock)
        try:
            linked_file(direct, 1, ["Q146"])
            direct.record_decision(1, "Q146", DecisionAction.APPROVE, "Ann", "cli")
            direct.enqueue([upload(2), upload(3)])
            files = store.claim_files(FileState.DISCOVERED, 5, "A")
            (pair,) = store.claim_approved(5, "A")
            proxy.cut()
            with pytest.raises(WikivelError):
                store.release_files([f.id for f in files], "A")
            with pytest.raises(WikivelError):
                store.release_candidates([pair.candidate_id], "A")
            assert store.owed_releases() == 2
            with pytest.raises(WikivelError):
                store.settle_releases()  # still down: still owed
            assert store.owed_releases() == 2

            clock.advance(LEASE_S + 5)  # a long outage: the leases ran out
            (taken,) = direct.claim_files(FileState.DISCOVERED, 1, "B")
            proxy.restore()
            assert store.settle_releases() == 2  # the other file and the pair
            assert store.owed_releases() == 0
            assert held(direct) == {("files", "B", 1)}
            assert taken.id == files[0].id
        finally:
            store.close()
            direct.close()

