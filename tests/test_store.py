"""The store contract: the same tests on SQLite (file and memory), PostgreSQL and MariaDB."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.db_support import open_store
from wikivel_bot.errors import IllegalTransition, LeaseLost, NotFound, UsageError
from wikivel_bot.queue import migrate
from wikivel_bot.queue.store import Store
from wikivel_bot.types import (
    Candidate,
    CandidateState,
    Cursor,
    DecisionAction,
    Depiction,
    DryRun,
    Failed,
    FileState,
    MediaFile,
    Skipped,
    Upload,
    Written,
)

T0 = datetime(2026, 11, 1, 12, 0, 0, tzinfo=timezone.utc)


def upload(page_id: int, title: str = "", seconds: int = 0) -> Upload:
    return Upload(
        page_id=page_id,
        title=title or f"File:Example {page_id}.jpg",
        timestamp=T0 + timedelta(seconds=seconds),
        uploader="Alice",
        log_id=1000 + page_id,
        sha1="a" * 40,
        mime="image/jpeg",
        size=12345,
        width=800,
        height=600,
    )


def candidate(qid: str, score: float = 0.5, rank: int = 1) -> Candidate:
    return Candidate(
        qid=qid, score=score, rank=rank, linker="zero-shot", linker_version="1",
        labelset_hash="h" * 16, evidence={"notes": ["test"]},
    )


def linked_file(store: Store, page_id: int, qids: list) -> int:
    """Enqueue, fetch and link one file; returns its row id."""
    store.enqueue([upload(page_id)])
    (work,) = store.claim_files(FileState.DISCOVERED, 1, "w")
    store.mark_fetched(work.id, MediaFile(page_id=page_id, title=work.title, revid=7))
    store.claim_files(FileState.FETCHED, 1, "w")
    store.save_candidates(work.id, [candidate(q, rank=i + 1) for i, q in enumerate(qids)])
    return work.id


def test_enqueue_is_idempotent_by_page_id(store: Store) -> None:
    assert store.enqueue([upload(1), upload(2), upload(1)]) == 2
    assert store.enqueue([upload(2), upload(3)]) == 1
    assert store.counts()["files"]["discovered"] == 3


def test_enqueue_keeps_unicode_titles(store: Store) -> None:
    title = "File:Église Saint-Étienne — 東京タワー 🐈.jpg"
    store.enqueue([upload(5, title=title)])
    (work,) = store.claim_files(FileState.DISCOVERED, 10, "w")
    assert work.title == title


def test_ineligible_uploads_are_recorded_with_reason_and_never_claimed(store: Store) -> None:
    store.enqueue([upload(1), upload(2)], ineligible={2: "mime image/x-xcf not linkable"})
    counts = store.counts()["files"]
    assert counts["discovered"] == 1 and counts["ineligible"] == 1
    claimed = store.claim_files(FileState.DISCOVERED, 10, "w")
    assert [w.page_id for w in claimed] == [1]


def test_cursor_is_saved_with_the_batch(store: Store) -> None:
    assert store.get_cursor("upload-log") is None
    store.enqueue([upload(1)], cursor=("upload-log", Cursor(T0, 1001)))
    assert store.get_cursor("upload-log") == Cursor(T0.replace(tzinfo=None), 1001)
    store.set_cursor("upload-log", Cursor(T0 + timedelta(seconds=5), 1002))
    assert store.all_cursors()["upload-log"].log_id == 1002


def test_claim_hands_out_each_row_once_until_the_lease_expires(db_url: str, store: Store) -> None:
    store.enqueue([upload(i) for i in range(1, 6)])
    first = store.claim_files(FileState.DISCOVERED, 3, "a")
    second = store.claim_files(FileState.DISCOVERED, 3, "b")
    assert [w.page_id for w in first] == [1, 2, 3]
    assert [w.page_id for w in second] == [4, 5]
    assert store.claim_files(FileState.DISCOVERED, 3, "c") == []
    # A worker that died: once its lease is over, its rows come back, attempts counted.
    later = Store(store.engine, claim_lease_s=60, clock=lambda: datetime.utcnow() + timedelta(hours=1))
    again = later.claim_files(FileState.DISCOVERED, 10, "d")
    assert sorted(w.page_id for w in again) == [1, 2, 3, 4, 5]
    assert all(w.attempts == 2 for w in again)


def test_release_gives_rows_back(store: Store) -> None:
    store.enqueue([upload(1)])
    (work,) = store.claim_files(FileState.DISCOVERED, 1, "a")
    store.release_files([work.id])
    assert [w.page_id for w in store.claim_files(FileState.DISCOVERED, 1, "b")] == [1]


def test_fetched_media_round_trips(store: Store) -> None:
    store.enqueue([upload(9)])
    (work,) = store.claim_files(FileState.DISCOVERED, 1, "w")
    media = MediaFile(
        page_id=9, title=work.title, thumb_url="http://x/thumb.jpg", description="Ein Hund",
        categories=("Dogs", "Parks"), depicts=(Depiction("Q144", "preferred"),), revid=42,
        protected=True, bots_allowed=False,
    )
    store.mark_fetched(work.id, media)
    (fetched,) = store.claim_files(FileState.FETCHED, 1, "w")
    assert fetched.media == media


def test_illegal_file_moves_are_refused(store: Store) -> None:
    store.enqueue([upload(1)], ineligible={1: "too small"})
    file_id = store.file_id_of(1)
    with pytest.raises(IllegalTransition):
        store.mark_fetched(file_id, MediaFile(page_id=1, title="File:Example 1.jpg"))
    with pytest.raises(IllegalTransition):
        store.save_candidates(file_id, [candidate("Q146")])
    with pytest.raises(NotFound):
        store.file_id_of(999)


def test_save_candidates_moves_file_to_linked(store: Store) -> None:
    linked_file(store, 1, ["Q146", "Q144"])
    counts = store.counts()
    assert counts["files"]["linked"] == 1
    assert counts["candidates"]["proposed"] == 2


def test_rejection_is_permanent_across_relinks(store: Store) -> None:
    file_id = linked_file(store, 1, ["Q146", "Q144"])
    store.record_decision(1, "Q146", DecisionAction.REJECT, "Bob", "cli")
    assert store.rejected_items(file_id) == {"Q146"}
    # The linker runs again (new model) and proposes the rejected item once more.
    saved = store.save_candidates(file_id, [candidate("Q146", 0.9), candidate("Q5", 0.4)])
    assert saved == 1
    assert store.rejected_items(file_id) == {"Q146"}
    assert store.counts()["candidates"]["rejected"] == 1


def test_settle_files_writes_a_block_in_one_go_with_each_files_checks(store: Store) -> None:
    from wikivel_bot.queue.store import FileOutcome

    relinked = linked_file(store, 1, ["Q146", "Q144"])
    store.record_decision(1, "Q146", DecisionAction.REJECT, "Bob", "cli")
    store.enqueue([upload(p) for p in (2, 3, 4, 5)])
    works = {w.page_id: w.id for w in store.claim_files(FileState.DISCOVERED, 4, "backfill:t")}
    store.claim_files(FileState.LINKED, 1, "backfill:t")
    media = MediaFile(page_id=2, title="File:Example 2.jpg", revid=9)
    results = store.settle_files([
        FileOutcome(works[2], FileState.LINKED, media=media, candidates=[candidate("Q5"), candidate("Q7", rank=2)]),
        FileOutcome(relinked, FileState.LINKED, media=MediaFile(page_id=1, title="File:Example 1.jpg"),
                    candidates=[candidate("Q146", 0.9), candidate("Q5", 0.4)]),
        FileOutcome(works[3], FileState.UNAVAILABLE, reason="corrupt: truncated"),
        FileOutcome(works[4], FileState.INELIGIBLE, reason="too small: 10x10"),
        FileOutcome(works[5], None),
        FileOutcome(works[3], FileState.INELIGIBLE, reason="twice"),
    ])
    assert results[:5] == [2, 1, 0, 0, 0]  # the rejected Q146 is not proposed again
    assert "given twice" in results[5]
    assert store.rejected_items(relinked) == {"Q146"}
    counts = {name: {k: n for k, n in by_state.items() if n} for name, by_state in store.counts().items()}
    assert counts["files"] == {"linked": 2, "unavailable": 1, "ineligible": 1, "discovered": 1}
    assert counts["candidates"] == {"proposed": 4, "rejected": 1}
    assert store.claims() == []  # every claim of the block given back
    # Written again (a resumed run): nothing new, an illegal move is refused, the rest goes on.
    again = store.settle_files([
        FileOutcome(works[2], FileState.LINKED, candidates=[candidate("Q5"), candidate("Q7", rank=2)]),
        FileOutcome(works[4], FileState.LINKED, media=media, candidates=[candidate("Q8")]),
    ])
    assert again[0] == 2 and "cannot move from ineligible" in again[1]
    assert {k: n for k, n in store.counts()["candidates"].items() if n} == {"proposed": 4, "rejected": 1}
    with pytest.raises(UsageError):
        store.settle_files([FileOutcome(works[5], FileState.LINKED, media=media, candidates=[candidate("146")])])
    assert store.counts()["files"]["discovered"] == 1


def test_decision_on_unproposed_item_creates_the_pair(store: Store) -> None:
    file_id = linked_file(store, 1, ["Q146"])
    store.record_decision(1, "Q3305213", DecisionAction.REJECT, "Bob", "cli")
    assert store.rejected_items(file_id) == {"Q3305213"}


def test_decisions_validate_input(store: Store) -> None:
    linked_file(store, 1, ["Q146"])
    with pytest.raises(UsageError):
        store.record_decision(1, "146", DecisionAction.APPROVE, "Bob", "cli")
    with pytest.raises(UsageError):
        store.record_decision(1, "Q146", DecisionAction.APPROVE, "", "cli")
    with pytest.raises(NotFound):
        store.record_decision(404, "Q146", DecisionAction.APPROVE, "Bob", "cli")


def test_undo_restores_previous_state(store: Store) -> None:
    file_id = linked_file(store, 1, ["Q146"])
    decision = store.record_decision(1, "Q146", DecisionAction.REJECT, "Bob", "terminal")
    store.undo_decision(decision)
    assert store.rejected_items(file_id) == set()
    assert store.counts()["candidates"]["proposed"] == 1
    with pytest.raises(NotFound):
        store.undo_decision(decision)


def test_approved_pairs_are_claimed_for_writing_with_their_reviewer(store: Store) -> None:
    linked_file(store, 1, ["Q146", "Q144"])
    store.record_decision(1, "Q146", DecisionAction.APPROVE_PROMINENT, "Bob", "terminal")
    store.record_decision(1, "Q144", DecisionAction.SKIP, "Bob", "terminal")
    (edit,) = store.claim_approved(10, "writer")
    assert (edit.qid, edit.prominent, edit.reviewer, edit.mid) == ("Q146", True, "Bob", "M1")
    assert store.claim_approved(10, "writer-2") == []


def test_approved_pairs_are_claimed_by_whole_files(store: Store) -> None:
    """The writer makes one edit per file: a file's claimable pairs come together, past the
    limit; a pair approved after the claim is left for the file's next edit."""
    linked_file(store, 1, ["Q146", "Q144", "Q5"])
    linked_file(store, 2, ["Q146", "Q3736439"])
    for page_id, qid in ((1, "Q146"), (2, "Q146"), (1, "Q144"), (2, "Q3736439")):
        store.record_decision(page_id, qid, DecisionAction.APPROVE, "Bob", "cli")
    first = store.claim_approved(1, "A")
    assert [(e.page_id, e.qid) for e in first] == [(1, "Q146"), (1, "Q144")]
    store.record_decision(1, "Q5", DecisionAction.APPROVE, "Bob", "cli")
    assert sorted((e.page_id, e.qid) for e in store.claim_approved(5, "B")) == [
        (1, "Q5"), (2, "Q146"), (2, "Q3736439")]


