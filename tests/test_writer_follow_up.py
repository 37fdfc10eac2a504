"""A human's last decision wins, whenever it lands: a reject, an undo and a switch to
prominent at each point of a write end with the wiki showing what the last decision says,
and every bot edit in the audit (bot revisions on the wiki = audited revisions).

Before the edit's request leaves, the writer's last check drops the pair (a decision clears
the claim); once it has left, the edit is recorded and a follow-up edit removes the
statement again or sets its rank (``commons.writer.follow_up``), in the same run. The moments are
fixed by hooks — in pywikibot's page read, in the queue's claim check, in the put-throttle
wait, and inside the test wiki's save of the edit (the request is then in flight) — never by
timing. Real pywikibot over HTTP against the local test wiki, a real SQLite queue.
"""

from __future__ import annotations

import pytest

from tests.writer_support import freeze_throttle_clock
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    ancestors_of,
    audited_revisions,
    bot_revisions,
    clock,
    depicts_on_wiki,
    edit_rows,
    queue,
    queue_file,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.commons.writer.revert import StatementReverter, revert_batch
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.queue.revert_queries import RevertQueue
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-f011"
FILE = 10004
POINTS = ["before-re-read", "after-re-read", "throttle-wait", "in-flight"]
DECISIONS = ["reject", "undo", "prominent"]


class Hooked:
    """The queue as the writer sees it; ``hook`` runs once, at the first ``confirm_claim``."""

    def __init__(self, store, hook) -> None:
        self._store, self._hook = store, hook

    def __getattr__(self, name):
        return getattr(self._store, name)

    def confirm_claim(self, candidate_id, worker):
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        return self._store.confirm_claim(candidate_id, worker)


def at_point(point, hook, wiki, site, queue, monkeypatch):
    """Arrange for ``hook`` (the decision) to run once at ``point``; the queue to write with."""
    once = [hook]

    def fire():
        if once:
            once.pop()()

    if point == "before-re-read":
        read = site.load_pages_from_pageids
        monkeypatch.setattr(site, "load_pages_from_pageids", lambda ids, **kw: (fire(), read(ids, **kw))[1])
    elif point == "after-re-read":
        return Hooked(queue, fire)
    elif point == "throttle-wait":
        throttle = site.throttle
        monkeypatch.setattr(throttle, "writedelay", 5)
        monkeypatch.setattr(throttle, "maxdelay", 10)
        throttle.last_write = freeze_throttle_clock(monkeypatch).now  # a wait of writedelay, whatever the load

        def wait(seconds):
            if seconds > 0:
                fire()
                throttle.last_write -= seconds  # the time passes without sleeping

        monkeypatch.setattr(throttle, "wait", wait)
    else:  # in flight: inside the wiki's save of the group edit, before it answers
        save = wiki.store.set_entity

        def saving(page, data, **kw):
            if kw.get("user") == "WikivelBot":
                fire()
            return save(page, data, **kw)

        monkeypatch.setattr(wiki.store, "set_entity", saving)
    return queue


