"""The writer against the local test wiki through real pywikibot: what is written, exactly
once, and what is skipped (and why)."""

from __future__ import annotations

import json
import re

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    ancestors_of,
    approve,
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
from wikivel_bot import __version__
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter, hierarchy_lookup, new_batch_id
from wikivel_bot.types import DecisionAction

BATCH = "b-20240502090000-abcd"


def run(queue, site, clock, *, lookup=ancestors_of, tags=("wikivel-bot",), batch=BATCH, **kw):
    writer = StatementWriter(site, batch, lookup, tags=tags, **kw)
    return write_approved(queue, writer, batch_size=3, worker="test", clock=clock)


def test_approved_pair_is_written_once_with_the_exact_request(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q146")
    base = wiki.entity("M10004")
    assert base is None  # no structured data yet
    before = wiki.store.entity_page("M10004").latest.revid

    counters = run(queue, site, clock)

    (request,) = wiki.recorder.write_requests()
    assert request.params["action"] == "wbeditentity" and request.params["id"] == "M10004"
    (claim,) = json.loads(request.params["data"])["claims"]["P180"]
    guid = claim.pop("id")
    assert re.fullmatch(r"M10004\$[0-9a-f-]{36}", guid)
    assert claim == {
        "mainsnak": {"snaktype": "value", "property": "P180", "datatype": "wikibase-item",
                     "datavalue": {"value": {"entity-type": "item", "numeric-id": 146},
                                   "type": "wikibase-entityid"}},
        "type": "statement", "rank": "normal",
    }
    assert request.params["baserevid"] == str(before)  # the fresh re-read's revision
    assert request.params["maxlag"] == "5"  # pywikibot's write_maxlag
    assert "bot" in request.params and request.params["tags"] == "wikivel-bot"
    assert request.params["summary"] == (
        f"Adding depicts [[d:Q146|Q146]], approved by [[User:{REVIEWER}]] "
        f"(wikivel-bot {__version__}, batch {BATCH})")

    (edit,) = wiki.edits
    assert edit.entity == "M10004" and edit.user == "WikivelBot" and edit.bot
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]
    assert depicts_on_wiki(wiki, 10004)[0]["id"] == guid
    assert states(queue)[(10004, "Q146")] == "written"
    (row,) = edit_rows(queue)
    assert (row["outcome"], row["batch_id"], row["statement_id"], row["revid"]) == (
        "written", BATCH, guid, edit.new_revid)
    assert counters.written == 1 and counters.claimed == 1

    # A second run finds nothing to do: the pair is written, not approved.
    again = run(queue, site, clock, batch="b-20240502090500-beef")
    assert again.claimed == 0 and wiki.write_count() == 1