def test_an_edit_that_was_made_is_recorded_whatever_happened_to_the_pair(store: Store) -> None:
    """A reject that arrives while the edit is in flight: the Written is recorded (every bot
    edit is in the audit) and the pair keeps the reviewer's state; anything else a writer
    that lost the pair would record is refused."""
    linked_file(store, 1, ["Q146", "Q144"])
    for qid in ("Q146", "Q144"):
        store.record_decision(1, qid, DecisionAction.APPROVE, "Bob", "cli")
    written, skipped = store.claim_approved(5, "w")
    for edit in (written, skipped):
        store.record_decision(1, edit.qid, DecisionAction.REJECT, "Bob", "web")
    state = store.record_edit(written.candidate_id, "b-1", Written(revid=7, statement_id="M1$x"), T0,
                              worker="w")
    assert state is CandidateState.REJECTED
    with pytest.raises(LeaseLost):
        store.record_edit(skipped.candidate_id, "b-1", Skipped("present"), T0, worker="w")
    (row,) = store.audit_rows(batch_id="b-1")
    assert (row["qid"], row["outcome"], row["revid"], row["statement_id"]) == ("Q146", "written", 7, "M1$x")
    assert store.counts()["candidates"]["rejected"] == 2
    assert store.claims() == []


@pytest.mark.parametrize(
    "outcome, state, edit_outcome",
    [
        (Written(revid=99, statement_id="M1$abc"), CandidateState.WRITTEN, "written"),
        (Skipped("already present"), CandidateState.WRITE_SKIPPED, "skipped"),
        (Failed("protectedpage"), CandidateState.WRITE_FAILED, "failed"),
    ],
)
def test_edit_outcomes_move_the_pair(store: Store, outcome, state, edit_outcome) -> None:
    linked_file(store, 1, ["Q146"])
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Bob", "cli")
    (edit,) = store.claim_approved(1, "w")
    assert store.record_edit(edit.candidate_id, "batch-1", outcome, T0) is state
    assert store.counts()["candidates"][state.value] == 1
    assert store.claim_approved(1, "w") == []
    with pytest.raises(IllegalTransition):
        store.record_decision(1, "Q146", DecisionAction.REJECT, "Bob", "cli")
    (row,) = store.audit_rows(batch_id="batch-1")
    assert (row["outcome"], row["qid"], row["reviewer"], row["page_id"]) == (edit_outcome, "Q146", "Bob", 1)
    assert row["revid"] == getattr(outcome, "revid", None)


