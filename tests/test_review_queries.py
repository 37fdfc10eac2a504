"""queue/reviews.py on every backend: the filters, pair status, title lookup, audit trail."""

from __future__ import annotations

from datetime import datetime

from tests.review_support import CAT, DOG, HUMAN, PARK, TABBY, T0, add_file
from wikivel_bot.core.review_rules import ReviewFilter
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.types import CandidateState, DecisionAction, Depiction, Written


def qids(store: Store, flt: ReviewFilter) -> dict:
    return {f.mid: [c.qid for c in f.candidates] for f in reviews.iter_review_files(store, flt)}


def test_files_come_oldest_first_with_evidence_and_media(store: Store) -> None:
    add_file(store, 2, [DOG, CAT], depicts=[Depiction("Q1", "preferred")], notes=["ancestor kept"])
    add_file(store, 1, [HUMAN])
    files = list(reviews.iter_review_files(store, ReviewFilter()))
    assert [f.mid for f in files] == ["M2", "M1"]  # queue order (files.id), not page id
    first = files[0]
    assert [c.qid for c in first.candidates] == ["Q144", "Q146"]  # linker rank
    assert (first.candidates[0].label, first.candidates[0].description) == ("dog", "domestic animal")
    assert first.candidates[0].notes == ("ancestor kept",)
    assert first.categories == ("Cats in Berlin",) and first.depicts == (Depiction("Q1", "preferred"),)
    assert first.thumb_url.endswith("/330px-x.jpg") and first.uploader == "Alice"
    assert reviews.count_review_files(store, ReviewFilter()) == 2


def test_filters(store: Store) -> None:
    add_file(store, 1, [CAT, DOG], uploader="Alice", day=0, categories=["Cats in Berlin"])
    add_file(store, 2, [HUMAN, PARK], uploader="Bob_Smith", day=3, categories=["Parks"], linker="naive-mlp")
    add_file(store, 3, [TABBY], uploader="Alice", day=10, categories=["Tabby cats"])
    assert qids(store, ReviewFilter(min_score=0.8)) == {"M1": ["Q146", "Q144"]}
    assert qids(store, ReviewFilter(category="category:parks")) == {"M2": ["Q5", "Q22698"]}
    assert qids(store, ReviewFilter(uploader="User:Bob Smith")) == {}  # stored as the log wrote it
    assert list(qids(store, ReviewFilter(uploader="Alice"))) == ["M1", "M3"]
    assert list(qids(store, ReviewFilter(linker="naive-mlp"))) == ["M2"]
    since = datetime(2026, 11, 2)
    assert list(qids(store, ReviewFilter(since=since, until=datetime(2026, 11, 5)))) == ["M2"]
    assert list(qids(store, ReviewFilter(page_ids=(3, 1)))) == ["M1", "M3"]
    assert reviews.count_review_files(store, ReviewFilter(category="Tabby cats")) == 1


def test_decided_pairs_and_dead_files_leave_the_review(store: Store) -> None:
    add_file(store, 1, [CAT, DOG])
    gone = add_file(store, 2, [HUMAN])
    store.record_decision(1, "Q146", DecisionAction.REJECT, "Ann", "cli")
    store.mark_unavailable(gone, "deleted")
    assert qids(store, ReviewFilter()) == {"M1": ["Q144"]}
    rejected = ReviewFilter(states=(CandidateState.REJECTED,))
    assert qids(store, rejected) == {"M1": ["Q146"]}


def test_walk_crosses_chunks(store: Store, monkeypatch) -> None:
    monkeypatch.setattr(reviews, "CHUNK", 1)
    for page_id in range(1, 8):
        add_file(store, page_id, [CAT], categories=["Cats"] if page_id % 2 else ["Dogs"])
    assert list(qids(store, ReviewFilter())) == ["M1", "M2", "M3", "M4", "M5", "M6", "M7"]
    assert list(qids(store, ReviewFilter(category="Dogs"))) == ["M2", "M4", "M6"]
    assert reviews.count_review_files(store, ReviewFilter(category="Cats")) == 4
    third = reviews.next_review_file(store, ReviewFilter(), after_id=store.file_id_of(2))
    assert third is not None and third.mid == "M3"


def test_pair_status_and_title_lookup(store: Store) -> None:
    add_file(store, 1, [CAT, DOG], title="File:Église Saint-Étienne.jpg")
    store.record_decision(1, "Q146", DecisionAction.APPROVE_PROMINENT, "Ann", "cli")
    store.record_decision(1, "Q144", DecisionAction.SKIP, "Ann", "cli")
    cat = reviews.pair_status(store, 1, "Q146")
    assert (cat.state, cat.prominent, cat.reviewer, cat.last_action) == (
        CandidateState.APPROVED, True, "Ann", DecisionAction.APPROVE_PROMINENT)
    assert reviews.pair_status(store, 1, "Q144").last_action is DecisionAction.SKIP
    assert reviews.pair_status(store, 1, "Q5") == reviews.PairStatus(file_known=True)
    assert not reviews.pair_status(store, 9, "Q5").file_known
    assert reviews.page_id_for_title(store, "Église Saint-Étienne.jpg") == 1
    assert reviews.page_id_for_title(store, "File:Nope.jpg") is None


def test_audit_events_merge_decisions_and_edits(store: Store) -> None:
    add_file(store, 1, [CAT, DOG])
    add_file(store, 2, [HUMAN])
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Ann", "terminal")
    store.record_decision(1, "Q144", DecisionAction.REJECT, "Bob", "import")
    store.record_decision(2, "Q5", DecisionAction.APPROVE, "Bob", "cli")
    for edit in store.claim_approved(10, "writer"):
        store.record_edit(edit.candidate_id, f"batch-{edit.page_id}", Written(revid=500 + edit.page_id,
                          statement_id=f"{edit.mid}$x"), T0)
    events = reviews.audit_events(store)
    assert [(e.kind, e.qid, e.action) for e in events] == [
        ("decision", "Q146", "approve"), ("decision", "Q144", "reject"), ("decision", "Q5", "approve"),
        ("edit", "Q146", "written"), ("edit", "Q5", "written"),
    ]
    batch = reviews.audit_events(store, batch_id="batch-1")
    assert [(e.kind, e.qid, e.who or e.batch_id, e.revid) for e in batch] == [
        ("decision", "Q146", "Ann", None), ("edit", "Q146", "batch-1", 501)]
    assert [e.qid for e in reviews.audit_events(store, page_id=2)] == ["Q5", "Q5"]
    assert [e.kind for e in reviews.audit_events(store, reviewer="Bob")] == ["decision", "decision", "edit"]
    assert [e.kind for e in reviews.audit_events(store, limit=2)] == ["edit", "edit"]
    assert events[-1].state == "written"
