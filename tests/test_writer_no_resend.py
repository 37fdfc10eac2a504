"""A write request is never resent blindly, a stale check is made again, and a statement
this bot added twice is removed again.

Against the Wikibase-like test wiki (a change on a stale ``baserevid`` is patched onto the
latest revision, so a blind resend of an applied edit would add its statements twice): a
held answer past the read timeout is settled by re-reading the file for the statement
GUIDs; a ``maxlag`` answer is waited out and followed by the last check again; a writer whose
last check is older than ``fresh_s`` checks again; a writer that sends after another writer
took its pair over is refused (no second statement): an edit conflict over the same statement
GUID on a file with structured data, a failed save on a file that had none (Wikibase creates
its entity afresh and cannot save it over the one made since); a statement of the item
someone added after the re-read makes the writer remove its own again, found by re-reading
the file (the answer shows the entity as built on the base revision), or, on a file that had
no structured data, makes its save fail, and the writer's second try finds the item present.
Real pywikibot over HTTP, a real SQLite queue; moments fixed by hooks, never by timing.
"""

from __future__ import annotations

import pytest

from tests.late_answers import short_read_timeout_for
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
    queue,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-0a0a"
FILE = 10004
# A file with structured data (one P180 statement, Q25348): Mallard on pond.jpg.
WITH_SDC = 10005


def sent(wiki, action="wbeditentity"):
    return [r for r in wiki.requests if r.action == action]


class OnConfirm:
    """The queue as the writer sees it; ``hook(n)`` runs after its n-th ``confirm_claim``."""

    def __init__(self, store, hook) -> None:
        self._store, self._hook, self.calls = store, hook, 0

    def __getattr__(self, name):
        return getattr(self._store, name)

    def confirm_claim(self, candidate_id, worker):
        ok = self._store.confirm_claim(candidate_id, worker)
        self.calls += 1
        self._hook(self.calls)
        return ok


@pytest.fixture
def read_timeout(monkeypatch: pytest.MonkeyPatch):
    """``read_timeout(fault)``: pywikibot gives up after 0.5 s on the answer the wiki holds
    (only that one: every other request has all the time it needs) and would resend at once."""
    from pywikibot import config

    monkeypatch.setattr(config, "max_retries", 3)
    monkeypatch.setattr(config, "retry_wait", 0)
    monkeypatch.setattr(config, "retry_max", 0)
    return lambda fault: short_read_timeout_for(monkeypatch, fault)