def decide(queue, decision, approval_id):
    if decision == "reject":
        return lambda: queue.record_decision(FILE, "Q144", DecisionAction.REJECT, REVIEWER, "web")
    if decision == "undo":
        return lambda: queue.undo_decision(approval_id)
    return lambda: queue.record_decision(FILE, "Q144", DecisionAction.APPROVE_PROMINENT, REVIEWER, "web")


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("point", POINTS)
def test_the_last_decision_wins_at_every_point_of_the_write(point, decision, wiki, site, queue, clock,
                                                            monkeypatch) -> None:
    queue_file(queue, FILE, ["Q146", "Q144"])
    queue.record_decision(FILE, "Q146", DecisionAction.APPROVE, REVIEWER, "cli")
    approval = queue.record_decision(FILE, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")
    store = at_point(point, decide(queue, decision, approval), wiki, site, queue, monkeypatch)

    counters = write_approved(store, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    on_wiki = {targets([s])[0]: s for s in depicts_on_wiki(wiki, FILE)}
    if decision == "prominent":
        assert sorted(on_wiki) == ["Q144", "Q146"]
        assert (on_wiki["Q144"]["rank"], on_wiki["Q146"]["rank"]) == ("preferred", "normal")
        assert states(queue)[(FILE, "Q144")] == "written"
    else:
        assert sorted(on_wiki) == ["Q146"]
        assert states(queue)[(FILE, "Q144")] == ("rejected" if decision == "reject" else "proposed")
    assert states(queue)[(FILE, "Q146")] == "written"
    assert bot_revisions(wiki) == audited_revisions(queue)
    in_flight = point == "in-flight"
    assert counters.followed_up == (1 if in_flight else 0)
    assert queue.owed_follow_ups() == [] and queue.claims() == []
    if in_flight:
        # The follow-up names the later decision and the edit it follows up.
        first, follow = [e for e in wiki.edits if e.user == "WikivelBot"]
        expected = {"reject": f"rejected by {REVIEWER}", "undo": "approval undone",
                    "prominent": f"switched to prominent by {REVIEWER}"}[decision]
        assert expected in follow.summary and f"edit {first.new_revid} of {BATCH}" in follow.summary
        rows = [r for r in edit_rows(queue) if r["qid"] == "Q144"]
        assert [r["outcome"] for r in rows] == ["written", "reverted" if decision != "prominent" else "written"]
        assert rows[0]["statement_id"] == rows[1]["statement_id"] == on_wiki.get("Q144", {}).get(
            "id", rows[0]["statement_id"])
        assert [r["revid"] for r in rows] == [first.new_revid, follow.new_revid]


def test_revert_after_a_follow_up_neither_re_adds_nor_removes_twice(wiki, site, queue, clock,
                                                                      monkeypatch) -> None:
    queue_file(queue, FILE, ["Q146", "Q144", "Q3736439"])
    for qid in ("Q146", "Q144", "Q3736439"):
        queue.record_decision(FILE, qid, DecisionAction.APPROVE, REVIEWER, "cli")

    def both():
        queue.record_decision(FILE, "Q144", DecisionAction.REJECT, REVIEWER, "web")
        queue.record_decision(FILE, "Q3736439", DecisionAction.APPROVE_PROMINENT, REVIEWER, "web")

    at_point("in-flight", both, wiki, site, queue, monkeypatch)
    write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                   clock=clock)
    assert {targets([s])[0]: s["rank"] for s in depicts_on_wiki(wiki, FILE)} == {
        "Q146": "normal", "Q3736439": "preferred"}

    counters = revert_batch(RevertQueue(queue), StatementReverter(site), BATCH)

    assert (counters.reverted, sum(counters.left_alone.values()), sum(counters.failed.values())) == (2, 0, 0)
    assert depicts_on_wiki(wiki, FILE) == []
    assert bot_revisions(wiki) == audited_revisions(queue)
    assert queue.owed_follow_ups() == []


def test_a_dry_run_simulates_the_follow_up_and_keeps_it_owed(wiki, site, queue, clock, monkeypatch) -> None:
    from pywikibot import config

    queue_file(queue, FILE, ["Q146"])
    queue.record_decision(FILE, "Q146", DecisionAction.APPROVE, REVIEWER, "cli")
    at_point("in-flight", lambda: queue.record_decision(FILE, "Q146", DecisionAction.REJECT, REVIEWER, "web"),
             wiki, site, queue, monkeypatch)
    monkeypatch.setattr("wikivel_bot.commons.writer.loop._follow_up", lambda *a: None)
    write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test", clock=clock)
    monkeypatch.undo()
    (owed,) = queue.owed_follow_ups()
    assert owed.wanted == "remove" and wiki.write_count() == 1

    dry = write_approved(queue, StatementWriter(site, "b-20240502100000-d0d0", ancestors_of, dry_run=True),
                         batch_size=5, worker="dry", clock=clock)
    assert dry.followed_up == 0 and wiki.write_count() == 1
    assert len(queue.owed_follow_ups()) == 1 and queue.claims() == []

    config.simulate = False
    real = write_approved(queue, StatementWriter(site, "b-20240502110000-beef", ancestors_of),
                          batch_size=5, worker="real", clock=clock)
    assert real.followed_up == 1 and depicts_on_wiki(wiki, FILE) == []
    assert bot_revisions(wiki) == audited_revisions(queue)


class BeforeFollowUps:
    """The queue as the writer sees it; ``hook`` runs before the first follow-up claim that
    finds something (a person edits the file between the edit and its follow-up)."""

    def __init__(self, store, hook) -> None:
        self._store, self._hook = store, hook

    def __getattr__(self, name):
        return getattr(self._store, name)

    def claim_follow_ups(self, limit, worker):
        if self._hook is not None and self._store.owed_follow_ups():
            hook, self._hook = self._hook, None
            hook()
        return self._store.claim_follow_ups(limit, worker)


def test_a_statement_a_person_changed_since_is_left_alone(wiki, site, queue, clock, monkeypatch) -> None:
    from tests.writer_support import Human

    queue_file(queue, FILE, ["Q146"])
    queue.record_decision(FILE, "Q146", DecisionAction.APPROVE, REVIEWER, "cli")
    at_point("in-flight", lambda: queue.record_decision(FILE, "Q146", DecisionAction.REJECT, REVIEWER, "web"),
             wiki, site, queue, monkeypatch)

    def person_sets_preferred():
        def change(data):
            data["statements"]["P180"][0]["rank"] = "preferred"
        Human(wiki).change(FILE, change)

    store = BeforeFollowUps(queue, person_sets_preferred)
    counters = write_approved(store, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                              clock=clock)

    assert counters.followed_up == 0
    (statement,) = depicts_on_wiki(wiki, FILE)
    assert statement["rank"] == "preferred"  # the person's change stands
    assert len([e for e in wiki.edits if e.user == "WikivelBot"]) == 1
    skipped = [r for r in edit_rows(queue) if r["outcome"] == "skipped"]
    assert len(skipped) == 1 and "changed by someone else: rank is preferred" in skipped[0]["error"]
    assert queue.owed_follow_ups() == [] and queue.claims() == []
    assert bot_revisions(wiki) == audited_revisions(queue)


class DiesBeforeRecording:
    """The queue as a writer sees it that dies between its follow-up edit and its record."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store, name)

    def record_follow_up(self, *args, **kwargs):
        raise KeyboardInterrupt("killed between the follow-up edit and its record")


@pytest.mark.parametrize("decision", ["reject", "prominent"])
def test_a_follow_up_whose_record_was_lost_is_recorded_from_the_history(decision, wiki, site, queue, clock,
                                                                        monkeypatch) -> None:
    queue_file(queue, FILE, ["Q146"])
    approval = queue.record_decision(FILE, "Q146", DecisionAction.APPROVE, REVIEWER, "cli")
    action = DecisionAction.REJECT if decision == "reject" else DecisionAction.APPROVE_PROMINENT
    at_point("in-flight", lambda: queue.record_decision(FILE, "Q146", action, REVIEWER, "web"),
             wiki, site, queue, monkeypatch)
    assert approval
    with pytest.raises(KeyboardInterrupt):
        write_approved(DiesBeforeRecording(queue), StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                       worker="test", clock=clock)
    assert len(bot_revisions(wiki)) == 2 and len(audited_revisions(queue)) == 1

    clock.advance(queue.claim_lease.total_seconds() + 1)  # the dead writer's lease runs out
    counters = write_approved(queue, StatementWriter(site, "b-20240502100000-cafe", ancestors_of), batch_size=5,
                              worker="next", clock=clock)

    assert counters.followed_up == 1 and len(bot_revisions(wiki)) == 2  # nothing edited twice
    assert bot_revisions(wiki) == audited_revisions(queue)
    assert queue.owed_follow_ups() == []
    expected = [] if decision == "reject" else ["preferred"]
    assert [s["rank"] for s in depicts_on_wiki(wiki, FILE)] == expected
