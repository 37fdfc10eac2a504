"""A timed-out edit that the wiki applies only after the writer's re-read: whichever of it and
the retry lands second is refused, never a second statement, and the pair is recorded once
with the revision that added it. What refuses it depends on the file, as on Wikibase: on a
file with structured data the retry carries the same statement GUID
(``edit_group.statement_guid``), which the latest revision already has, an edit conflict; on
a file that had none, the second edit's base revision has no MediaInfo, Wikibase creates the
entity afresh and cannot save it over the one the first edit made (``failed-save``, "Can't
create slot, it already exists"). A pair written, reverted and approved again is a new
statement."""

from __future__ import annotations


import pytest

from tests.late_answers import fast_retries, wait_for, short_read_timeout_for  # noqa: F401 - fast_retries is a fixture
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
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
    targets,
    wiki,
)
from wikivel_bot.commons.writer.edit_group import statement_guid
from wikivel_bot.commons.writer.revert import StatementReverter, revert_batch
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.queue.revert_queries import RevertQueue
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-fa17"
RETRY = "b-20240502100000-0b0b"
# (file, what the wiki answers the edit that lands second): Village church.png has no
# structured data, Mallard on pond.jpg has (one P180 statement, Q25348).
FILES = [(10004, "failed-save"), (10005, "editconflict")]



def run(queue, site, clock, batch=BATCH):
    writer = StatementWriter(site, batch, ancestors_of)
    return write_approved(queue, writer, batch_size=5, worker="test", clock=clock, max_attempts=5)



def ours(wiki, page_id):
    """The bot's Q146 statements on the file."""
    return [s for s in depicts_on_wiki(wiki, page_id) if targets([s]) == ["Q146"]]


def timed_out_first_edit(wiki, site, queue, clock, monkeypatch, page_id=10004):
    """Approve one pair and write it: the wiki holds the edit unapplied until released,
    the client gives up, re-reads, sees nothing and records a transient failure."""
    stalled = wiki.faults.add("wbeditentity", "timeout", times=1, seconds=600)
    short_read_timeout_for(monkeypatch, stalled)
    approve(queue, page_id, "Q146")
    assert run(queue, site, clock).retrying == {"server": 1}
    assert stalled.holding.is_set() and wiki.edits == []
    (first,) = [r for r in wiki.requests if r.action == "wbeditentity"]
    clock.advance(3600)
    return stalled, first


@pytest.mark.parametrize("page_id, refused", FILES)
def test_a_first_edit_applied_after_the_retrys_re_read_is_not_written_twice(
        page_id, refused, wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    stalled, first = timed_out_first_edit(wiki, site, queue, clock, monkeypatch, page_id)
    confirm = queue.confirm_claim

    def still_ours(candidate_id: int, worker: str) -> bool:
        # Asked after the retry re-read the file: the wiki now applies the first edit.
        if not stalled.released.is_set():
            stalled.release()
            wait_for(lambda: len(wiki.edits) == 1)
        return confirm(candidate_id, worker)

    monkeypatch.setattr(queue, "confirm_claim", still_ours)
    assert run(queue, site, clock).written == 1

    (late,) = wiki.edits  # the first request; the retry's own was refused
    guid = late.data["claims"]["P180"][0]["id"]
    assert [s["id"] for s in ours(wiki, page_id)] == [guid]
    sends = [r for r in wiki.requests if r.action == "wbeditentity"]
    # The retry was refused; on the file without structured data the writer re-read it after
    # the failed save and found its statement there: nothing was sent a third time.
    assert [r.error for r in sends] == [None, refused]
    assert sends[1].params["data"] == first.params["data"]  # the same statement, the same GUID
    rows = edit_rows(queue)
    assert [r["outcome"] for r in rows] == ["failed", "written"]
    assert (rows[-1]["revid"], rows[-1]["statement_id"]) == (late.new_revid, guid)
    assert bot_revisions(wiki) == audited_revisions(queue) == [late.new_revid]


@pytest.mark.parametrize("page_id, refused", FILES)
def test_a_first_edit_applied_after_the_retry_is_refused_by_the_wiki(
        page_id, refused, wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    stalled, first = timed_out_first_edit(wiki, site, queue, clock, monkeypatch, page_id)
    assert run(queue, site, clock).written == 1
    (retry,) = wiki.edits

    stalled.release()  # the wiki now gets to the first edit: its statement is already there
    wait_for(lambda: first.error is not None or len(wiki.edits) > 1)  # refused, or applied
    assert first.error == refused and wiki.edits == [retry]
    guid = retry.data["claims"]["P180"][0]["id"]
    assert [s["id"] for s in ours(wiki, page_id)] == [guid]
    assert len(depicts_on_wiki(wiki, page_id)) == (1 if page_id == 10004 else 2)
    rows = edit_rows(queue)
    assert [r["outcome"] for r in rows] == ["failed", "written"]
    assert (rows[-1]["revid"], rows[-1]["statement_id"]) == (retry.new_revid, guid)
    assert bot_revisions(wiki) == audited_revisions(queue) == [retry.new_revid]


def test_a_reverted_pair_approved_again_is_a_new_statement(wiki, site, queue, clock) -> None:
    """Rejected while its edit was in flight, reverted, then the reject undone: the pair is
    written again with a new GUID, which `revert` can remove again."""
    approve(queue, 10004, "Q146")
    (edit,) = queue.claim_approved(5, "test")
    outcome = StatementWriter(site, BATCH, ancestors_of).write(edit)
    reject = queue.record_decision(10004, "Q146", DecisionAction.REJECT, "Patroller Pat", "web")
    queue.record_edit(edit.candidate_id, BATCH, outcome, clock(), worker="test")
    assert revert_batch(RevertQueue(queue), StatementReverter(site), BATCH).reverted == 1
    queue.undo_decision(int(reject))
    assert states(queue)[(10004, "Q146")] == "approved"

    assert run(queue, site, clock, RETRY).written == 1
    first, again = [r["statement_id"] for r in edit_rows(queue) if r["outcome"] == "written"]
    assert first == statement_guid("M10004", "Q146", edit.candidate_id, 0)
    assert again == statement_guid("M10004", "Q146", edit.candidate_id, 1) != first
    assert [s["id"] for s in depicts_on_wiki(wiki, 10004)] == [again]
    assert revert_batch(RevertQueue(queue), StatementReverter(site), RETRY).reverted == 1
    assert depicts_on_wiki(wiki, 10004) == []
    assert bot_revisions(wiki) == audited_revisions(queue)
