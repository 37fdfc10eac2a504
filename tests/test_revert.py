"""``revert --batch`` removes only the bot's own statements of that batch, and only where
nobody changed them since."""

from __future__ import annotations

import pytest

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    Human,
    ancestors_of,
    approve,
    approve_all,
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
from wikivel_bot.commons.writer.revert import StatementReverter, revert_batch, revert_summary
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter, WriteRefused
from wikivel_bot.errors import NotFound
from wikivel_bot.queue.revert_queries import RevertQueue

BATCH = "b-20240502090000-0001"
OTHER = "b-20240502100000-0002"


def write_batch(queue, site, clock, batch):
    writer = StatementWriter(site, batch, ancestors_of)
    return write_approved(queue, writer, batch_size=10, worker="test", clock=clock)


def statement(wiki, page_id, qid):
    return next(s for s in depicts_on_wiki(wiki, page_id) if targets([s]) == [qid])


@pytest.fixture
def written(wiki, site, queue, clock):
    """Batch BATCH wrote five statements, batch OTHER one; then people edited some of them."""
    approve(queue, 10004, "Q146")  # stays as written: reverted
    approve(queue, 10004, "Q3736439", prominent=True)  # a human demotes it to normal
    approve(queue, 10043, "Q144")  # a human removes it
    approve(queue, 10046, "Q146")  # a human changes the item to Q144 (same GUID)
    approve(queue, 10036, "Q146")  # a human adds a qualifier
    assert write_batch(queue, site, clock, BATCH).written == 5
    approve(queue, 10045, "Q146")
    assert write_batch(queue, site, clock, OTHER).written == 1

    human = Human(wiki)

    def demote(data):
        for s in data["statements"]["P180"]:
            if s["mainsnak"]["datavalue"]["value"]["id"] == "Q3736439":
                s["rank"] = "normal"

    def drop(data):
        data["statements"]["P180"] = []

    def retarget(data):
        value = data["statements"]["P180"][0]["mainsnak"]["datavalue"]["value"]
        value.update({"numeric-id": 144, "id": "Q144"})

    def qualify(data):
        data["statements"]["P180"][0]["qualifiers"] = {
            "P2048": [{"snaktype": "somevalue", "property": "P2048", "hash": "0" * 40}]}
        data["statements"]["P180"][0]["qualifiers-order"] = ["P2048"]

    human.change(10004, demote)
    human.change(10043, drop)
    human.change(10046, retarget)
    human.change(10036, qualify)
    return queue


def test_revert_removes_only_unchanged_statements_of_the_batch(wiki, site, written, clock) -> None:
    queue = written
    guid = statement(wiki, 10004, "Q146")["id"]
    other_before = depicts_on_wiki(wiki, 10045)
    fixture_before = depicts_on_wiki(wiki, 10001)
    writes_before, rows_before = wiki.write_count(), edit_rows(queue)

    # A dry run first: it sends nothing and records nothing.
    dry = revert_batch(RevertQueue(queue), StatementReverter(site, dry_run=True), BATCH)
    assert dry.dry_run == 1 and dry.reverted == 0 and sum(dry.left_alone.values()) == 4
    assert wiki.write_count() == writes_before and edit_rows(queue) == rows_before
    from pywikibot import config

    config.simulate = False

    counters = revert_batch(RevertQueue(queue), StatementReverter(site, tags=["wikivel-bot"]), BATCH)

    (request,) = wiki.recorder.write_requests()[writes_before:]
    assert request.action == "wbremoveclaims" and request.params["claim"] == guid
    assert request.params["summary"] == revert_summary("Q146", BATCH)
    assert BATCH in request.params["summary"] and request.params["tags"] == "wikivel-bot"
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q3736439"]  # the demoted one stays
    assert targets(depicts_on_wiki(wiki, 10046)) == ["Q144"]  # the retargeted one stays
    assert len(depicts_on_wiki(wiki, 10036)) == 1  # the qualified one stays
    assert depicts_on_wiki(wiki, 10045) == other_before  # another batch
    assert depicts_on_wiki(wiki, 10001) == fixture_before  # never the bot's

    assert counters.reverted == 1
    assert sum(counters.left_alone.values()) == 4
    assert states(queue)[(10004, "Q146")] == "reverted"
    for key in [(10004, "Q3736439"), (10043, "Q144"), (10046, "Q146"), (10036, "Q146"), (10045, "Q146")]:
        assert states(queue)[key] == "written"
    rows = [r for r in edit_rows(queue) if r["outcome"] != "written"]
    reverted = [r for r in rows if r["outcome"] == "reverted"]
    assert [(r["page_id"], r["statement_id"], r["batch_id"]) for r in reverted] == [(10004, guid, BATCH)]
    assert reverted[0]["revid"] == wiki.edits[-1].new_revid
    reasons = {r["page_id"]: r["error"] for r in rows if r["outcome"] == "skipped"}
    assert reasons[10004] == "revert: changed by someone else: rank is normal, the bot wrote preferred"
    assert reasons[10043].startswith("revert: statement no longer present")
    assert reasons[10046] == "revert: changed by someone else: now depicts Q144, the bot wrote Q146"
    assert reasons[10036] == "revert: changed by someone else: qualifiers or references were added"

    # Again: nothing more is removed, the reverted pair is not looked at twice.
    again = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)
    assert again.reverted == 0 and sum(again.left_alone.values()) == 4
    assert wiki.write_count() == writes_before + 1