def test_a_dry_run_keeps_the_approval_for_a_real_write(store: Store) -> None:
    """A simulated write is an audit record; the pair stays approved, a dry-run
    claimer does not take it again, a real writer does, and a new approval re-arms it."""
    linked_file(store, 1, ["Q146"])
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Bob", "cli")
    (edit,) = store.claim_approved(1, "dry", dry_run=True)
    assert store.record_edit(edit.candidate_id, "batch-dry", DryRun("summary"), T0) is CandidateState.APPROVED
    assert store.counts()["candidates"]["approved"] == 1
    assert store.claim_approved(1, "dry", dry_run=True) == []  # not simulated every cycle
    (row,) = store.audit_rows(batch_id="batch-dry")
    assert (row["outcome"], row["attempt"]) == ("dry_run", 1)
    # The reviewer may still change their mind, and a new approval is simulated afresh.
    store.record_decision(1, "Q146", DecisionAction.APPROVE_PROMINENT, "Bob", "cli")
    (again,) = store.claim_approved(1, "dry", dry_run=True)
    store.release_candidates([again.candidate_id], "dry")
    (real,) = store.claim_approved(1, "real")
    assert (real.candidate_id, real.prominent, real.attempts) == (edit.candidate_id, True, 0)
    assert store.record_edit(real.candidate_id, "batch-real", Written(revid=5), T0) is CandidateState.WRITTEN


