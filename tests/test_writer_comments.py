"""Every comment the bot leaves keeps what it reads back, as Commons stores it.

Wikibase writes its own autocomment before the bot's summary and MediaWiki keeps 500
characters of the whole (the test wiki does both as Wikibase does: ``tests/testwiki/
edit_comments.py``). The bot's recovery, follow-ups and ``revert --batch`` find its edits by
"wikivel-bot", the batch id and each item's ``[[d:Q…|Q…]]`` link in the stored comment, so
those must survive: here a 24-item group on one file with long labels full of direction
overrides, written, its comments read back through the API, then ``wikivel-bot revert
--batch`` removing all of it; and the follow-up and twin-removal summaries at their limits.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

from click.testing import CliRunner

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    T0,
    TITLES,
    ancestors_of,
    audited_revisions,
    bot_revisions,
    clock,
    depicts_on_wiki,
    edit_rows,
    queue,
    queue_file,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.cli import main
from wikivel_bot.commons.writer.follow_up import follow_up_summary, twin_groups, twin_summary
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.core.edit_comment import COMMENT_LIMIT, ranking, removing
from wikivel_bot.types import REMOVE, Candidate, CandidateState, DecisionAction, FileState, MediaFile, Upload

BATCH = "b-20261128000000-24aa"
MALLARD = 10005  # depicts Q25348; the items below are outside the test hierarchy
ITEMS = ["Q35120", "Q488383", "Q223557", "Q7239", "Q16521", "Q756", "Q55983715", "Q152", "Q10811",
         "Q10908", "Q1390", "Q57814795", "Q726", "Q830", "Q7368", "Q2934", "Q787", "Q780", "Q140",
         "Q19939", "Q7378", "Q18498", "Q25334", "Q14683"]
# Labels as a linker may store them: long, with direction overrides and isolates.
OVERRIDES = "\u202e\u202d\u202a\u202b\u202c\u2066\u2067\u2068\u2069\u200f"
LINK = re.compile(r"\[\[d:(Q\d+)\|\1\]\]")


def queue_with_labels(store, page_id: int, qids: List[str], reviewer: str) -> None:
    """A fixture file with ``qids`` proposed (each with a long label) and all approved."""
    title = TITLES[page_id]
    store.enqueue([Upload(page_id=page_id, title=title, timestamp=T0, mime="image/jpeg")])
    (work,) = [w for w in store.claim_files(FileState.DISCOVERED, 100, "test") if w.page_id == page_id]
    store.mark_fetched(work.id, MediaFile(page_id=page_id, title=title))
    store.claim_files(FileState.FETCHED, 100, "test")
    store.save_candidates(work.id, [
        Candidate(qid=q, score=0.9, rank=i + 1, linker="zero-shot", linker_version="1",
                  labelset_hash="h" * 16,
                  evidence={"label": f"{OVERRIDES[i % len(OVERRIDES)]}a label of item {q} that "
                                     f"goes on and on{OVERRIDES[(i + 3) % len(OVERRIDES)]} for a while"})
        for i, q in enumerate(qids)])
    for qid in qids:
        store.record_decision(page_id, qid, DecisionAction.APPROVE, reviewer, "cli")


def stored_comments(commons: Any, page_id: int) -> List[Dict[str, Any]]:
    """The bot's revisions of the file with their comments, as the API gives them back."""
    answer = commons.simple_request(action="query", prop="revisions", pageids=page_id, formatversion=2,
                                 rvprop="ids|comment|user", rvlimit=50).submit()
    return [r for r in answer["query"]["pages"][0]["revisions"] if r["user"] == "WikivelBot"]


def assert_kept(comment: str) -> None:
    assert len(comment) <= COMMENT_LIMIT and not comment.endswith("...")
    assert "wikivel-bot" in comment and f"batch {BATCH}" in comment
    assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in comment)


def test_a_24_item_group_keeps_its_batch_in_every_comment_and_is_reverted_whole(
        wiki, site, queue, clock, tmp_path: Path) -> None:
    long_name = "Reviewer with a name long enough to be cut"
    queue_with_labels(queue, MALLARD, ITEMS, long_name)

    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=50,
                              worker="test", clock=clock)

    assert counters.written == 24
    assert sorted(targets(depicts_on_wiki(wiki, MALLARD))) == sorted(["Q25348", *ITEMS])
    writes = stored_comments(site, MALLARD)
    assert len(writes) >= 2  # more than one summary's worth: several edits, each complete
    named: List[str] = []
    for revision in writes:
        comment = revision["comment"]
        assert_kept(comment)
        # Wikibase's autocomment of several P180 statements added, then the whole summary.
        auto = re.match(r"/\* wbeditentity-statements-single-property-add:1\|\|(\d+) \*/ "
                        r"\[\[d:Special:EntityPage/P180\]\], Adding depicts ", comment)
        assert auto, comment
        links = LINK.findall(comment)
        assert len(links) == int(auto.group(1))
        named += links
    assert sorted(named) == sorted(ITEMS)  # every item's link, in the comment of its edit
    assert bot_revisions(wiki) == audited_revisions(queue)

    runner = CliRunner()
    undone = runner.invoke(main, ["revert", "--batch", BATCH],
                           env={"WIKIVEL_DB_URL": f"sqlite:///{tmp_path / 'queue.sqlite'}"})

    assert undone.exit_code == 0, undone.output
    assert "24 statements removed" in undone.output
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348"]
    assert {states(queue)[(MALLARD, q)] for q in ITEMS} == {CandidateState.REVERTED.value}
    removals = stored_comments(site, MALLARD)[: -len(writes)]
    assert removals
    removed: List[str] = []
    for revision in removals:
        comment = revision["comment"]
        assert_kept(comment)
        assert comment.startswith("/* wbremoveclaims-remove:")
        removed += LINK.findall(comment)
    assert sorted(removed) == sorted(ITEMS)
    assert bot_revisions(wiki) == audited_revisions(queue)