def test_revert_dry_run_cannot_be_bypassed(wiki, site, queue, clock) -> None:
    from pywikibot import config

    approve(queue, 10004, "Q146")
    write_batch(queue, site, clock, BATCH)
    reverter = StatementReverter(site, dry_run=True)
    config.simulate = False
    writes_before = wiki.write_count()
    with pytest.raises(WriteRefused):
        revert_batch(RevertQueue(queue), reverter, BATCH)
    assert wiki.write_count() == writes_before
    assert states(queue)[(10004, "Q146")] == "written"


def test_reverting_a_dry_run_batch_says_it_was_a_dry_run(wiki, site, queue, clock) -> None:
    """A dry run prints a batch id like a real write; reverting it must say nothing was
    written, not "0 statements removed" as if the revert had failed."""
    from pywikibot import config

    approve(queue, 10004, "Q146")
    approve(queue, 10001, "Q146")  # already depicted: skipped, in the dry run too
    dry = StatementWriter(site, BATCH, ancestors_of, dry_run=True)
    assert write_approved(queue, dry, batch_size=10, worker="dry", clock=clock).dry_run == 1
    config.simulate = False  # the revert is a later process, not a dry run itself
    rows_before = edit_rows(queue)

    counters = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)
    assert counters.simulated == 1 and counters.reverted == 0
    assert counters.lines() == [f"batch {BATCH}", "it was a dry run: its 1 statement was only simulated and "
                                "nothing was written to the wiki, so there is nothing to revert"]
    assert wiki.write_count() == 0 and edit_rows(queue) == rows_before
    assert states(queue)[(10004, "Q146")] == "approved"
    # A real batch whose statements are all reverted already is not called a dry run.
    real = StatementWriter(site, OTHER, ancestors_of)
    assert write_approved(queue, real, batch_size=10, worker="real", clock=clock).written == 1
    assert revert_batch(RevertQueue(queue), StatementReverter(site), OTHER).reverted == 1
    again = revert_batch(RevertQueue(queue), StatementReverter(site), OTHER)
    assert again.simulated == 0 and "0 statements removed" in again.lines()


def test_an_unknown_batch_is_an_error(queue) -> None:
    with pytest.raises(NotFound, match="b-nope"):
        RevertQueue(queue).written_statements("b-nope")


def test_revert_removes_a_prominent_statement_left_as_written(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q3736439", prominent=True)
    write_batch(queue, site, clock, BATCH)
    assert statement(wiki, 10004, "Q3736439")["rank"] == "preferred"
    counters = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)
    assert counters.reverted == 1 and depicts_on_wiki(wiki, 10004) == []
    assert edit_rows(queue)[-1]["outcome"] == "reverted"


def test_revert_of_a_group_edit_leaves_the_statement_a_human_added_since(wiki, site, queue, clock) -> None:
    approve_all(queue, 10004, ["Q146", "Q144", "Q3736439"], prominent=["Q3736439"])
    assert write_batch(queue, site, clock, BATCH).written == 3
    (group_edit,) = wiki.edits
    guids = sorted(s["id"] for s in depicts_on_wiki(wiki, 10004))

    def add_fourth(data):
        data["statements"]["P180"].append({
            "mainsnak": {"snaktype": "value", "property": "P180",
                         "datavalue": {"value": {"entity-type": "item", "numeric-id": 5, "id": "Q5"},
                                       "type": "wikibase-entityid"}},
            "type": "statement", "id": "M10004$00000000-0000-4000-8000-000000000004", "rank": "normal"})

    Human(wiki).change(10004, add_fourth)
    writes_before = wiki.write_count()

    counters = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)

    assert counters.reverted == 3 and sum(counters.left_alone.values()) == 0
    (request,) = wiki.recorder.write_requests()[writes_before:]  # one removal edit for the group
    assert request.action == "wbremoveclaims" and sorted(request.params["claim"].split("|")) == guids
    assert request.params["summary"] == revert_summary(["Q146", "Q144", "Q3736439"], BATCH)
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q5"]  # the human's statement stays
    rows = [r for r in edit_rows(queue) if r["outcome"] == "reverted"]
    assert sorted(r["statement_id"] for r in rows) == guids
    assert {r["revid"] for r in rows} == {wiki.edits[-1].new_revid} != {group_edit.new_revid}
    assert set(states(queue).values()) == {"reverted"}


