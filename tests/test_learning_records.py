"""Decisions become training records (docs/learning.md, "Decisions as a dataset").

Through the real store on every backend: the decisions a reviewer makes (approve, prominent,
reject, skip, undo, a change of mind, a dry run, a write, a revert) and which of them reach
the records; then the rules on plain rows (excluded reviewers, per-reviewer caps), and the
date-ordered splits.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select

from tests.review_support import CAT, DOG, HUMAN, PARK, TABBY, add_file
from wikivel_bot.learning.dataset import build_from_decisions
from wikivel_bot.learning.records import Summary, build_records, counted_decisions, read_records
from wikivel_bot.learning.splits import SPLITS, assign_splits, parse_shares
from wikivel_bot.queue.learning_queries import DecisionRow, decision_rows, shown_files
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates
from wikivel_bot.types import DecisionAction, DryRun, Written

A = DecisionAction
T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _records(store: Store, **kwargs):
    summary = Summary()
    kept = counted_decisions(decision_rows(store), summary=summary, **kwargs)
    return {r.page_id: r for r in build_records(kept, shown_files(store, sorted({k.page_id for k in kept})))}, summary


def test_only_standing_human_decisions_become_records(store: Store) -> None:
    add_file(store, 1, [CAT, DOG, HUMAN, TABBY], day=0)
    store.record_decision(1, "Q146", A.APPROVE_PROMINENT, "Bob", "terminal")
    store.record_decision(1, "Q144", A.REJECT, "Bob", "web")
    store.record_decision(1, "Q5", A.SKIP, "Bob", "terminal")          # a skip says nothing
    undone = store.record_decision(1, "Q1050479", A.APPROVE, "Bob", "cli")
    store.undo_decision(undone)                                          # undone: gone
    add_file(store, 2, [CAT, DOG, PARK], day=1)
    store.record_decision(2, "Q146", A.APPROVE, "Carol", "cli")
    store.record_decision(2, "Q146", A.REJECT, "Carol", "cli")          # a change of mind: the later wins
    store.record_decision(2, "Q144", A.APPROVE, "Carol", "import")
    store.record_decision(2, "Q22698", A.APPROVE, "Carol", "bot")       # not from a person
    add_file(store, 3, [CAT, DOG], day=2)
    store.record_decision(3, "Q146", A.APPROVE, "Dan", "cli")
    store.record_decision(3, "Q144", A.APPROVE, "Dan", "cli")
    # A dry run of both approvals changes nothing; a real write of one keeps it an approval.
    for edit in store.claim_approved(10, "dry", dry_run=True):
        store.record_edit(edit.candidate_id, "batch-dry", DryRun("summary"), T0)
    edit = next(e for e in store.claim_approved(10, "w") if e.page_id == 3 and e.qid == "Q146")
    store.record_edit(edit.candidate_id, "batch-1", Written(revid=5, statement_id="M3$x"), T0)
    # The other one's statement was reverted on the wiki: no longer an approval to learn from.
    file_3 = store.file_id_of(3)
    with store.transaction() as conn:
        conn.execute(candidates.update().where(candidates.c.qid == "Q144",
                                               candidates.c.file_id == file_3).values(state="reverted"))

    add_file(store, 4, [CAT, DOG], day=3)                                # proposed, never decided
    records, summary = _records(store)
    assert sorted(records) == [1, 2, 3]   # the bot's own unreviewed suggestions are never labels
    one, two, three = records[1], records[2], records[3]
    assert (one.positives, one.prominent, one.negatives) == (("Q146",), ("Q146",), ("Q144",))
    assert [s["qid"] for s in one.shown] == ["Q146", "Q144", "Q5", "Q1050479"]   # the list it was shown
    assert one.shown[0]["label"] == "house cat" and one.shown[0]["score"] == 0.91
    assert one.description == "A cat on a sofa" and one.categories == ("Cats in Berlin",)
    assert one.thumb_url.endswith("330px-x.jpg") and one.reviewers == {"Q146": "Bob", "Q144": "Bob"}
    assert (two.positives, two.negatives) == (("Q144",), ("Q146",))
    assert (three.positives, three.negatives) == (("Q146",), ())
    assert summary.dropped == {"skip": 1, "replaced by a later decision": 1, "not from a person": 1,
                               "statement reverted": 1}
    assert summary.kept == 5 and summary.per_reviewer == {"Bob": 2, "Carol": 2, "Dan": 1}


def test_an_overridden_decision_is_dropped(store: Store) -> None:
    add_file(store, 1, [CAT, DOG], day=0)
    store.record_decision(1, "Q146", A.APPROVE, "Alice", "web")
    store.record_decision(1, "Q146", A.REJECT, "Olga", "web", override=True)   # an operator's override
    records, summary = _records(store)
    assert (records[1].positives, records[1].negatives, records[1].reviewers) == ((), ("Q146",), {"Q146": "Olga"})
    assert summary.dropped == {"replaced by a later decision": 1}


def test_a_reviewer_can_be_excluded(store: Store) -> None:
    add_file(store, 1, [CAT, DOG], day=0)
    store.record_decision(1, "Q146", A.APPROVE, "Bob", "cli")
    store.record_decision(1, "Q144", A.REJECT, "Mallory", "cli")
    records, summary = _records(store, exclude=("Mallory",))
    assert (records[1].positives, records[1].negatives) == (("Q146",), ())
    assert summary.dropped == {"excluded reviewer": 1}


def _row(i: int, reviewer: str, action: str = "approve", state: str = "approved") -> DecisionRow:
    return DecisionRow(i, 100 + i, f"File:{i}.jpg", "Q146", action, reviewer, "cli", T0 + timedelta(minutes=i),
                       state, T0 + timedelta(days=i))


def test_the_reviewer_cap_keeps_each_reviewers_newest_decisions() -> None:
    rows = [_row(i, "Prolific") for i in range(1, 11)] + [_row(20, "Occasional"), _row(21, "Occasional")]
    summary = Summary()
    kept = counted_decisions(rows, reviewer_cap=3, summary=summary)
    assert [r.decision_id for r in kept] == [8, 9, 10, 20, 21]
    assert summary.dropped == {"over the reviewer cap": 7}
    assert counted_decisions(rows, reviewer_cap=0) == rows   # 0 = no cap


def test_a_decision_the_pair_no_longer_reflects_is_dropped() -> None:
    # An approval whose pair is proposed again (e.g. an undo recorded elsewhere) or a
    # rejection on an approved pair: the decision does not stand.
    rows = [_row(1, "Bob", state="proposed"), _row(2, "Bob", action="reject", state="approved"),
            _row(3, "Bob", state="write_failed"), _row(4, "Bob", action="reject", state="rejected")]
    summary = Summary()
    assert [r.decision_id for r in counted_decisions(rows, summary=summary)] == [3, 4]
    assert summary.dropped == {"no longer as decided": 2}


def test_splits_follow_upload_dates_so_evaluation_is_later() -> None:
    rows = [_row(i, "Bob") for i in (7, 3, 9, 1, 5, 2, 8, 4, 6, 10)]
    records = assign_splits(build_records(rows, {}), (0.6, 0.2, 0.2))
    assert [r.split for r in records] == ["train"] * 6 + ["calibration"] * 2 + ["evaluation"] * 2
    latest = {s: max(r.uploaded_at for r in records if r.split == s) for s in SPLITS}
    earliest = {s: min(r.uploaded_at for r in records if r.split == s) for s in SPLITS}
    assert latest["train"] < earliest["calibration"] and latest["calibration"] < earliest["evaluation"]
    # A file is never on both sides: one record per file.
    assert len({r.page_id for r in records}) == len(records)
    # Three files: one in each split.
    assert [r.split for r in assign_splits(build_records(rows[:3], {}))] == list(SPLITS)


def test_bad_split_shares_are_one_line_errors() -> None:
    import pytest

    from wikivel_bot.errors import UsageError

    for text in ("0.6,0.4", "a,b,c", "0.5,0.5,0.5", "1,0,0"):
        with pytest.raises(UsageError, match="--split takes three positive shares"):
            parse_shares(text)


def test_the_dataset_directory_reuses_its_images(store: Store, tmp_path: Path) -> None:
    for page in range(1, 6):
        add_file(store, page, [CAT, DOG], day=page)
        store.record_decision(page, "Q146", A.APPROVE, "Bob", "cli")
        store.record_decision(page, "Q144", A.REJECT, "Bob", "cli")
    asked = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return b"jpeg bytes"

    built = build_from_decisions(store, tmp_path / "d", fetch=fetch)
    assert len(asked) == 5 and built.card["images_fetched"] == 5 and built.card["kept"] == 10
    assert {s: v["files"] for s, v in built.card["splits"].items()} == {"train": 3, "calibration": 1, "evaluation": 1}
    again = build_from_decisions(store, tmp_path / "d", fetch=fetch)
    assert len(asked) == 5 and again.card["images_fetched"] == 0   # the thumbnail cache
    records = read_records(tmp_path / "d" / "records.jsonl")
    assert [r.image for r in records] == [f"images/M{p}.jpg" for p in range(1, 6)]
    assert [r.split for r in records] == ["train"] * 3 + ["calibration", "evaluation"]


def test_images_are_fetched_politely_from_the_wiki_once(tmp_path: Path) -> None:
    """The real thumbnail client against the local test wiki: each decided file's thumbnail
    is fetched once, with the bot's User-Agent; a second build reuses the images directory."""
    from tests.commons_support import CONTACT
    from tests.commons_support import thumb_url as wiki_thumb_url
    from tests.db_support import open_store
    from tests.testwiki import TestWiki
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.tables import files

    store = open_store(f"sqlite:///{tmp_path / 'q.sqlite'}")
    migrate.upgrade(store.engine)
    with TestWiki.start() as wiki:
        photos = ["File:Black cat on sofa.jpg", "File:Dog in the park.jpg", "File:Red bridge over river.jpg"]
        for page, title in enumerate(photos, 1):
            add_file(store, page, [CAT, DOG], day=page, title=title)
            url = wiki_thumb_url(wiki, title)
            with store.transaction() as conn:   # the thumbnail the fetcher saw, on this wiki
                media = dict(conn.execute(select(files.c.media).where(files.c.page_id == page)).scalar())
                conn.execute(files.update().where(files.c.page_id == page).values(media={**media, "thumb_url": url}))
            store.record_decision(page, "Q146", A.APPROVE, "Bob", "cli")
        with ThumbnailClient(contact=CONTACT, timeout_s=10, retries=0) as client:
            first = build_from_decisions(store, tmp_path / "d", fetch=client.get)
            sent = [r for r in wiki.requests if r.path.startswith("/thumb/")]
            again = build_from_decisions(store, tmp_path / "d", fetch=client.get)
            assert len([r for r in wiki.requests if r.path.startswith("/thumb/")]) == len(sent)
    store.close()
    assert first.card["images_fetched"] == 3 and again.card["images_fetched"] == 0
    assert len(sent) == 3 and all(CONTACT in r.user_agent for r in sent)
    assert (tmp_path / "d" / "images" / "M1.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
