"""The store's follow-ups on every backend: which written statements a later decision no
longer wants as they are, claimed under the lease rules, and ended by their audit row."""

from __future__ import annotations

from tests.review_support import CAT, DOG, HUMAN, add_file
from wikivel_bot.types import DecisionAction, Failed, Skipped, Written

A, P, R = DecisionAction.APPROVE, DecisionAction.APPROVE_PROMINENT, DecisionAction.REJECT
BATCH = "b-20240502090000-aaaa"


def written(store, decisions):
    """File M1 with three approved pairs, claimed and then decided again as ``decisions``
    ({qid: action}) while their edit was in flight; the edit (revision 50) recorded."""
    add_file(store, 1, [CAT, DOG, HUMAN])
    for qid in ("Q146", "Q144", "Q5"):
        store.record_decision(1, qid, A, "Ann", "cli")
    claimed = {e.qid: e for e in store.claim_approved(10, "w")}
    for qid, action in decisions.items():
        store.record_decision(1, qid, action, "Bob", "web", override=True)
    for qid, edit in claimed.items():
        store.record_edit(edit.candidate_id, BATCH, Written(revid=50, statement_id=f"M1$guid-{qid}", rank="normal"),
                          store._now(), worker="w")
    return claimed


def test_owed_follow_ups_follow_the_last_decision(store) -> None:
    written(store, {"Q146": R, "Q144": P})
    owed = {f.qid: f for f in store.owed_follow_ups()}
    assert sorted(owed) == ["Q144", "Q146"]  # Q5 is as decided
    assert (owed["Q146"].wanted, owed["Q146"].decision()) == ("remove", "rejected by Bob")
    assert (owed["Q144"].wanted, owed["Q144"].decision()) == ("preferred", "switched to prominent by Bob")
    assert (owed["Q146"].statement_id, owed["Q146"].batch_id, owed["Q146"].revid) == ("M1$guid-Q146", BATCH, 50)


def test_claimed_once_and_ended_by_the_audit_row(store) -> None:
    written(store, {"Q146": R, "Q144": P})
    first = store.claim_follow_ups(10, "x")
    assert len(first) == 2 and store.claim_follow_ups(10, "y") == []  # held by x
    by_qid = {f.qid: f for f in first}
    assert all(store.confirm_follow_up(f, "x") for f in first)
    assert not store.confirm_follow_up(by_qid["Q146"], "y")
    store.record_follow_up(by_qid["Q146"], Written(revid=51, statement_id="M1$guid-Q146"), store._now(), "follow-up",
                           worker="x")
    store.record_follow_up(by_qid["Q144"], Failed("server: no answer", retry_after=60.0), store._now(), "follow-up",
                           worker="x")
    assert [f.qid for f in store.owed_follow_ups()] == ["Q144"]  # the transient failure stays owed
    assert store.claim_follow_ups(10, "y") == []  # ... after its retry time
    store.record_follow_up(by_qid["Q144"], Skipped("changed by someone else"), store._now(), "follow-up")
    assert store.owed_follow_ups() == [] and store.claims() == []


def test_a_new_decision_ends_the_claim(store) -> None:
    claimed = written(store, {"Q146": R})
    (item,) = store.claim_follow_ups(10, "x")
    store.undo_decision(_newest_decision(store, claimed["Q146"].candidate_id))  # back to approved (Ann's)
    assert not store.confirm_follow_up(item, "x")
    assert store.owed_follow_ups() == []  # approved again: the statement is wanted


def _newest_decision(store, candidate_id):
    from sqlalchemy import func, select

    from wikivel_bot.queue.tables import decisions

    with store.transaction() as conn:
        return conn.execute(select(func.max(decisions.c.id)).where(decisions.c.candidate_id == candidate_id)).scalar()
