"""A decision on a pair a writer holds is recorded and the reviewer is told what follows —
"being written now; it will be removed again" (or "its rank will be changed") — in the
store's answer, the terminal review, the CLI and the web API, instead of a silent success.

The store reads the writer's claim under the decision's own lock, before the UPDATE that
clears it, so the answer is exact for that moment (every backend).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from tests.db_support import open_store
from tests.review_support import CAT, DOG, HUMAN, add_file
from tests.web_support import (  # noqa: F401 - fixtures are used by name
    csrf_of,
    login,
    make_app,
    post_decision,
    seed,
    web_queue,
    webwiki,
)
from wikivel_bot.cli import main
from wikivel_bot.queue import migrate
from wikivel_bot.queue.store.decisions import RANK_CHANGED, REMOVED_AGAIN
from wikivel_bot.review.session import ReviewSession
from wikivel_bot.types import DecisionAction

A, P, R = DecisionAction.APPROVE, DecisionAction.APPROVE_PROMINENT, DecisionAction.REJECT


def test_the_store_says_when_a_writer_held_the_pair(store) -> None:
    add_file(store, 1, [CAT, DOG, HUMAN])
    for qid in ("Q146", "Q144", "Q5"):
        store.record_decision(1, qid, A, "Ann", "cli")
    assert store.record_decision(1, "Q146", P, "Ann", "cli").in_flight == ""  # nobody writes it
    store.claim_approved(10, "writer")  # the writer took all three

    assert store.record_decision(1, "Q146", A, "Ann", "cli").in_flight == RANK_CHANGED  # back to normal
    assert store.record_decision(1, "Q144", R, "Ann", "cli").in_flight == REMOVED_AGAIN
    approval = store.record_decision(1, "Q5", P, "Ann", "cli")
    assert approval.in_flight == RANK_CHANGED and int(approval) > 0
    # The decision cleared the claim: a second decision finds no writer.
    assert store.record_decision(1, "Q5", A, "Ann", "cli").in_flight == ""


def test_an_undo_of_an_approval_being_written_says_it_will_be_removed(store) -> None:
    add_file(store, 1, [CAT])
    approval = store.record_decision(1, "Q146", A, "Ann", "cli")
    store.claim_approved(10, "writer")
    assert store.undo_decision(approval).in_flight == REMOVED_AGAIN


def test_an_expired_claim_is_no_write_in_progress(store) -> None:
    add_file(store, 1, [CAT])
    store.record_decision(1, "Q146", A, "Ann", "cli")
    store.claim_approved(10, "writer")
    later = store._now() + store.claim_lease + timedelta(seconds=5)
    store._now = lambda: later  # the writer is gone: its lease ran out
    assert store.record_decision(1, "Q146", R, "Ann", "cli").in_flight == ""


def test_the_terminal_review_says_it_on_undo(store) -> None:
    add_file(store, 1, [CAT, DOG])
    session = ReviewSession(store, "Ann")
    session.start()
    session.decide(A)  # Q146 approved; the writer takes it at once
    store.claim_approved(10, "writer")
    session.undo()
    assert "M1 Q146 is being written now; it will be removed again" in session.message
    assert session.message.startswith("undone: Q146 on M1")


def test_the_cli_says_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG])
    store.record_decision(1, "Q146", A, "Ann", "cli")
    store.record_decision(1, "Q144", A, "Ann", "cli")
    store.claim_approved(10, "writer")

    result = CliRunner().invoke(main, ["--db-url", url, "review", "reject", "--file", "M1", "--item", "Q146",
                                       "--reviewer", "Ann"])
    assert result.exit_code == 0, result.output
    assert "M1 Q146 is being written now; it will be removed again" in result.output
    result = CliRunner().invoke(main, ["--db-url", url, "review", "approve-prominent", "--file", "M1",
                                       "--item", "Q144", "--reviewer", "Ann"])
    assert "M1 Q144 is being written now; its rank will be changed" in result.output
    result = CliRunner().invoke(main, ["--db-url", url, "review", "approve", "--file", "M1", "--item", "Q144",
                                       "--reviewer", "Ann"])
    assert "being written" not in result.output  # nobody holds it any more
    store.close()


def test_the_web_api_says_it(webwiki, web_queue) -> None:
    seed(web_queue)
    client = make_app(webwiki, web_queue).test_client()
    assert login(client, "Alice Uploader").status_code == 302
    token = csrf_of(client)
    assert post_decision(client, token, "M10001", "Q146", "approve").json.get("message") is None
    assert post_decision(client, token, "M10001", "Q144", "approve").status_code == 200
    web_queue.claim_approved(10, "writer")

    rejected = client.post("/api/decisions", headers={"X-CSRF-Token": token}, json={
        "file": "M10001", "item": "Q146", "action": "reject",
        "seen": {"state": "approved", "reviewer": "Alice Uploader", "prominent": False}})
    assert rejected.status_code == 200, rejected.json
    assert rejected.json["message"] == "M10001 Q146 is being written now; it will be removed again (decision recorded)"
    assert rejected.json["state"] == "rejected"
    undone = post_decision(client, token, "M10001", "Q144", "undo")
    assert undone.status_code == 200 and "Q144 is being written now; it will be removed again" in undone.json["message"]
