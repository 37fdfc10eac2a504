"""One bad item does not sink a group: a pair whose item was deleted or merged (now a
redirect) since its approval is held for a human with its reason, never rewritten to the
merge's target, and the rest of the file's pairs are written in one edit.

Against the test wiki as Wikibase answers (``tests/testwiki/redirects.py``): a statement of a
deleted item fails the whole ``wbeditentity``; one of a merged item is accepted as sent. Real
pywikibot over HTTP, the one Wikidata client, a real SQLite queue.
"""

from __future__ import annotations

from tests.testwiki.redirects import merge_item
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
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
from wikivel_bot.commons.writer.moved_items import HELD, moved_items
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.wikidata.client import WikidataClient

BATCH = "b-20240502090000-7e11"
FILE = 10004  # File:Village church.png, no structured data
MERGED = "Q990902"  # a duplicate of Q25348 (mallard), merged into it after the approval
GONE = "Q999999991"  # approved, then deleted: no such item on the wiki


def add_duplicate(wiki) -> None:
    wiki.store.add_entity({
        "type": "item", "id": MERGED, "labels": {"en": {"language": "en", "value": "wild duck"}},
        "descriptions": {}, "aliases": {}, "claims": {}, "sitelinks": {}})


def hierarchy(qid):
    return {}


def test_a_missing_or_merged_item_is_held_and_the_rest_is_written(wiki, site, queue, clock) -> None:
    add_duplicate(wiki)
    approve_all(queue, FILE, ["Q146", MERGED, "Q144", GONE])
    merge_item(wiki.store, MERGED, "Q25348")
    writer = StatementWriter(site, BATCH, hierarchy, items=WikidataClient(wiki.api_url, contact="User:Tester"))

    counters = write_approved(queue, writer, batch_size=10, worker="test", clock=clock)

    assert targets(depicts_on_wiki(wiki, FILE)) == ["Q146", "Q144"]  # never Q25348, never MERGED
    (edit,) = [e for e in wiki.edits if e.entity == f"M{FILE}"]  # the rest in one edit
    assert counters.written == 2 and counters.failed == {HELD: 2}
    assert states(queue) == {(FILE, "Q146"): "written", (FILE, "Q144"): "written",
                             (FILE, MERGED): "write_failed", (FILE, GONE): "write_failed"}
    reasons = {r["qid"]: r["error"] for r in edit_rows(queue) if r["outcome"] == "failed"}
    assert reasons[MERGED].startswith(f"{HELD}: {MERGED} is now a redirect to Q25348")
    assert reasons[GONE].startswith(f"{HELD}: {GONE} no longer exists")
    assert {r["qid"]: r["revid"] for r in edit_rows(queue) if r["outcome"] == "written"} == {
        "Q146": edit.new_revid, "Q144": edit.new_revid}
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_without_the_check_one_missing_item_sinks_the_whole_group(wiki, site, queue, clock) -> None:
    """What the check prevents: Wikibase fails the whole edit for one missing item."""
    approve_all(queue, FILE, ["Q146", GONE])
    counters = write_approved(queue, StatementWriter(site, BATCH, hierarchy), batch_size=10,
                              worker="test", clock=clock)
    assert counters.written == 0 and depicts_on_wiki(wiki, FILE) == []
    assert set(states(queue).values()) == {"write_failed"}
    assert {r["error"].split(":")[0] for r in edit_rows(queue)} == {"modification-failed"}
    assert bot_revisions(wiki) == audited_revisions(queue) == []


def test_the_check_asks_the_repository_uncached_once_per_group(wiki) -> None:
    add_duplicate(wiki)
    client = WikidataClient(wiki.api_url, contact="User:Tester")
    assert moved_items(client, ["Q146", MERGED]) == {}
    merge_item(wiki.store, MERGED, "Q25348")
    before = client.requests
    held = moved_items(client, ["Q146", MERGED, "Q146"])
    assert list(held) == [MERGED] and client.requests == before + 1
    assert moved_items(None, [MERGED]) == {}


def test_a_dry_run_keeps_the_approval_of_a_moved_item(wiki, site, queue, clock) -> None:
    """A hold ends an approval (a human must look again); a dry run never uses one up."""
    from pywikibot import config

    approve_all(queue, FILE, ["Q146", GONE])
    writer = StatementWriter(site, BATCH, hierarchy, dry_run=True,
                             items=WikidataClient(wiki.api_url, contact="User:Tester"))
    try:
        counters = write_approved(queue, writer, batch_size=10, worker="test", clock=clock)
    finally:
        config.simulate = False
    assert counters.dry_run == 2 and not counters.failed
    assert set(states(queue).values()) == {"approved"} and wiki.edits == []
