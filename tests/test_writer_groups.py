"""One edit per file: a file's approved pairs are one ``wbeditentity`` edit, and everything
that holds for one statement holds for the group — the re-check drops what became present,
more specific or unapproved, a decision that arrives during the put-throttle wait keeps its
pair out of the edit, a fault leaves every pair to retry, a dry run keeps every approval, and
every edit the bot makes is in the audit (bot revisions on the wiki = audited revisions).

Real pywikibot against the local test wiki; the moments where a human's decision lands are
fixed by hooks in the queue and in pywikibot's throttle, not by timing.
"""

from __future__ import annotations

import pytest

from tests.late_answers import fast_retries  # noqa: F401 - fast_retries is a fixture
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    ancestors_of,
    approve_all,
    audited_revisions,
    bot_revisions,
    clock,
    depicts_on_wiki,
    edit_rows,
    edits_of,
    queue,
    queue_file,
    site,
    states,
    targets,
    wiki,
)
from tests.writer_support import FrozenTime, freeze_throttle_clock
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.types import DecisionAction, DryRun

BATCH = "b-20240502090000-6a0b"


def run(store, site, clock, **kw):
    return write_approved(store, StatementWriter(site, BATCH, ancestors_of, **kw), batch_size=5,
                          worker="test", clock=clock)


class Hooked:
    """The queue as the writer sees it, with a hook run once at the first call of one method:
    the moment a human's decision lands."""

    def __init__(self, store, method: str, hook) -> None:
        self._store, self._method, self._hook = store, method, hook

    def __getattr__(self, name):
        target = getattr(self._store, name)
        if name != self._method:
            return target

        def hooked(*args, **kwargs):
            hook, self._hook = self._hook, None
            if hook is not None:
                hook()
            return target(*args, **kwargs)

        return hooked


def sent_items(edit):
    """The items of the statements one recorded wbeditentity edit sent."""
    return [f"Q{s['mainsnak']['datavalue']['value']['numeric-id']}" for s in edit.data["claims"]["P180"]]


def reject(store, page_id: int, qid: str) -> None:
    store.record_decision(page_id, qid, DecisionAction.REJECT, REVIEWER, "web")