def test_a_lease_is_confirmed_renewed_and_released(db_url: str) -> None:
    """A writer keeps its lease alive; a lost lease is detected before the edit;
    released pairs are claimable at once; `claims()` says who holds what until when."""
    from tests.writer_support import Clock

    clock = Clock()
    store = open_store(db_url, claim_lease_s=60, clock=clock)
    if db_url.startswith("sqlite"):
        migrate.upgrade(store.engine)
    try:
        linked_file(store, 1, ["Q146", "Q144", "Q5"])
        for qid in ("Q146", "Q144", "Q5"):
            store.record_decision(1, qid, DecisionAction.APPROVE, "Bob", "cli")
        first, second, third = store.claim_approved(3, "A")
        (held,) = store.claims()
        assert (held["worker"], held["count"], held["table"]) == ("A", 3, "candidates")
        assert held["expires_at"] == clock() + timedelta(seconds=60)

        clock.advance(50)
        assert store.confirm_claim(first.candidate_id, "A")
        assert store.renew_claims("A", candidate_ids=[e.candidate_id for e in (first, second, third)]) == 3
        clock.advance(50)  # 100 s after the claim, 50 after the renewal: still A's
        assert store.claim_approved(3, "B") == []

        clock.advance(61)  # A stalled without renewing: B may take the pairs over
        taken = store.claim_approved(1, "B")  # a whole file: the writer makes one edit of it
        assert [t.candidate_id for t in taken] == [first.candidate_id, second.candidate_id, third.candidate_id]
        assert not store.confirm_claim(first.candidate_id, "A"), "A must not edit B's pair"
        assert store.confirm_claim(first.candidate_id, "B")

        # A holds nothing any more; B gives back what it did not handle: C can take it at
        # once, no lease to wait for.
        assert store.release_candidates([second.candidate_id, first.candidate_id], "A") == 0
        assert store.release_candidates([second.candidate_id], "B") == 1
        assert [t.candidate_id for t in store.claim_approved(5, "C")] == [second.candidate_id]
        assert store.release_claims_of("B") == 2 and store.release_claims_of("C") == 1
        assert store.claims() == []
    finally:
        store.close()