def test_a_file_with_three_approved_pairs_gets_one_revision_with_three_statements(
        wiki, site, queue, clock) -> None:
    queue_file(queue, 10004, ["Q146", "Q3736439", "Q144"])
    queue.record_decision(10004, "Q146", DecisionAction.APPROVE, REVIEWER, "cli")
    queue.record_decision(10004, "Q3736439", DecisionAction.APPROVE_PROMINENT, "Ann", "web")
    queue.record_decision(10004, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")
    approve(queue, 10046, "Q146")  # another file: its own edit
    before = wiki.store.entity_page("M10004").latest.revid

    counters = run(queue, site, clock)

    assert (counters.claimed, counters.written) == (4, 4)
    (edit,) = edits_of(wiki, 10004)
    assert edit.action == "wbeditentity" and edit.old_revid == before
    statements = depicts_on_wiki(wiki, 10004)
    assert targets(statements) == ["Q146", "Q3736439", "Q144"]
    assert [s["rank"] for s in statements] == ["normal", "preferred", "normal"]
    assert edit.summary == (
        "Adding depicts [[d:Q146|Q146]], [[d:Q3736439|Q3736439]] (prominent), [[d:Q144|Q144]], "
        f"approved by [[User:{REVIEWER}]], [[User:Ann]] (wikivel-bot {__version__}, batch {BATCH})")
    assert len(edits_of(wiki, 10046)) == 1 and wiki.write_count() == 2
    # Each pair's audit row: the group's revision, its own statement.
    rows = {r["qid"]: r for r in edit_rows(queue) if r["page_id"] == 10004}
    assert {r["revid"] for r in rows.values()} == {edit.new_revid}
    assert {q: r["statement_id"] for q, r in rows.items()} == {
        targets([s])[0]: s["id"] for s in statements}
    assert set(states(queue).values()) == {"written"}

    # `audit` shows the group's revision for each pair, each with its own statement.
    from wikivel_bot.queue.reviews import audit_events
    from wikivel_bot.review.audit import audit_lines

    lines = [line for line in audit_lines(audit_events(queue, batch_id=BATCH, page_id=10004), lambda q: "")
             if "written" in line and "revision" in line]
    assert len(lines) == 3
    for qid, row in rows.items():
        (line,) = [line for line in lines if qid in line and row["statement_id"] in line]
        assert f"revision {edit.new_revid}" in line


def test_labels_the_linker_stored_are_named_in_the_summary(wiki, site, queue, clock) -> None:
    from sqlalchemy import update

    from wikivel_bot.queue.tables import candidates

    approve(queue, 10004, "Q146", also=["Q3736439"])
    queue.record_decision(10004, "Q3736439", DecisionAction.APPROVE_PROMINENT, REVIEWER, "cli")
    with queue.engine.begin() as conn:
        conn.execute(update(candidates).where(candidates.c.qid == "Q146").values(
            evidence={"label": "house cat [[evil]]"}))
    run(queue, site, clock)
    (edit,) = wiki.edits
    assert edit.summary.startswith(
        "Adding depicts [[d:Q146|Q146]] (house cat evil), [[d:Q3736439|Q3736439]] (prominent), ")


def test_prominent_is_written_with_preferred_rank(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q3736439", prominent=True)
    run(queue, site, clock)
    (statement,) = depicts_on_wiki(wiki, 10004)
    assert statement["rank"] == "preferred"
    assert targets([statement]) == ["Q3736439"]
    assert "(prominent)" in wiki.edits[-1].summary


def test_rejected_proposed_and_undecided_pairs_are_never_written(wiki, site, queue, clock) -> None:
    queue_file(queue, 10004, ["Q146", "Q144", "Q3736439"])
    queue.record_decision(10004, "Q144", DecisionAction.REJECT, REVIEWER, "cli")
    queue.record_decision(10004, "Q3736439", DecisionAction.SKIP, REVIEWER, "cli")
    counters = run(queue, site, clock)
    assert counters.claimed == 0
    assert wiki.write_count() == 0 and depicts_on_wiki(wiki, 10004) == []
    assert states(queue) == {(10004, "Q146"): "proposed", (10004, "Q144"): "rejected",
                             (10004, "Q3736439"): "proposed"}


def test_present_and_more_specific_items_are_skipped(wiki, site, queue, clock) -> None:
    approve(queue, 10001, "Q146")  # already there
    approve(queue, 10001, "Q729")  # animal: house cat (2 hops below) is there
    approve(queue, 10002, "Q39201")  # pet: dog (1 hop below) is there
    approve(queue, 10002, "Q3736439")  # duck: unrelated, written
    counters = run(queue, site, clock)

    assert states(queue) == {(10001, "Q146"): "write_skipped", (10001, "Q729"): "write_skipped",
                             (10002, "Q39201"): "write_skipped", (10002, "Q3736439"): "written"}
    reasons = {(r["page_id"], r["qid"]): r["error"] for r in edit_rows(queue)}
    assert reasons[(10001, "Q146")] == "Q146 is already depicted"
    assert reasons[(10001, "Q729")].startswith("a more specific item is already depicted: Q146 (2 hop")
    assert reasons[(10002, "Q39201")].startswith("a more specific item is already depicted: Q144 (1 hop")
    assert [e.entity for e in wiki.edits] == ["M10002"]
    assert targets(depicts_on_wiki(wiki, 10001)) == ["Q146"]
    assert counters.skipped == {"Q… is already depicted": 1, "a more specific item is already depicted": 2}


def test_without_a_hierarchy_the_generic_item_would_be_written(wiki, site, queue, clock) -> None:
    # The counterpart of the test above: the skip really comes from ancestors_of.
    approve(queue, 10001, "Q729")
    run(queue, site, clock, lookup=lambda qid: {})
    assert states(queue)[(10001, "Q729")] == "written"


def test_items_outside_the_label_set_use_wikidata_for_the_hierarchy(wiki, site, queue, clock) -> None:
    from wikivel_bot.commons.site import open_items
    from wikivel_bot.config import SiteSettings

    approve(queue, 10001, "Q729")
    # The one Wikidata client, on the API URL of the site's items repository (the wiki itself).
    lookup = hierarchy_lookup(label_set=set(), items=open_items(SiteSettings(), site))  # an empty label set
    assert lookup("Q146")["Q729"] == 2  # house cat → mammal → animal, read from the wiki
    run(queue, site, clock, lookup=lookup)
    assert states(queue)[(10001, "Q729")] == "write_skipped"
    assert wiki.write_count() == 0


def test_opted_out_protected_and_deleted_files_are_skipped(wiki, site, queue, clock) -> None:
    expected = {
        10027: "file page opts out of bots ({{bots}}/{{nobots}})",  # {{nobots}}
        10028: "file page opts out of bots ({{bots}}/{{nobots}})",  # {{bots|deny=WikivelBot}}
        10026: "file page is edit-protected",  # sysop-only; the bot is no sysop
        10029: "file page deleted",
    }
    for page_id in expected:
        approve(queue, page_id, "Q146")
    counters = run(queue, site, clock)
    assert wiki.write_count() == 0
    assert {k: v for k, v in states(queue).items()} == {(p, "Q146"): "write_skipped" for p in expected}
    rows = edit_rows(queue)
    assert {r["page_id"]: r["error"] for r in rows} == expected
    assert {(r["outcome"], r["batch_id"]) for r in rows} == {("skipped", BATCH)}
    assert counters.skipped == {"file page opts out of bots ({{bots}}/{{nobots}})": 2,
                                "file page is edit-protected": 1, "file page deleted": 1}


def test_protection_levels_the_bot_passes_are_written_and_others_skipped(wiki, site, queue, clock) -> None:
    # pywikibot's level -> right map against the rights the wiki gives the bot: it holds
    # editsemiprotected (bot group), not editprotected (sysop) nor a level's unknown right.
    levels = {10004: "autoconfirmed", 10001: "sysop", 10005: "editautoreviewprotected"}
    for page_id, level in levels.items():
        wiki.store.page_by_id(page_id).protection = [{"type": "edit", "level": level, "expiry": "infinity"}]
        approve(queue, page_id, "Q146")
    run(queue, site, clock)
    assert {p: s for (p, _), s in states(queue).items()} == {
        10004: "written", 10001: "write_skipped", 10005: "write_skipped"}
    assert {r["page_id"]: r["error"] for r in edit_rows(queue) if r["outcome"] == "skipped"} == {
        10001: "file page is edit-protected", 10005: "file page is edit-protected"}


def test_a_file_deleted_after_approval_is_skipped(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q146")
    wiki.delete_file("File:Village church.png")
    run(queue, site, clock)
    assert wiki.write_count() == 0
    assert edit_rows(queue)[0]["error"] == "file page deleted"


def test_batch_ids_name_the_run() -> None:
    from datetime import datetime, timezone

    assert new_batch_id(datetime(2024, 5, 2, 9, 0, 1, tzinfo=timezone.utc)).startswith("b-20240502090001-")
    ids = {new_batch_id() for _ in range(20)}
    assert all(re.fullmatch(r"b-\d{14}-[0-9a-f]{4}", i) for i in ids)
    assert len(ids) > 1  # two runs in the same second still get different ids

