"""The web review's read queries on every backend (SQLite, PostgreSQL, MariaDB)."""

from __future__ import annotations

from datetime import datetime

from tests.review_support import CAT, DOG, HUMAN, add_file
from wikivel_bot.core.review_rules import ReviewFilter
from wikivel_bot.queue import web_queries
from wikivel_bot.queue.web_queries import QueueQuery
from wikivel_bot.types import CandidateState, DecisionAction, Written


def test_queue_page_file_detail_and_tallies(store) -> None:
    add_file(store, 11, [CAT, DOG], day=0)
    add_file(store, 12, [DOG, HUMAN], day=1)
    add_file(store, 13, [CAT], day=2)
    web_queries.ping(store)

    page, after = web_queries.queue_page(store, QueueQuery(), limit=2)
    assert [f.page_id for f in page] == [11, 12] and after is not None
    rest, last = web_queries.queue_page(store, QueueQuery(), after_id=after, limit=2)
    assert [f.page_id for f in rest] == [13] and last is None
    cats, _ = web_queries.queue_page(store, QueueQuery(item="Q146"))
    assert [(f.page_id, [c.qid for c in f.candidates]) for f in cats] == [(11, ["Q146"]), (13, ["Q146"])]
    band, _ = web_queries.queue_page(store, QueueQuery(ReviewFilter(min_score=0.6), max_score=0.85))
    assert [(f.page_id, [c.qid for c in f.candidates]) for f in band] == [(11, ["Q144"]), (12, ["Q144", "Q5"])]

    first = store.record_decision(11, "Q146", DecisionAction.APPROVE, "Ann", "web")
    store.record_decision(11, "Q144", DecisionAction.REJECT, "Bob", "terminal")
    detail = web_queries.file_detail(store, 11)
    assert detail is not None
    assert {c.qid: (c.state, c.reviewer) for c in detail.candidates} == {
        "Q146": (CandidateState.APPROVED, "Ann"), "Q144": (CandidateState.REJECTED, "Bob")}
    assert web_queries.file_detail(store, 99) is None
    assert web_queries.newest_decision(store, 11, "Q146", "Ann") == first
    assert web_queries.newest_decision(store, 11, "Q144", "Ann") is None  # Bob's, not Ann's
    assert web_queries.tally(store)["approve"] == 1 and web_queries.tally(store, "Bob")["reject"] == 1
    assert web_queries.tally(store, "Bob")["approve"] == 0
    # Waiting pairs per item, most first (ties by QID): Q146 on 13, Q144 on 12, Q5 on 12.
    assert web_queries.top_items(store) == [("Q144", 1, "dog"), ("Q146", 1, "house cat"), ("Q5", 1, "human")]

    flt = ReviewFilter()
    nxt = web_queries.file_after(store, flt, detail.file_id)
    assert nxt is not None and nxt.page_id == 12
    back = web_queries.file_after(store, flt, nxt.file_id, backwards=True)
    assert back is None  # 11 has nothing proposed any more

    (approved,) = store.claim_approved(5, "w")
    store.record_edit(approved.candidate_id, "b-1", Written(revid=77, statement_id="M11$x"), started_at=datetime(2026, 11, 1, 12, 0))
    (batch,) = web_queries.recent_batches(store)
    assert batch.batch_id == "b-1" and batch.outcomes == {"written": 1}


def test_pair_state(store) -> None:
    add_file(store, 21, [CAT])
    assert web_queries.pair_state(store, 21, "Q146") == (True, CandidateState.PROPOSED)
    assert web_queries.pair_state(store, 21, "Q144") == (True, None)
    assert web_queries.pair_state(store, 22, "Q146") == (False, None)
    store.record_decision(21, "Q146", DecisionAction.REJECT, "Ann", "web")
    assert web_queries.pair_state(store, 21, "Q146") == (True, CandidateState.REJECTED)