def test_transient_failure_is_retried_after_its_delay_then_given_up(store: Store) -> None:
    linked_file(store, 1, ["Q146"])
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Bob", "cli")
    (edit,) = store.claim_approved(1, "w")
    state = store.record_edit(edit.candidate_id, "b", Failed("maxlag", retry_after=600), T0, max_attempts=2)
    assert state is CandidateState.APPROVED
    assert store.claim_approved(1, "w") == []  # not before its retry time
    later = Store(store.engine, clock=lambda: datetime.utcnow() + timedelta(hours=1))
    (retry,) = later.claim_approved(1, "w")
    assert retry.attempts == 1
    state = later.record_edit(retry.candidate_id, "b", Failed("maxlag", retry_after=600), T0, max_attempts=2)
    assert state is CandidateState.WRITE_FAILED


def test_counts_list_every_state(store: Store) -> None:
    counts = store.counts()
    assert set(counts["files"]) == {s.value for s in FileState}
    assert set(counts["candidates"]) == {s.value for s in CandidateState}
    assert sum(counts["files"].values()) == 0


def test_skip_of_a_never_proposed_pair_is_refused(store: Store) -> None:
    file_id = linked_file(store, 1, ["Q146"])
    with pytest.raises(NotFound, match="never proposed"):
        store.record_decision(1, "Q42", DecisionAction.SKIP, "Bob", "cli")
    assert store.rejected_items(file_id) == set()
    assert store.counts()["candidates"]["proposed"] == 1


# -- the evidence cache ------------------------------------------------------------------


def test_evidence_cache_keeps_items_and_no_item_until_they_expire(store: Store) -> None:
    later = T0 + timedelta(days=30)
    written = store.put_cached({"category:Eiffel Tower": "Q243", "category:Unlinked": None,
                                "link:dewiki:Eiffelturm": "Q243"}, later)
    assert written == 3
    asked = ["category:Eiffel Tower", "category:Unlinked", "category:Never asked", "link:dewiki:Eiffelturm"]
    assert store.get_cached(asked, T0) == {
        "category:Eiffel Tower": "Q243", "category:Unlinked": None, "link:dewiki:Eiffelturm": "Q243"}
    # at and after the expiry the entries are gone: they must be asked again
    assert store.get_cached(asked, later) == {}
    assert store.get_cached(asked, later.replace(tzinfo=None) - timedelta(seconds=1)) != {}


def test_evidence_cache_overwrites_an_entry_and_renews_its_expiry(store: Store) -> None:
    store.put_cached({"category:Mallard": None}, T0 + timedelta(days=1))
    store.put_cached({"category:Mallard": "Q25348"}, T0 + timedelta(days=60))
    assert store.get_cached(["category:Mallard"], T0 + timedelta(days=30)) == {"category:Mallard": "Q25348"}


def test_evidence_cache_takes_many_keys_and_any_script(store: Store) -> None:
    rows = {f"category:Kategorie {i} — Ünïcödé 東京": f"Q{i + 1}" for i in range(1200)}
    store.put_cached(rows, T0 + timedelta(days=1))
    assert store.get_cached(list(rows), T0) == rows
    # a key longer than the column is not cached (asked again next time), never an error
    assert store.put_cached({"category:" + "x" * 600: "Q1"}, T0 + timedelta(days=1)) == 0
    assert store.get_cached(["category:" + "x" * 600], T0) == {}
