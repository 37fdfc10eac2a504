"""Edits whose answer never came (``commons.writer.unsettled``, ``queue.store.sends``).

MediaWiki finishes a POST after the client hung up. Reproduced before: the write times out,
the reviewer rejects, the wiki then applies the edit, and the rejected statement stayed for
good (the pair was rejected, no follow-up was owed, ``revert --batch`` removed nothing). And a
writer killed after the wiki saved its grouped edit, then a reject of one pair: recovery
looked only at pairs still approved, so the rejected statement was never recorded nor
removed. Here each of those ends as the last human decision says, every bot revision audited.
"""

from __future__ import annotations


import pytest

from tests.late_answers import fast_retries, wait_for, short_read_timeout_for  # noqa: F401 - fast_retries is a fixture
from tests.test_writer_cli import bot_statements, child_env, db, kill_when, run_writer, start_writer  # noqa: F401
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    ancestors_of,
    approve,
    approve_all,
    audited_revisions,
    bot_revisions,
    clock,
    depicts_on_wiki,
    edit_rows,
    edits_of,
    queue,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.revert import StatementReverter, revert_batch
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.commons.writer.unsettled import SETTLE_HORIZON
from wikivel_bot.queue.revert_queries import RevertQueue
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-fa17"
LATER = "b-20240502100000-0b0b"



def run(queue, site, clock, batch=BATCH):
    writer = StatementWriter(site, batch, ancestors_of)
    return write_approved(queue, writer, batch_size=5, worker="test", clock=clock, max_attempts=5)



def timed_out_write(wiki, site, queue, clock, monkeypatch):
    """Approve one pair and write it: the wiki holds the edit unapplied, the client gives
    up, re-reads, sees nothing and records a transient failure; the send stays unsettled."""
    stalled = wiki.faults.add("wbeditentity", "timeout", times=1, seconds=600)
    short_read_timeout_for(monkeypatch, stalled)
    approve(queue, 10004, "Q146")
    counters = run(queue, site, clock)
    assert counters.retrying == {"server": 1} and wiki.edits == []
    (send,) = queue.unsettled_sends()
    assert (send.qid, send.batch_id, send.answered) == ("Q146", BATCH, False)
    return stalled, send


def test_an_edit_that_lands_after_a_reject_is_recorded_and_removed_again(
        wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    stalled, send = timed_out_write(wiki, site, queue, clock, monkeypatch)
    queue.record_decision(10004, "Q146", DecisionAction.REJECT, REVIEWER, "cli")
    stalled.release()  # the wiki now applies the edit the client gave up on
    wait_for(lambda: len(wiki.edits) == 1)
    (late,) = wiki.edits
    assert [s["id"] for s in depicts_on_wiki(wiki, 10004)] == [send.statement_id]

    counters = run(queue, site, clock, LATER)

    assert (counters.applied_late, counters.followed_up, counters.claimed) == (1, 1, 0)
    assert depicts_on_wiki(wiki, 10004) == []  # the last decision was a reject
    assert states(queue)[(10004, "Q146")] == "rejected"
    rows = edit_rows(queue)
    assert [(r["outcome"], r["batch_id"]) for r in rows] == [
        ("failed", BATCH), ("written", BATCH), ("reverted", BATCH)]
    assert (rows[1]["revid"], rows[1]["statement_id"]) == (late.new_revid, send.statement_id)
    assert queue.unsettled_sends() == []
    assert bot_revisions(wiki) == audited_revisions(queue)
    # The batch's statement is accounted for: revert removes nothing more.
    reverted = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)
    assert reverted.reverted == 0 and len(bot_revisions(wiki)) == 2