def test_revert_finds_a_statement_whose_pair_was_rejected_while_it_was_written(wiki, site, queue,
                                                                               clock) -> None:
    """The reject arrived while the edit was in flight: the edit is in the audit, the pair
    stays rejected, and `revert --batch` removes the statement all the same."""
    from wikivel_bot.types import DecisionAction

    approve(queue, 10004, "Q146")
    (edit,) = queue.claim_approved(5, "writer")
    outcome = StatementWriter(site, BATCH, ancestors_of).write(edit)
    queue.record_decision(10004, "Q146", DecisionAction.REJECT, "Patroller Pat", "web")
    queue.record_edit(edit.candidate_id, BATCH, outcome, clock(), worker="writer")
    assert states(queue)[(10004, "Q146")] == "rejected"

    counters = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)
    assert counters.reverted == 1 and depicts_on_wiki(wiki, 10004) == []
    assert states(queue)[(10004, "Q146")] == "rejected"
    assert [r["outcome"] for r in edit_rows(queue)] == ["written", "reverted"]
    assert revert_batch(RevertQueue(queue), StatementReverter(site), BATCH).reverted == 0


def test_many_statements_of_one_file_are_removed_in_edits_whose_comment_fits() -> None:
    from types import SimpleNamespace

    from wikivel_bot.commons.writer.revert import removal_comment_room, revert_groups

    rows = [SimpleNamespace(page_id=10004, qid=f"Q{1000000 + i}") for i in range(12)]
    rows.append(SimpleNamespace(page_id=10046, qid="Q146"))
    groups = revert_groups(rows, BATCH)
    assert [r for g in groups for r in g] == rows  # every statement, each once, in order
    assert len(groups) > 2 and groups[-1] == [rows[-1]]  # another file: its own edit
    for group in groups:
        assert len({r.page_id for r in group}) == 1
        summary = revert_summary([r.qid for r in group], BATCH)
        assert len(summary) + removal_comment_room([r.qid for r in group]) <= 500


@pytest.fixture
def read_timeout(monkeypatch: pytest.MonkeyPatch):
    """``read_timeout(fault)``: pywikibot gives up after 0.5 s on the answer the wiki holds
    (that one only) and would resend at once (``max_retries`` 3, no wait)."""
    from pywikibot import config

    from tests.late_answers import short_read_timeout_for

    monkeypatch.setattr(config, "max_retries", 3)
    monkeypatch.setattr(config, "retry_wait", 0)
    monkeypatch.setattr(config, "retry_max", 0)
    return lambda fault: short_read_timeout_for(monkeypatch, fault)


def test_revert_sends_once_and_records_an_applied_removal_whose_answer_was_lost(
        wiki, site, queue, clock, read_timeout) -> None:
    """pywikibot's removeClaims resent the removal after a read timeout; Wikibase answered the
    resend (stale baserevid, statement gone) with an edit conflict, and the removal that was
    applied was recorded as failed. Sent once, the re-read settles it."""
    approve_all(queue, 10004, ["Q146", "Q144"])
    assert write_batch(queue, site, clock, BATCH).written == 2
    held = wiki.faults.add("wbremoveclaims", "hold_response", title="M10004", seconds=120)
    read_timeout(held)

    counters = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)

    assert held.fired == 1 and len(wiki.recorder.api_requests("wbremoveclaims")) == 1  # never resent
    assert depicts_on_wiki(wiki, 10004) == []
    (removal,) = [e for e in wiki.edits if e.action == "wbremoveclaims"]
    assert counters.reverted == 2 and not counters.failed and not counters.left_alone
    reverted = [r for r in edit_rows(queue) if r["outcome"] == "reverted"]
    assert {(r["qid"], r["revid"]) for r in reverted} == {("Q146", removal.new_revid),
                                                         ("Q144", removal.new_revid)}
    assert {states(queue)[(10004, q)] for q in ("Q146", "Q144")} == {"reverted"}
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_revert_without_an_answer_and_nothing_applied_is_a_retry_not_a_resend(
        wiki, site, queue, clock, read_timeout) -> None:
    approve(queue, 10004, "Q146")
    assert write_batch(queue, site, clock, BATCH).written == 1
    # The wiki stalls before removing anything (until the test ends).
    stalled = wiki.faults.add("wbremoveclaims", "timeout", title="M10004", seconds=120, times=1)
    read_timeout(stalled)

    first = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)

    assert stalled.fired == 1 and len(wiki.recorder.api_requests("wbremoveclaims")) == 1
    assert first.reverted == 0 and sum(first.failed.values()) == 1
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"] and states(queue)[(10004, "Q146")] == "written"
    again = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)
    assert again.reverted == 1 and depicts_on_wiki(wiki, 10004) == []
    assert bot_revisions(wiki) == audited_revisions(queue)
