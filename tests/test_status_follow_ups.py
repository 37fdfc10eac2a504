"""`status` counts the follow-up edits owed: statements the bot wrote that a later decision
(a reject, an undo, a switch of prominence made while the edit was in flight) no longer wants
as they are."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from tests.test_cli import cli
from tests.writer_support import approve
from wikivel_bot.queue import migrate, monitor
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction, Written


def test_status_counts_follow_ups_owed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    store = Store(engine)
    try:
        assert monitor.owed_follow_ups(store) == {"owed": 0, "remove": 0, "rank": 0}
        approve(store, 10004, "Q146")
        approve(store, 10046, "Q146")
        approve(store, 10001, "Q146")
        edits = {e.page_id: e for e in store.claim_approved(5, "writer")}
        now = datetime.now(timezone.utc)
        # Decisions that land while the edits are in flight; the edits are recorded all the same.
        store.record_decision(10004, "Q146", DecisionAction.REJECT, "Patroller Pat", "web")
        store.record_decision(10046, "Q146", DecisionAction.APPROVE_PROMINENT, "Patroller Pat", "web")
        for revid, page_id in enumerate((10004, 10046, 10001), start=7):
            store.record_edit(edits[page_id].candidate_id, "b-20240502090000-fa17",
                              Written(revid=revid, statement_id=f"M{page_id}$0000000{revid}-0000-4000-8000-"
                                      "000000000000", rank="normal"), now)
        assert monitor.owed_follow_ups(store) == {"owed": 2, "remove": 1, "rank": 1}
    finally:
        store.close()

    result = cli("status", env_extra={"WIKIVEL_DB_URL": url})
    assert result.returncode == 0, result.stderr
    assert ("follow-ups owed: 2 (1 to remove, 1 rank to change; the writer makes them on its "
            "next run)") in result.stdout
    doc = json.loads(cli("status", "--json", env_extra={"WIKIVEL_DB_URL": url}).stdout)
    assert doc["follow_ups"] == {"owed": 2, "remove": 1, "rank": 1}


def test_status_shows_edits_without_an_answer(tmp_path: Path) -> None:
    """A request noted before it left and not settled (its answer never came) is shown, and
    settled ones are not."""
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    store = Store(engine)
    try:
        approve(store, 10004, "Q146")
        approve(store, 10046, "Q146")
        edits = {e.page_id: e for e in store.claim_approved(5, "writer")}
        guids = {p: f"M{p}$00000007-0000-4000-8000-000000000000" for p in edits}
        for page_id, edit in edits.items():
            store.record_sending([(edit.candidate_id, guids[page_id])], "b-20240502090000-fa17", "writer")
        # One answered and recorded: settled; the other never answered.
        store.record_edit(edits[10046].candidate_id, "b-20240502090000-fa17",
                          Written(revid=7, statement_id=guids[10046], rank="normal"),
                          datetime.now(timezone.utc))
        (left,) = store.unsettled_sends()
        assert (left.page_id, left.statement_id) == (10004, guids[10004])
    finally:
        store.close()

    result = cli("status", env_extra={"WIKIVEL_DB_URL": url})
    assert result.returncode == 0, result.stderr
    assert "edits without an answer: 1 (oldest sent " in result.stdout
    doc = json.loads(cli("status", "--json", env_extra={"WIKIVEL_DB_URL": url}).stdout)
    assert doc["unsettled_edits"]["count"] == 1 and doc["unsettled_edits"]["oldest"].endswith("Z")
