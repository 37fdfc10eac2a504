"""Approvals are never handled twice or left waiting at the edges of a write run.

A batch that outlives its lease is not handed to a second writer while the first still works
(leases are renewed), and when a lease *was* taken over, the first writer finds out right
before its edit and does not make it; whatever a run claimed and did not handle goes back at
once; a transient failure while re-reading the file is retried like one on the write. Real
pywikibot against the local test wiki; the queue's clock is moved by hand, and the points
where two writers interleave are fixed by hooks, not by timing.
"""

from __future__ import annotations

import threading

import pytest

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    ancestors_of,
    approve,
    clock,
    depicts_on_wiki,
    edit_rows,
    queue,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter, WriteRefused

BATCH_A = "b-20240502090000-aaaa"
BATCH_B = "b-20240502090500-bbbb"
LEASE_S = 900


def wbeditentities(wiki, page_id: int):
    return [r for r in wiki.requests if r.action == "wbeditentity" and r.params.get("id") == f"M{page_id}"]


class Interleave:
    """The queue as writer A sees it, with a hook run inside A's confirm of one pair: the
    moment between A's re-read and A's edit, where a second writer could slip in."""

    def __init__(self, store, on_confirm) -> None:
        self._store = store
        self._on_confirm = on_confirm

    def __getattr__(self, name):
        return getattr(self._store, name)

    def confirm_claim(self, candidate_id: int, worker: str) -> bool:
        hook, self._on_confirm = self._on_confirm, None
        if hook is not None:
            hook()
        return self._store.confirm_claim(candidate_id, worker)


def test_a_lease_taken_over_mid_batch_is_never_written_twice(wiki, site, queue, clock) -> None:
    """A stalls past its lease between re-read and edit; B takes the batch over and writes
    it. A's confirm fails, so each pair gets exactly one edit request and one `written` row."""
    approve(queue, 10004, "Q146")
    approve(queue, 10046, "Q146")
    writer_a = StatementWriter(site, BATCH_A, ancestors_of)
    writer_b = StatementWriter(site, BATCH_B, ancestors_of)
    taken_over = {}

    def b_takes_over() -> None:
        clock.advance(LEASE_S + 1)  # A stalled (a frozen VM, a long maxlag wait)
        taken_over["b"] = write_approved(queue, writer_b, batch_size=5, worker="B", clock=clock)

    a = write_approved(Interleave(queue, b_takes_over), writer_a, batch_size=5, worker="A",
                       clock=clock)

    assert taken_over["b"].written == 2
    assert (a.claimed, a.written, a.lost) == (2, 0, 2)
    assert "2 left to another writer" in "\n".join(a.lines())
    for page_id in (10004, 10046):
        assert len(wbeditentities(wiki, page_id)) == 1
        assert targets(depicts_on_wiki(wiki, page_id)) == ["Q146"]
    rows = edit_rows(queue)
    assert [(r["outcome"], r["batch_id"]) for r in rows] == [("written", BATCH_B)] * 2
    assert states(queue) == {(10004, "Q146"): "written", (10046, "Q146"): "written"}


def test_a_batch_that_outlives_its_lease_keeps_it(wiki, site, queue, clock) -> None:
    """The lease keeper renews A's claims while A works, so B gets nothing even though the
    batch has taken longer than the lease."""
    approve(queue, 10004, "Q146")
    approve(queue, 10046, "Q146")
    renewals = threading.Condition()
    renewed_from = []  # the clock when each finished renewal began
    real_renew = queue.renew_claims

    def renew(worker: str, **ids) -> int:
        began = clock.now
        n = real_renew(worker, **ids)
        with renewals:
            renewed_from.append(began)
            renewals.notify_all()
        return n

    queue.renew_claims = renew  # type: ignore[method-assign]
    seen_by_b = {}

    def a_is_slow() -> None:
        clock.advance(LEASE_S * 0.8)
        moved = clock.now
        # Wait for a renewal that began after the clock moved: one already under way when it
        # moved renews from the old time, and B would rightly take the claims.
        with renewals:
            assert renewals.wait_for(lambda: any(t >= moved for t in renewed_from), timeout=60), \
                "the lease keeper never renewed"
        clock.advance(LEASE_S * 0.8)  # 1.6 leases after the claim, 0.8 after the renewal
        seen_by_b["claimed"] = queue.claim_approved(5, "B")

    writer_a = StatementWriter(site, BATCH_A, ancestors_of)
    a = write_approved(Interleave(queue, a_is_slow), writer_a, batch_size=5, worker="A",
                       clock=clock, lease_renewal_s=0.05)

    assert seen_by_b["claimed"] == []
    assert (a.claimed, a.written, a.lost) == (2, 2, 0)
    assert [r["batch_id"] for r in edit_rows(queue)] == [BATCH_A, BATCH_A]


def test_a_run_that_stops_before_its_edits_releases_its_claims(wiki, site, queue, clock) -> None:
    from pywikibot import config

    approve(queue, 10004, "Q146")
    approve(queue, 10046, "Q146")
    writer = StatementWriter(site, BATCH_A, ancestors_of, dry_run=True)
    config.simulate = False  # the dry-run guard trips on the first pair
    with pytest.raises(WriteRefused):
        write_approved(queue, writer, batch_size=5, worker="A", clock=clock)
    assert queue.claims() == []  # nothing waits 15 minutes for a lease to expire
    assert [e.page_id for e in queue.claim_approved(5, "B")] == [10004, 10046]


@pytest.mark.parametrize("error", ["http500", "timeout"])
def test_a_transient_failure_of_the_re_read_is_retried(wiki, site, queue, clock, error,
                                                       monkeypatch) -> None:
    """The re-read of the file's latest revision fails (a 500, a timeout): the pair stays
    approved with a retry time, like a transient failure of the write itself."""
    from pywikibot import config

    from tests.late_answers import short_read_timeout_for

    monkeypatch.setattr(config, "max_retries", 1)
    monkeypatch.setattr(config, "retry_wait", 0)
    monkeypatch.setattr(config, "retry_max", 0)
    writer = StatementWriter(site, BATCH_A, ancestors_of)
    site.login()
    # A stalled answer comes only when the test releases it, after the client gave up; only
    # the stalled reads have a short read timeout.
    fault = wiki.faults.add("revisions", error, times=None, seconds=600)
    short_read_timeout_for(monkeypatch, fault)
    approve(queue, 10004, "Q146")

    first = write_approved(queue, writer, batch_size=5, worker="A", clock=clock)
    assert (first.retrying, first.failed) == ({"server": 1}, {})
    assert states(queue)[(10004, "Q146")] == "approved"

    wiki.faults.remove(fault)
    fault.release()
    clock.advance(24 * 3600)
    assert write_approved(queue, writer, batch_size=5, worker="A", clock=clock).written == 1
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]