def test_a_held_answer_past_the_read_timeout_is_settled_by_the_guids_not_resent(
        wiki, site, queue, clock, read_timeout) -> None:
    approve_all(queue, FILE, ["Q146", "Q144"], prominent=["Q144"])
    held = wiki.faults.add("wbeditentity", "hold_response", title=f"M{FILE}", seconds=120)
    read_timeout(held)

    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    assert held.fired == 1 and len(sent(wiki)) == 1  # sent once, never resent
    assert sorted(targets(depicts_on_wiki(wiki, FILE))) == ["Q144", "Q146"]  # each once
    (edit,) = wiki.edits
    rows = edit_rows(queue)
    assert [(r["qid"], r["outcome"], r["revid"]) for r in rows] == [
        ("Q146", "written", edit.new_revid), ("Q144", "written", edit.new_revid)]  # recorded once
    guids = {targets([s])[0]: s["id"] for s in depicts_on_wiki(wiki, FILE)}
    assert {r["qid"]: r["statement_id"] for r in rows} == guids
    assert counters.written == 2 and set(states(queue).values()) == {"written"}
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_a_held_answer_of_an_edit_that_was_not_applied_is_a_retry_not_a_resend(
        wiki, site, queue, clock, read_timeout) -> None:
    approve(queue, FILE, "Q146")
    # The wiki stalls before saving (until the test ends): nothing is applied meanwhile.
    stalled = wiki.faults.add("wbeditentity", "timeout", title=f"M{FILE}", seconds=120)
    read_timeout(stalled)

    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    assert stalled.fired == 1 and len(sent(wiki)) == 1 and wiki.edits == []
    assert counters.retrying == {"server": 1} and states(queue)[(FILE, "Q146")] == "approved"
    clock.advance(3600)
    assert write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                          worker="test", clock=clock).written == 1
    assert targets(depicts_on_wiki(wiki, FILE)) == ["Q146"] and len(sent(wiki)) == 2
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_a_maxlag_answer_is_waited_out_and_the_last_check_made_again(wiki, site, queue, clock,
                                                                      monkeypatch) -> None:
    approve_all(queue, FILE, ["Q146", "Q144"])
    lagged = wiki.faults.add("wbeditentity", "maxlag", title=f"M{FILE}", lag=7)
    waits = []

    def lag(seconds):  # the lag passes without sleeping; a reviewer says no meanwhile
        waits.append(seconds)
        queue.record_decision(FILE, "Q144", DecisionAction.REJECT, REVIEWER, "web")

    monkeypatch.setattr(site.throttle, "lag", lag)
    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    assert lagged.fired == 1 and waits == [7] and len(sent(wiki)) == 2
    assert targets(depicts_on_wiki(wiki, FILE)) == ["Q146"]  # the second send left Q144 out
    assert (counters.written, counters.lost, counters.followed_up) == (1, 1, 0)
    assert states(queue)[(FILE, "Q144")] == "rejected"
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_a_last_check_older_than_fresh_s_is_made_again(wiki, site, queue, clock) -> None:
    approve(queue, FILE, "Q146")
    now = [0.0]

    def frozen_after_the_last_check(calls: int) -> None:
        if calls == 2:  # the last check passed; the process stops for a while, and meanwhile
            now[0] += 1000.0
            queue.record_decision(FILE, "Q146", DecisionAction.REJECT, REVIEWER, "web")

    store = OnConfirm(queue, frozen_after_the_last_check)
    writer = StatementWriter(site, BATCH, ancestors_of, fresh_s=60, monotonic=lambda: now[0])
    counters = write_approved(store, writer, batch_size=5, worker="test", clock=clock)

    assert store.calls == 3 and sent(wiki) == [] and wiki.edits == []
    assert counters.lost == 1 and states(queue)[(FILE, "Q146")] == "rejected"


@pytest.mark.parametrize("page_id, refused", [(FILE, "failed-save"), (WITH_SDC, "editconflict")])
def test_a_writer_that_sends_after_a_takeover_adds_no_second_statement(page_id, refused, wiki, site, queue,
                                                                        clock) -> None:
    """Writer A passes its last check and stalls; its lease runs out, writer B takes the pair
    over and writes it; A's edit then lands on B's revision: refused — the same statement
    GUID (``edit_group.statement_guid``) is an edit conflict; on a file that had no structured
    data, A's base has no MediaInfo and the save fails — and A's re-read finds the pair no
    longer its own. One statement, one audited edit."""
    approve(queue, page_id, "Q144")
    other = {}

    def b_takes_over(calls: int) -> None:
        if calls == 2:
            clock.advance(queue.claim_lease.total_seconds() + 1)
            other["b"] = write_approved(queue, StatementWriter(site, "b-20240502091600-0b0b", ancestors_of),
                                        batch_size=5, worker="B", clock=clock)

    counters = write_approved(OnConfirm(queue, b_takes_over), StatementWriter(site, BATCH, ancestors_of),
                              batch_size=5, worker="A", clock=clock)

    assert other["b"].written == 1 and (counters.written, counters.lost, counters.twins_removed) == (0, 1, 0)
    (statement,) = [s for s in depicts_on_wiki(wiki, page_id) if targets([s]) == ["Q144"]]
    (b_row,) = edit_rows(queue)
    assert (b_row["batch_id"], b_row["outcome"], b_row["statement_id"]) == (
        "b-20240502091600-0b0b", "written", statement["id"])
    assert [r.error for r in sent(wiki)] == [None, refused]  # B's edit, then A's
    assert bot_revisions(wiki) == audited_revisions(queue) == [b_row["revid"]]
    assert states(queue)[(page_id, "Q144")] == "written" and queue.owed_follow_ups() == []