def test_a_follow_up_summary_cuts_the_decision_never_the_link_or_batch() -> None:
    for wanted, state, autocomment in ((REMOVE, CandidateState.REJECTED, lambda q: removing([q])),
                                       ("preferred", CandidateState.APPROVED, ranking)):
        for name_length in (0, 50, 255, 600):
            item = SimpleNamespace(
                qid="Q1234567890", wanted=wanted, revid=123456789, batch_id="b-20261127000000-ffff",
                decision=lambda n=name_length, s=state: ("rejected by " if s is CandidateState.REJECTED
                                                         else "switched to prominent by ")
                + "R\u202e" * (n // 2))
            text = follow_up_summary(item, BATCH, "0.1.0")
            assert len(text) + autocomment(item.qid) <= COMMENT_LIMIT
            assert "[[d:Q1234567890|Q1234567890]]" in text and text.endswith(f"(wikivel-bot 0.1.0, batch {BATCH})")
            assert "\u202e" not in text and "edit 123456789 of b-20261127000000-ffff" in text


def test_twin_removals_split_where_one_comment_cannot_name_them_all() -> None:
    twins = [(i, f"M1${i}", f"Q{1000000000 + i}") for i in range(24)]
    groups = twin_groups(twins, BATCH, "0.1.0")
    assert [t for g in groups for t in g] == twins and len(groups) > 1
    for group in groups:
        qids = [q for _, _, q in group]
        assert len(twin_summary(qids, BATCH, "0.1.0")) + removing(qids) <= COMMENT_LIMIT
    assert [len(g) for g in twin_groups(twins[:2], BATCH, "0.1.0")] == [2]


def test_a_follow_up_by_a_reviewer_with_the_longest_name_keeps_what_recovery_reads(
        wiki, site, queue, clock, monkeypatch) -> None:
    """A reject lands while the edit is in flight; the follow-up removes the statement again.
    Its summary names the reviewer — here with a name of 255 characters, MediaWiki's longest,
    and a direction override — and the comment as stored still ends with the batch, so the
    history finds the follow-up again (``History.followed_up``: a follow-up whose answer was
    lost is recorded from it, never made twice)."""
    from wikivel_bot.commons.writer.edit_group import History

    page_id, reviewer = 10004, "R\u202e" + "r" * 253
    queue_file(queue, page_id, ["Q146", "Q144"])
    for qid in ("Q146", "Q144"):
        queue.record_decision(page_id, qid, DecisionAction.APPROVE, reviewer, "cli")
    save, once = wiki.store.set_entity, [True]

    def saving(page, data, **kw):
        if kw.get("user") == "WikivelBot" and once:
            once.clear()  # the edit is in flight: its request has left
            queue.record_decision(page_id, "Q144", DecisionAction.REJECT, reviewer, "web")
        return save(page, data, **kw)

    monkeypatch.setattr(wiki.store, "set_entity", saving)
    counters = write_approved(queue, StatementWriter(site, BATCH, ancestors_of), batch_size=5,
                              worker="test", clock=clock)

    assert counters.followed_up == 1 and targets(depicts_on_wiki(wiki, page_id)) == ["Q146"]
    follow_up, write = stored_comments(site, page_id)[:2]
    assert_kept(write["comment"])
    assert_kept(follow_up["comment"])
    assert follow_up["comment"].startswith("/* wbremoveclaims-remove:1| */ ")
    # The override became a space; the name is cut ("…"), the link and the batch are not.
    assert "Removing depicts [[d:Q144|Q144]] again: rejected by R rrr" in follow_up["comment"]
    assert "rrr… after edit" in follow_up["comment"]
    assert f"edit {write['revid']} of {BATCH} was sent" in follow_up["comment"]
    (statement,) = [r["statement_id"] for r in edit_rows(queue) if r["qid"] == "Q144" and r["outcome"] == "written"]
    assert History(site, page_id).followed_up("Q144", statement) == follow_up["revid"]
    assert bot_revisions(wiki) == audited_revisions(queue)