def test_the_re_check_drops_present_more_specific_and_unapproved_pairs(wiki, site, queue, clock) -> None:
    # 10001 already depicts Q146 (house cat): Q146 is present, Q729 (animal) more generic.
    approve_all(queue, 10001, ["Q146", "Q729", "Q3736439", "Q144", "Q5"])
    hooked = Hooked(queue, "confirm_claim", lambda: reject(queue, 10001, "Q5"))

    counters = write_approved(hooked, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    (edit,) = wiki.edits
    assert sent_items(edit) == ["Q3736439", "Q144"]
    assert targets(depicts_on_wiki(wiki, 10001)) == ["Q146", "Q3736439", "Q144"]
    assert "[[d:Q5|Q5]]" not in edit.summary and "[[d:Q144|Q144]]" in edit.summary
    assert states(queue) == {(10001, "Q146"): "write_skipped", (10001, "Q729"): "write_skipped",
                             (10001, "Q3736439"): "written", (10001, "Q144"): "written",
                             (10001, "Q5"): "rejected"}
    reasons = {r["qid"]: r["error"] for r in edit_rows(queue) if r["outcome"] == "skipped"}
    assert reasons == {"Q146": "Q146 is already depicted",
                       "Q729": "a more specific item is already depicted: Q146 (2 hop(s) below Q729)"}
    assert (counters.written, counters.lost, sum(counters.skipped.values())) == (2, 1, 2)
    assert bot_revisions(wiki) == audited_revisions(queue) == [edit.new_revid]


@pytest.fixture
def throttle_clock(monkeypatch) -> FrozenTime:
    return freeze_throttle_clock(monkeypatch)


def test_a_reject_during_the_throttle_wait_keeps_its_pair_out_of_the_edit(wiki, site, queue, clock,
                                                                           monkeypatch, throttle_clock) -> None:
    """The last check comes after pywikibot's put-throttle wait: a reject that lands while
    the writer waits is honoured, and the request's own throttle wait is then zero."""
    approve_all(queue, 10004, ["Q146", "Q144", "Q3736439"])
    throttle = site.throttle
    monkeypatch.setattr(throttle, "writedelay", 5)
    monkeypatch.setattr(throttle, "maxdelay", 10)
    throttle.last_write = throttle_clock.now  # the last write was just now
    waits = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if seconds > 0:
            reject(queue, 10004, "Q144")  # the reviewer's "no" arrives mid-wait
            throttle.last_write -= seconds  # the time passes without sleeping

    monkeypatch.setattr(throttle, "wait", wait)

    counters = run(queue, site, clock)

    (positive,) = [w for w in waits if w > 0]  # one wait: the writer's; the request's was 0
    assert positive == 5  # writedelay after a write just now (the throttle's clock stands still)
    (edit,) = wiki.edits
    assert sorted(sent_items(edit)) == ["Q146", "Q3736439"]
    assert sorted(targets(depicts_on_wiki(wiki, 10004))) == ["Q146", "Q3736439"]
    assert states(queue)[(10004, "Q144")] == "rejected"
    assert (counters.written, counters.lost) == (2, 1)
    assert bot_revisions(wiki) == audited_revisions(queue) == [edit.new_revid]


def test_a_switch_to_prominent_during_the_throttle_wait_is_written_as_prominent(
        wiki, site, queue, clock, monkeypatch, throttle_clock) -> None:
    """A new decision ends the writer's claim: the pair leaves this edit and is written in
    the file's next edit with the rank the last decision asks for."""
    approve_all(queue, 10004, ["Q146", "Q144"])
    throttle = site.throttle
    monkeypatch.setattr(throttle, "writedelay", 5)
    monkeypatch.setattr(throttle, "maxdelay", 10)
    throttle.last_write = throttle_clock.now  # the last write was just now
    switch = [lambda: queue.record_decision(10004, "Q144", DecisionAction.APPROVE_PROMINENT, REVIEWER, "web")]

    def wait(seconds: float) -> None:
        if seconds > 0:
            if switch:
                switch.pop()()
            throttle.last_write -= seconds

    monkeypatch.setattr(throttle, "wait", wait)
    counters = run(queue, site, clock)

    first, second = wiki.edits
    assert (sent_items(first), sent_items(second)) == (["Q146"], ["Q144"])
    assert {targets([s])[0]: s["rank"] for s in depicts_on_wiki(wiki, 10004)} == {
        "Q146": "normal", "Q144": "preferred"}
    assert (counters.written, counters.lost) == (2, 1)
    assert bot_revisions(wiki) == audited_revisions(queue) == [first.new_revid, second.new_revid]


def test_an_edit_made_while_a_reject_arrived_is_still_recorded(wiki, site, queue, clock) -> None:
    """The reject lands after the request left (before the outcome is recorded): the edit
    is on the wiki, so it is in the audit with its revision and statement; the pair keeps
    the human's decision, and the run's follow-up removes the statement again."""
    approve_all(queue, 10004, ["Q146", "Q144"])
    hooked = Hooked(queue, "record_edit", lambda: reject(queue, 10004, "Q146"))

    counters = write_approved(hooked, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    edit, follow_up = wiki.edits
    assert (counters.written, counters.followed_up) == (2, 1)
    rows = [r for r in edit_rows(queue) if r["outcome"] == "written"]
    guids = {q: s["id"] for q, s in zip(sent_items(edit), edit.data["claims"]["P180"])}
    assert {r["qid"]: (r["revid"], r["statement_id"]) for r in rows} == {
        q: (edit.new_revid, guids[q]) for q in ("Q146", "Q144")}
    (removed,) = [r for r in edit_rows(queue) if r["outcome"] == "reverted"]
    assert (removed["qid"], removed["revid"], removed["statement_id"]) == ("Q146", follow_up.new_revid, guids["Q146"])
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q144"]
    assert states(queue) == {(10004, "Q146"): "rejected", (10004, "Q144"): "written"}
    assert queue.claims() == []
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_pairs_approved_while_a_group_is_written_go_into_the_next_edit(wiki, site, queue, clock) -> None:
    queue_file(queue, 10004, ["Q146", "Q144", "Q3736439", "Q5"])
    for qid in ("Q146", "Q144", "Q3736439"):
        queue.record_decision(10004, qid, DecisionAction.APPROVE, REVIEWER, "cli")
    late = lambda: queue.record_decision(10004, "Q5", DecisionAction.APPROVE, REVIEWER, "web")  # noqa: E731
    hooked = Hooked(queue, "confirm_claim", late)

    counters = write_approved(hooked, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    first, second = edits_of(wiki, 10004)
    assert (sorted(sent_items(first)), sent_items(second)) == (["Q144", "Q146", "Q3736439"], ["Q5"])
    assert "[[d:Q5|Q5]]" in second.summary and "[[d:Q5|Q5]]" not in first.summary
    assert (counters.claimed, counters.written, counters.lost) == (4, 4, 0)
    assert "4 written in 2 edits" in counters.lines()  # what `write` prints
    assert sorted(targets(depicts_on_wiki(wiki, 10004))) == ["Q144", "Q146", "Q3736439", "Q5"]
    assert set(states(queue).values()) == {"written"}
    assert bot_revisions(wiki) == audited_revisions(queue) == [first.new_revid, second.new_revid]


def test_a_dry_run_of_a_group_writes_nothing_and_keeps_every_approval(wiki, site, queue, clock) -> None:
    from pywikibot import config

    approve_all(queue, 10004, ["Q146", "Q144", "Q3736439"], prominent=["Q3736439"])
    dry = StatementWriter(site, BATCH, ancestors_of, dry_run=True)
    results = dry.write_group(queue.claim_approved(5, "dry"))
    summaries = {o.summary for _, o in results if isinstance(o, DryRun)}
    (summary,) = summaries  # one simulated edit for the three
    assert all(f"[[d:{q}|{q}]]" in summary for q in ("Q146", "Q144", "Q3736439"))
    queue.release_claims_of("dry")

    counters = write_approved(queue, dry, batch_size=5, worker="dry", clock=clock)
    assert (counters.claimed, counters.dry_run, counters.written) == (3, 3, 0)
    assert wiki.write_count() == 0 and depicts_on_wiki(wiki, 10004) == []
    assert set(states(queue).values()) == {"approved"}
    assert [r["outcome"] for r in edit_rows(queue)] == ["dry_run"] * 3
    assert write_approved(queue, dry, batch_size=5, worker="dry", clock=clock).claimed == 0

    config.simulate = False  # the real run (a new process in real life) writes them, once
    real = write_approved(queue, StatementWriter(site, "b-20240502100000-beef", ancestors_of),
                          batch_size=5, worker="real", clock=clock)
    assert real.written == 3 and wiki.write_count() == 1



def test_a_fault_between_the_re_read_and_the_edit_leaves_the_whole_group_to_retry(
        wiki, site, queue, clock, fast_retries) -> None:
    fault = wiki.faults.add("wbeditentity", "http503", times=None)
    approve_all(queue, 10004, ["Q146", "Q144", "Q3736439"])
    first = run(queue, site, clock)
    # Sent once: no blind resend; the re-read found none of the GUIDs, so nothing applied.
    assert fault.fired == 1 and wiki.edits == []
    assert first.retrying == {"server": 3}
    assert set(states(queue).values()) == {"approved"}

    wiki.faults.clear()
    clock.advance(3600)
    assert run(queue, site, clock).written == 3
    (edit,) = wiki.edits
    for qid in ("Q146", "Q144", "Q3736439"):  # each statement exactly once
        assert targets(depicts_on_wiki(wiki, 10004)).count(qid) == 1
    assert bot_revisions(wiki) == audited_revisions(queue) == [edit.new_revid]


def test_a_file_with_more_pairs_than_one_summary_names_gets_several_edits(site) -> None:
    from wikivel_bot.core.edit_comment import adding
    from wikivel_bot.types import ApprovedEdit

    writer = StatementWriter(site, BATCH, ancestors_of)
    pairs = [ApprovedEdit(candidate_id=i, file_id=1, page_id=10004, title="File:X.png",
                          qid=f"Q{1000000000 + i}", prominent=True, reviewer=f"Reviewer {i}")
             for i in range(14)]
    groups = writer.groups([*pairs, ApprovedEdit(candidate_id=99, file_id=2, page_id=10046,
                                                 title="File:Y.png", qid="Q1", prominent=False,
                                                 reviewer="Ann")])
    assert len(groups) >= 3 and [g[0].page_id for g in groups] == [10004] * (len(groups) - 1) + [10046]
    assert [e.candidate_id for g in groups[:-1] for e in g] == list(range(14))  # none lost
    for group in groups:
        summary = writer.summary(group)
        # Within what Commons keeps after Wikibase's longest autocomment of the edit.
        assert len(summary) + adding([e.qid for e in group]) <= 500
        assert all(f"[[d:{e.qid}|{e.qid}]]" in summary for e in group)