def test_an_edit_still_in_flight_stays_unsettled_and_is_shown(
        wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    stalled, send = timed_out_write(wiki, site, queue, clock, monkeypatch)
    queue.record_decision(10004, "Q146", DecisionAction.REJECT, REVIEWER, "cli")
    counters = run(queue, site, clock, LATER)  # the wiki still holds the edit
    assert (counters.unsettled, counters.applied_late, counters.not_applied) == (1, 0, 0)
    assert any("1 edits sent without an answer" in line for line in counters.lines())
    assert queue.unsettled_summary()["count"] == 1
    assert queue.unsettled_candidates([send.candidate_id]) == {send.candidate_id: send.sent_at}
    stalled.release()
    wait_for(lambda: len(wiki.edits) == 1)
    assert run(queue, site, clock, LATER).applied_late == 1
    assert depicts_on_wiki(wiki, 10004) == []
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_an_edit_never_applied_is_settled_after_the_horizon(
        wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    stalled, send = timed_out_write(wiki, site, queue, clock, monkeypatch)
    queue.record_decision(10004, "Q146", DecisionAction.REJECT, REVIEWER, "cli")
    # The wiki holds the request past the horizon (Wikimedia stops a POST long before).
    clock.advance(SETTLE_HORIZON.total_seconds() - 60)
    assert run(queue, site, clock, LATER).unsettled == 1
    clock.advance(120)
    counters = run(queue, site, clock, LATER)
    assert (counters.not_applied, counters.unsettled) == (1, 0)
    assert queue.unsettled_sends() == [] and wiki.edits == []
    assert bot_revisions(wiki) == audited_revisions(queue) == []


def test_a_dry_run_notes_no_send(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q146")
    writer = StatementWriter(site, BATCH, ancestors_of, dry_run=True)
    try:
        assert write_approved(queue, writer, batch_size=5, worker="test", clock=clock).dry_run == 1
    finally:
        from pywikibot import config

        config.simulate = False
    assert queue.unsettled_sends() == [] and queue.unsettled_summary()["count"] == 0


@pytest.mark.parametrize("rejected", [["Q144"], ["Q146", "Q144"]], ids=["one-of-two", "both"])
def test_killed_after_the_save_then_a_reject(wiki, db, tmp_path, rejected) -> None:  # noqa: F811
    store, url = db
    approve_all(store, 10046, ["Q146", "Q144"])
    held = wiki.faults.add("wbeditentity", "hold_response", title="M10046", seconds=120)
    env = child_env(wiki, tmp_path, url)
    proc = start_writer(env, tmp_path)
    kill_when(proc, lambda: len(edits_of(wiki, 10046)) == 1, "the held write to be saved")
    assert held.fired == 1 and edit_rows(store) == []
    (saved,) = edits_of(wiki, 10046)
    wiki.faults.clear()
    for qid in rejected:  # the reviewer is told it will be removed again
        recorded = store.record_decision(10046, qid, DecisionAction.REJECT, REVIEWER, "cli")
        assert recorded.in_flight == "removed again"

    out = run_writer(env, tmp_path)

    assert "nothing approved" not in out
    kept = [q for q in ("Q146", "Q144") if q not in rejected]
    assert sorted(targets(depicts_on_wiki(wiki, 10046))) == sorted(kept)
    for qid in kept:
        assert len(bot_statements(wiki, 10046, qid)) == 1
    outcomes = {}
    for row in edit_rows(store):
        outcomes.setdefault(row["qid"], []).append(row["outcome"])
    assert outcomes == {q: ["written", "reverted"] if q in rejected else ["written"] for q in ("Q146", "Q144")}
    assert {r["revid"] for r in edit_rows(store) if r["outcome"] == "written"} == {saved.new_revid}
    assert f"2 edits whose answer never came found applied late" in out
    assert bot_revisions(wiki) == audited_revisions(store)
    assert store.unsettled_sends() == []


def test_a_request_without_an_answer_is_one_line_not_a_traceback(wiki, db, tmp_path) -> None:  # noqa: F811
    """pywikibot logs the whole traceback of a request it could not use; the operator sees
    one line of it, and one line of what the writer does next."""
    store, url = db
    approve(store, 10004, "Q146")
    wiki.faults.add("wbeditentity", "http503", times=1)
    out = run_writer(child_env(wiki, tmp_path, url), tmp_path)
    assert "Traceback" not in out and 'File "' not in out
    assert "no usable answer from the wiki: " in out
    assert "outcome=no-answer" in out and "never sent again blindly" in out
    assert "1 failed, will retry" in out
    assert states(store)[(10004, "Q146")] == "approved"


def test_a_file_that_cannot_be_read_now_stays_unsettled(
        wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    stalled, send = timed_out_write(wiki, site, queue, clock, monkeypatch)
    queue.record_decision(10004, "Q146", DecisionAction.REJECT, REVIEWER, "cli")
    stalled.release()
    wait_for(lambda: len(wiki.edits) == 1)
    unreadable = wiki.faults.add("wbgetentities", "http503", times=None)
    counters = run(queue, site, clock, LATER)  # the run goes on; the send waits
    assert (counters.unsettled, counters.applied_late) == (1, 0)
    assert [s.send_id for s in queue.unsettled_sends()] == [send.send_id]
    wiki.faults.remove(unreadable)
    assert run(queue, site, clock, LATER).applied_late == 1
    assert depicts_on_wiki(wiki, 10004) == [] and bot_revisions(wiki) == audited_revisions(queue)
