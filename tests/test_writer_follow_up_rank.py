"""A follow-up that changes a rank does not drop what someone added to the statement
between the follow-up's read and its edit.

Wikibase has no rank-only module: the follow-up sends the whole statement as it last read it
(``wbsetclaim``, baserevid from that read), and a change made on a stale ``baserevid`` replaces
whatever the latest revision holds under that GUID (``StatementListPatcher::changeStatement``,
``tests/testwiki/entitypatch.py``). A qualifier or reference added meanwhile would be gone;
the follow-up finds the revision its edit overwrote and puts the addition back, with the rank
the decision asks for. Both bot edits are audited. The moments are fixed by hooks (inside the
wiki's save of the group edit; in the follow-up's last check), never by timing.
"""

from __future__ import annotations

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    Human,
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
    wiki,
)
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-4a4c"
FILE = 10004
QUALIFIER = {"P2048": [{"snaktype": "somevalue", "property": "P2048",
                        "hash": "2f0b1c2a6a9d3f1c4e5b6a7d8c9e0f1a2b3c4d5e"}]}
REFERENCE = {"hash": "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b",
             "snaks": {"P7482": [{"snaktype": "somevalue", "property": "P7482",
                                  "hash": "1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c"}]},
             "snaks-order": ["P7482"]}


class BeforeFollowUpCheck:
    """The queue as the writer sees it; ``hook`` runs once, at the follow-up's last check
    (after its read, before its edit leaves)."""

    def __init__(self, store, hook) -> None:
        self._store, self._hook = store, hook

    def __getattr__(self, name):
        return getattr(self._store, name)

    def confirm_follow_up(self, item, worker):
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        return self._store.confirm_follow_up(item, worker)


def promote_in_flight(wiki, queue, monkeypatch) -> None:
    """The reviewer switches Q144 to prominent while the group edit is being saved."""
    save = wiki.store.set_entity
    once = [lambda: queue.record_decision(FILE, "Q144", DecisionAction.APPROVE_PROMINENT, REVIEWER, "web")]

    def saving(page, data, **kw):
        if kw.get("user") == "WikivelBot" and once:
            once.pop()()
        return save(page, data, **kw)

    monkeypatch.setattr(wiki.store, "set_entity", saving)


def q144(wiki):
    return next(s for s in depicts_on_wiki(wiki, FILE)
                if s["mainsnak"]["datavalue"]["value"]["id"] == "Q144")


def test_a_qualifier_added_during_a_rank_follow_up_is_kept(wiki, site, queue, clock, monkeypatch) -> None:
    queue_file(queue, FILE, ["Q144"])
    queue.record_decision(FILE, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")
    promote_in_flight(wiki, queue, monkeypatch)

    def add_qualifier_and_reference(data):
        statement = data["statements"]["P180"][0]
        statement["qualifiers"], statement["qualifiers-order"] = QUALIFIER, ["P2048"]
        statement["references"] = [REFERENCE]

    hooked = BeforeFollowUpCheck(queue, lambda: Human(wiki).change(FILE, add_qualifier_and_reference))
    counters = write_approved(hooked, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    statement = q144(wiki)
    assert statement["rank"] == "preferred"  # the reviewer's decision
    # The human's additions, not dropped (the wiki computes its own snak hashes).
    assert [(q["snaktype"], q["property"]) for q in statement["qualifiers"]["P2048"]] == [("somevalue", "P2048")]
    assert [list(r["snaks"]) for r in statement["references"]] == [["P7482"]]
    assert counters.written == 1 and counters.followed_up == 1
    assert queue.owed_follow_ups() == [] and states(queue)[(FILE, "Q144")] == "written"
    follow_ups = [r for r in edit_rows(queue) if r["outcome"] == "written"][1:]
    assert [r["rank"] for r in follow_ups] == ["preferred", "preferred"]  # the change, the repair
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_without_a_change_in_between_the_rank_follow_up_is_one_edit(wiki, site, queue, clock,
                                                                     monkeypatch) -> None:
    queue_file(queue, FILE, ["Q144"])
    queue.record_decision(FILE, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")
    promote_in_flight(wiki, queue, monkeypatch)

    write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                   clock=clock)

    assert q144(wiki)["rank"] == "preferred" and "qualifiers" not in q144(wiki)
    assert [e.action for e in wiki.edits] == ["wbeditentity", "wbsetclaim"]
    assert queue.owed_follow_ups() == [] and bot_revisions(wiki) == audited_revisions(queue)


def test_a_rank_someone_set_during_the_rank_follow_up_is_theirs_and_ends_it(wiki, site, queue, clock,
                                                                            monkeypatch) -> None:
    queue_file(queue, FILE, ["Q144"])
    queue.record_decision(FILE, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")
    promote_in_flight(wiki, queue, monkeypatch)

    def deprecate(data):
        data["statements"]["P180"][0]["rank"] = "deprecated"

    hooked = BeforeFollowUpCheck(queue, lambda: Human(wiki).change(FILE, deprecate))
    write_approved(hooked, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                   clock=clock)
    # A second run finds nothing owed: the statement is left as the human made it.
    write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                   clock=clock)

    assert q144(wiki)["rank"] == "deprecated"
    assert queue.owed_follow_ups() == []
    rows = edit_rows(queue)
    assert [(r["outcome"], r["rank"]) for r in rows] == [
        ("written", "normal"), ("written", "preferred"), ("written", "deprecated"), ("skipped", None)]
    assert rows[-1]["error"].endswith("changed by someone else: rank is deprecated (set while the rank "
                                      "change was in flight)")
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_an_edit_elsewhere_on_the_file_during_the_rank_follow_up_needs_no_repair(
        wiki, site, queue, clock, monkeypatch) -> None:
    queue_file(queue, FILE, ["Q144"])
    queue.record_decision(FILE, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")
    promote_in_flight(wiki, queue, monkeypatch)

    def caption(data):
        data["labels"] = {"en": {"language": "en", "value": "A village church"}}

    hooked = BeforeFollowUpCheck(queue, lambda: Human(wiki).change(FILE, caption))
    write_approved(hooked, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                   clock=clock)

    assert q144(wiki)["rank"] == "preferred" and "qualifiers" not in q144(wiki)
    assert wiki.entity(f"M{FILE}")["labels"]["en"]["value"] == "A village church"
    assert [e.action for e in wiki.edits if e.user == "WikivelBot"] == ["wbeditentity", "wbsetclaim"]
    assert queue.owed_follow_ups() == [] and bot_revisions(wiki) == audited_revisions(queue)
