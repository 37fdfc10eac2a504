"""Another account adds the same item while the bot's edit is in flight: the item is once on
the file.

The bot's ``wbeditentity`` has reached the wiki, which holds it before doing anything (the
``timeout`` fault stalls a request before its module runs); meanwhile another account saves
``P180 = Q144`` on the file; then the wiki carries the bot's edit out against the base
revision it names, as Wikibase does:

* a file with structured data: the change is patched onto the other account's revision, and
  the answer — the entity as built on the base revision (``EditEntity::modifyEntity``) —
  shows Q144 once. The writer re-reads the file because the answer warns
  ``wikibase-conflict-patched``, sees Q144 twice and removes its own statement again;
* a file without structured data: the base has no MediaInfo, Wikibase creates the entity
  afresh and cannot save it over the one the other account made (``failed-save``); the
  writer re-reads, tries once more, and writes only the item that is not there yet.

And when the patched edit's answer is lost (held past the read timeout), the re-read that
finds the bot's statement on the file, and so records the edit, shows the twin too.

Every step waits for an event (the wiki holding the request), never for time. Real pywikibot
over HTTP against the local test wiki, a real SQLite queue.
"""

from __future__ import annotations

import threading

import pytest

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    ancestors_of,
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

BATCH = "b-20240502090000-f1f1"
OTHER = "SDC Helper"
HANG_GUARD_S = 120.0  # only a guard against a hang: the waits below are for events
WITH_SDC = 10005  # Mallard on pond.jpg: P180 = Q25348
WITHOUT_SDC = 10004  # Village church.png: no structured data


def theirs(page_id: int) -> str:
    return f"M{page_id}$00000000-0000-4000-8000-0000000a0144"


def other_account_adds_q144(wiki, page_id: int) -> None:
    """The other account's edit, saved in the wiki's store (its first MediaInfo if none)."""
    page = wiki.store.entity_page(f"M{page_id}")
    with wiki.store.lock:
        data = wiki.store.entity_data(page) or {"type": "mediainfo", "id": f"M{page_id}", "labels": {},
                                                 "descriptions": {}, "statements": {}}
        data.setdefault("statements", {}).setdefault("P180", []).append({
            "mainsnak": {"snaktype": "value", "property": "P180",
                         "datavalue": {"value": {"entity-type": "item", "numeric-id": 144, "id": "Q144"},
                                       "type": "wikibase-entityid"}},
            "type": "statement", "id": theirs(page_id), "rank": "normal"})
        wiki.store.set_entity(page, data, user=OTHER, comment="/* wbeditentity-update:0| */")


def while_in_flight(wiki, page_id: int, action) -> threading.Thread:
    """Hold the bot's first ``wbeditentity`` on the file at the wiki, run ``action`` while it
    is held, then let the wiki carry it out."""
    fault = wiki.faults.add("wbeditentity", "timeout", times=1, title=f"M{page_id}", seconds=HANG_GUARD_S)

    def act() -> None:
        if fault.holding.wait(HANG_GUARD_S):
            action()
        fault.release()

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def patient_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """pywikibot waits for the held answer as long as the hang guard: the test is about the
    wiki's answer, never about a read timeout on a loaded machine."""
    from pywikibot import config

    monkeypatch.setattr(config, "socket_timeout", (30.0, HANG_GUARD_S))


def on_file(wiki, page_id: int, qid: str) -> list:
    return [s for s in depicts_on_wiki(wiki, page_id) if targets([s]) == [qid]]


def test_an_item_added_in_flight_on_a_file_with_structured_data_is_once_on_it(wiki, site, queue, clock,
                                                                                patient_reads, capfd) -> None:
    approve_all(queue, WITH_SDC, ["Q144", "Q146"])
    thread = while_in_flight(wiki, WITH_SDC, lambda: other_account_adds_q144(wiki, WITH_SDC))

    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                              clock=clock)
    thread.join(HANG_GUARD_S)

    assert [s["id"] for s in on_file(wiki, WITH_SDC, "Q144")] == [theirs(WITH_SDC)]
    assert len(on_file(wiki, WITH_SDC, "Q146")) == 1 and len(on_file(wiki, WITH_SDC, "Q25348")) == 1
    edit, removal = [e for e in wiki.edits if e.user == "WikivelBot"]
    assert edit.conflict_patched  # patched onto the other account's revision
    assert removal.action == "wbremoveclaims" and "second depicts [[d:Q144|Q144]]" in removal.summary
    assert (counters.written, counters.twins_removed) == (2, 1)
    # The writer acts on Wikibase's patch warning; pywikibot does not print it as one "of
    # unknown format" on the operator's terminal (one_shot).
    assert "wikibase-conflict-patched" not in capfd.readouterr().err
    rows = {(r["qid"], r["outcome"]): r for r in edit_rows(queue)}
    assert sorted(rows) == [("Q144", "reverted"), ("Q144", "written"), ("Q146", "written")]
    assert rows[("Q144", "reverted")]["statement_id"] == rows[("Q144", "written")]["statement_id"]
    assert rows[("Q144", "reverted")]["revid"] == removal.new_revid
    assert bot_revisions(wiki) == audited_revisions(queue)
    assert queue.owed_follow_ups() == [] and queue.claims() == []


