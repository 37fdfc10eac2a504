"""The kill switch is read before every edit the writer makes, not only at a daemon's round
(``stop_page.StopGuard``), and one file gets at most a few bot edits an hour
(``edit_budget``): what cannot go now waits, unattempted, for the next run."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from sqlalchemy import select

from tests.test_daemon import STOP_PAGE, set_stop_page
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    ancestors_of,
    approve,
    audited_revisions,
    bot_revisions,
    clock,
    depicts_on_wiki,
    edit_rows,
    queue,
    site,
    states,
    wiki,
)
from wikivel_bot.commons.writer.edit_budget import MAX_EDITS_PER_FILE, WINDOW_S, EditBudget
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.commons.writer.stop_page import StopGuard, WritingPaused, check_stop_page
from wikivel_bot.queue.tables import candidates, files
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-fa17"


class Ticks:
    """The writer's monotonic clock, moved by hand (the edit budget's window)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pair_rows(queue) -> Dict[int, Dict[str, Any]]:
    query = (select(files.c.page_id, candidates.c.state, candidates.c.attempts, candidates.c.claimed_by)
             .join(files, files.c.id == candidates.c.file_id))
    with queue.engine.connect() as conn:
        return {r.page_id: dict(r._mapping) for r in conn.execute(query)}


def writer_for(site, stop=None, ticks=None) -> StatementWriter:
    kwargs: Dict[str, Any] = {}
    if stop is not None:
        kwargs["stop"] = stop
    if ticks is not None:
        kwargs["monotonic"] = ticks
    return StatementWriter(site, BATCH, ancestors_of, **kwargs)


def run(queue, writer, clock):
    return write_approved(queue, writer, batch_size=5, worker="test", clock=clock, max_attempts=5)


def test_a_stop_between_two_files_stops_the_second_edit(wiki, site, queue, clock) -> None:
    set_stop_page(wiki, "run")
    approve(queue, 10004, "Q146")
    approve(queue, 10046, "Q146")
    reads: List[int] = []

    def check(site_: Any, title: str, run_text: str):
        if wiki.edits and len(reads) == 1:  # someone says stop once the first edit is made
            set_stop_page(wiki, "stop: the bot misbehaves")
        reads.append(len(wiki.edits))
        return check_stop_page(site_, title, run_text)

    writer = writer_for(site, StopGuard(site, STOP_PAGE, "run", check=check))
    with pytest.raises(WritingPaused, match="stop: the bot misbehaves"):
        run(queue, writer, clock)
    assert reads == [0, 1]  # read right before each edit
    assert len(wiki.edits) == 1
    rows = pair_rows(queue)
    (written,) = [p for p, r in rows.items() if r["state"] == "written"]
    (waiting,) = [p for p in rows if p != written]
    # The pair not sent is neither failed nor held: approved, unclaimed, no attempt used.
    assert {k: rows[waiting][k] for k in ("state", "attempts", "claimed_by")} == {
        "state": "approved", "attempts": 0, "claimed_by": None}
    assert [r["outcome"] for r in edit_rows(queue)] == ["written"]
    assert bot_revisions(wiki) == audited_revisions(queue)

    set_stop_page(wiki, "run")
    assert run(queue, writer_for(site, StopGuard(site, STOP_PAGE, "run")), clock).written == 1


def rejected_in_flight(queue, monkeypatch, then=lambda: None) -> None:
    """The reviewer rejects 10004 Q146 right after the writer's last check: the edit goes,
    and the pair is owed a follow-up (made in the same run, after the batch)."""
    confirm = queue.confirm_claim
    calls: List[int] = []

    def still_ours(candidate_id: int, worker: str) -> bool:
        ok = confirm(candidate_id, worker)
        calls.append(candidate_id)
        if len(calls) == 2:  # the last check passed: the request leaves now
            queue.record_decision(10004, "Q146", DecisionAction.REJECT, REVIEWER, "cli")
            then()
        return ok

    monkeypatch.setattr(queue, "confirm_claim", still_ours)