def test_a_second_statement_of_the_item_is_removed_again_and_recorded(wiki, site, queue, clock) -> None:
    """Someone adds the item after the writer's last check; the writer's edit lands on that
    revision (Wikibase patches a stale base) and its answer, built on the base, shows the
    item once: the writer re-reads the file because the answer warns of the patch, sees the
    item twice, removes its own statement again and records both edits; the other stays."""
    approve(queue, WITH_SDC, "Q144")
    theirs = f"M{WITH_SDC}$00000000-0000-4000-8000-000000000144"

    counters = write_approved(OnConfirm(queue, human_adds_q144(wiki, WITH_SDC, theirs)),
                              StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="A", clock=clock)

    assert counters.written == 1 and counters.twins_removed == 1
    assert [s["id"] for s in depicts_on_wiki(wiki, WITH_SDC) if targets([s]) == ["Q144"]] == [theirs]
    a_row, removed = edit_rows(queue)
    assert (a_row["batch_id"], a_row["outcome"]) == (BATCH, "written")
    assert (removed["outcome"], removed["statement_id"]) == ("reverted", a_row["statement_id"])
    a_edit, removal = [e for e in wiki.edits if e.user == "WikivelBot"]
    assert a_edit.conflict_patched  # patched onto the person's revision
    assert (a_row["revid"], removed["revid"]) == (a_edit.new_revid, removal.new_revid)
    assert "second depicts [[d:Q144|Q144]]" in removal.summary
    assert bot_revisions(wiki) == audited_revisions(queue)
    assert states(queue)[(WITH_SDC, "Q144")] == "written" and queue.owed_follow_ups() == []


def test_the_first_structured_data_added_meanwhile_fails_the_save_and_the_retry_skips(wiki, site, queue,
                                                                                      clock) -> None:
    """The file has no structured data at the re-read; someone adds the item (the file's first
    MediaInfo) after the writer's last check: Wikibase answers ``failed-save`` and saves
    nothing; the writer re-reads, tries once more against that revision and finds the item
    there. Once on the file, no bot edit at all."""
    approve(queue, FILE, "Q144")
    theirs = f"M{FILE}$00000000-0000-4000-8000-000000000144"

    counters = write_approved(OnConfirm(queue, human_adds_q144(wiki, FILE, theirs)),
                              StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="A", clock=clock)

    assert [s["id"] for s in depicts_on_wiki(wiki, FILE)] == [theirs]
    assert [r.error for r in sent(wiki)] == ["failed-save"]  # the second try sent nothing
    assert (counters.written, counters.twins_removed) == (0, 0)
    (row,) = edit_rows(queue)
    assert row["outcome"] == "skipped" and "already" in row["error"]
    assert bot_revisions(wiki) == audited_revisions(queue) == []


def human_adds_q144(wiki, page_id, guid):
    """A hook for :class:`OnConfirm`: at the writer's last check (its second confirm), a
    person adds ``P180 = Q144`` with ``guid`` to the file (its first MediaInfo if it has none)."""

    def hook(calls: int) -> None:
        if calls != 2:
            return
        page = wiki.store.entity_page(f"M{page_id}")
        data = wiki.store.entity_data(page) or {"type": "mediainfo", "id": f"M{page_id}", "labels": {},
                                                 "descriptions": {}, "statements": {}}
        data.setdefault("statements", {}).setdefault("P180", []).append({
            "mainsnak": {"snaktype": "value", "property": "P180",
                         "datavalue": {"value": {"entity-type": "item", "numeric-id": 144, "id": "Q144"},
                                       "type": "wikibase-entityid"}},
            "type": "statement", "id": guid, "rank": "normal"})
        wiki.store.set_entity(page, data, user="Human Editor", comment="manual edit")

    return hook


def test_a_rate_limit_answer_is_retried_later_not_resent(wiki, site, queue, clock) -> None:
    approve(queue, FILE, "Q146")
    limited = wiki.faults.add("wbeditentity", "ratelimited", title=f"M{FILE}")

    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    assert limited.fired == 1 and len(sent(wiki)) == 1 and wiki.edits == []
    assert counters.retrying == {"ratelimited": 1} and states(queue)[(FILE, "Q146")] == "approved"