def test_an_item_added_in_flight_on_a_file_without_structured_data_is_once_on_it(wiki, site, queue, clock,
                                                                                   patient_reads) -> None:
    approve_all(queue, WITHOUT_SDC, ["Q144", "Q146"])
    thread = while_in_flight(wiki, WITHOUT_SDC, lambda: other_account_adds_q144(wiki, WITHOUT_SDC))

    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                              clock=clock)
    thread.join(HANG_GUARD_S)

    assert [s["id"] for s in on_file(wiki, WITHOUT_SDC, "Q144")] == [theirs(WITHOUT_SDC)]
    assert len(on_file(wiki, WITHOUT_SDC, "Q146")) == 1
    sends = [r for r in wiki.requests if r.action == "wbeditentity"]
    assert [r.error for r in sends] == ["failed-save", None]  # refused, then once more
    (edit,) = [e for e in wiki.edits if e.user == "WikivelBot"]
    assert [c["mainsnak"]["datavalue"]["value"]["numeric-id"] for c in edit.data["claims"]["P180"]] == [146]
    assert (counters.written, counters.twins_removed) == (1, 0)
    assert states(queue)[(WITHOUT_SDC, "Q146")] == "written"
    skipped = [r for r in edit_rows(queue) if r["qid"] == "Q144"]
    assert [r["outcome"] for r in skipped] == ["skipped"] and "already" in skipped[0]["error"]
    assert bot_revisions(wiki) == audited_revisions(queue) == [edit.new_revid]
    assert queue.owed_follow_ups() == [] and queue.claims() == []


class AtLastCheck:
    """The queue as the writer sees it; ``hook`` runs once, after the writer's second
    ``confirm_claim`` (its last check before the request leaves)."""

    def __init__(self, store, hook) -> None:
        self._store, self._hook, self.calls = store, hook, 0

    def __getattr__(self, name):
        return getattr(self._store, name)

    def confirm_claim(self, candidate_id, worker):
        ok = self._store.confirm_claim(candidate_id, worker)
        self.calls += 1
        if self.calls == 2:
            self._hook()
        return ok


def test_a_patched_edit_whose_answer_was_lost_shows_its_twin_on_the_settling_re_read(
        wiki, site, queue, clock, monkeypatch) -> None:
    """The other account saves Q144 after the writer's last check; the wiki patches the bot's
    edit onto that revision and saves it, but its answer never reaches the writer (held past
    pywikibot's read timeout). The re-read that finds the bot's statement on the file — so the
    edit is recorded as written — also shows Q144 twice: the bot's own is removed again."""
    from tests.late_answers import short_read_timeout_for

    approve_all(queue, WITH_SDC, ["Q144"])
    held = wiki.faults.add("wbeditentity", "hold_response", times=1, title=f"M{WITH_SDC}",
                           seconds=HANG_GUARD_S)
    short_read_timeout_for(monkeypatch, held)
    store = AtLastCheck(queue, lambda: other_account_adds_q144(wiki, WITH_SDC))

    counters = write_approved(store, StatementWriter(site, BATCH, ancestors_of), batch_size=5, worker="test",
                              clock=clock)
    held.release()

    assert held.fired == 1 and len([r for r in wiki.requests if r.action == "wbeditentity"]) == 1
    assert [s["id"] for s in on_file(wiki, WITH_SDC, "Q144")] == [theirs(WITH_SDC)]
    edit, removal = [e for e in wiki.edits if e.user == "WikivelBot"]
    assert edit.conflict_patched and removal.action == "wbremoveclaims"
    assert (counters.written, counters.twins_removed) == (1, 1)
    assert sorted(r["outcome"] for r in edit_rows(queue)) == ["reverted", "written"]
    assert bot_revisions(wiki) == audited_revisions(queue)
    assert queue.owed_follow_ups() == [] and queue.claims() == []