def test_a_follow_up_obeys_the_stop_page(wiki, site, queue, clock, monkeypatch) -> None:
    set_stop_page(wiki, "run")
    approve(queue, 10004, "Q146")
    rejected_in_flight(queue, monkeypatch, then=lambda: set_stop_page(wiki, "stop"))
    guard = StopGuard(site, STOP_PAGE, "run")
    with pytest.raises(WritingPaused):
        run(queue, writer_for(site, guard), clock)
    assert len(depicts_on_wiki(wiki, 10004)) == 1 and len(wiki.edits) == 1
    (owed,) = queue.owed_follow_ups()
    assert owed.qid == "Q146"
    assert queue.claim_follow_ups(5, "someone else")  # given back, not kept by the stopped run
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_a_file_that_had_its_edits_waits_for_the_next_hour(wiki, site, queue, clock) -> None:
    ticks = Ticks()
    writer = writer_for(site, ticks=ticks)
    for _ in range(MAX_EDITS_PER_FILE - 1):
        writer.budget.spend(10004)  # four edits already made this hour: one left
    approve(queue, 10004, "Q146")
    approve(queue, 10046, "Q146")
    counters = run(queue, writer, clock)
    # A group edit needs two (its own and a possible twin removal): 10004 waits, 10046 goes.
    assert (counters.written, counters.deferred) == (1, 1)
    assert any("1 left for the next run" in line for line in counters.lines())
    assert depicts_on_wiki(wiki, 10004) == [] and len(depicts_on_wiki(wiki, 10046)) == 1
    assert {k: pair_rows(queue)[10004][k] for k in ("state", "attempts", "claimed_by")} == {
        "state": "approved", "attempts": 0, "claimed_by": None}
    ticks.now += WINDOW_S
    assert run(queue, writer, clock).written == 1
    assert states(queue)[(10004, "Q146")] == "written"
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_a_follow_up_waits_when_the_file_had_its_edits(wiki, site, queue, clock, monkeypatch) -> None:
    ticks = Ticks()
    writer = writer_for(site, ticks=ticks)

    def spend_the_rest() -> None:
        while writer.budget.left(10004):
            writer.budget.spend(10004)

    approve(queue, 10004, "Q146")
    rejected_in_flight(queue, monkeypatch, then=spend_the_rest)
    counters = run(queue, writer, clock)
    assert (counters.written, counters.followed_up) == (1, 0)
    assert len(queue.owed_follow_ups()) == 1 and len(depicts_on_wiki(wiki, 10004)) == 1
    ticks.now += WINDOW_S
    assert run(queue, writer, clock).followed_up == 1
    assert depicts_on_wiki(wiki, 10004) == []
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_the_budget_counts_within_its_window() -> None:
    ticks = Ticks()
    budget = EditBudget(max_edits=2, window_s=10, monotonic=ticks)
    budget.spend(1)
    ticks.now += 5
    budget.spend(1)
    assert (budget.left(1), budget.left(2), budget.allows(1)) == (0, 2, False)
    ticks.now += 5  # the first one leaves the window
    assert budget.left(1) == 1 and budget.allows(1) and not budget.allows(1, 2)


def test_a_revert_obeys_the_stop_page(wiki, site, queue, clock) -> None:
    from wikivel_bot.commons.writer.revert import StatementReverter, revert_batch
    from wikivel_bot.queue.revert_queries import RevertQueue

    set_stop_page(wiki, "run")
    approve(queue, 10004, "Q146")
    guard = StopGuard(site, STOP_PAGE, "run")
    assert run(queue, writer_for(site, guard), clock).written == 1
    set_stop_page(wiki, "stop")
    with pytest.raises(WritingPaused):
        revert_batch(RevertQueue(queue), StatementReverter(site, stop=guard), BATCH)
    assert len(depicts_on_wiki(wiki, 10004)) == 1 and len(wiki.edits) == 1
    assert [r["outcome"] for r in edit_rows(queue)] == ["written"]  # nothing recorded as failed
    set_stop_page(wiki, "run")
    assert revert_batch(RevertQueue(queue), StatementReverter(site, stop=guard), BATCH).reverted == 1
    assert depicts_on_wiki(wiki, 10004) == [] and bot_revisions(wiki) == audited_revisions(queue)
