"""The pure review rules: decision words, dates, page URLs, escaping, import verdicts."""

from __future__ import annotations

from datetime import datetime

import mwparserfromhell
import pytest

from wikivel_bot.core.review_rules import (
    APPLY,
    REFUSE,
    UNCHANGED,
    ReviewCandidate,
    candidate_order,
    category_matches,
    file_page_url,
    next_open,
    offline_verdict,
    parse_decision,
    parse_time_bound,
    spreadsheet_safe,
)
from wikivel_bot.core.wikitext import wikitext_escape
from wikivel_bot.errors import UsageError
from wikivel_bot.types import CandidateState as C
from wikivel_bot.types import DecisionAction as D


@pytest.mark.parametrize("word, action", [
    ("approve", D.APPROVE), (" Approve ", D.APPROVE), ("YES", D.APPROVE), ("prominent", D.APPROVE_PROMINENT),
    ("approve-prominent", D.APPROVE_PROMINENT), ("reject", D.REJECT), ("no", D.REJECT), ("skip", D.SKIP),
    ("", None), ("   ", None),
])
def test_decision_words(word: str, action) -> None:
    assert parse_decision(word) is action


def test_unknown_decision_word_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="'maybe'.*approve, prominent, reject, skip"):
        parse_decision("maybe")


def test_time_bounds_treat_a_date_as_a_whole_day() -> None:
    assert parse_time_bound("2026-11-01") == datetime(2026, 11, 1)
    assert parse_time_bound("2026-11-01", end=True) == datetime(2026, 11, 2)
    assert parse_time_bound("2026-11-01T10:30:00+02:00") == datetime(2026, 11, 1, 8, 30)
    with pytest.raises(UsageError, match="not a date"):
        parse_time_bound("yesterday")


@pytest.mark.parametrize("title, api_url, site, url", [
    ("File:Église Saint-Étienne.jpg", "", "commons",
     "https://commons.wikimedia.org/wiki/File:%C3%89glise_Saint-%C3%89tienne.jpg"),
    ("Cat (black).jpg", "", "commons", "https://commons.wikimedia.org/wiki/File:Cat_(black).jpg"),
    ("File:A?b.jpg", "", "commons:test", "https://test-commons.wikimedia.org/wiki/File:A%3Fb.jpg"),
    ("File:X.jpg", "http://127.0.0.1:8765/w/api.php", "commons", "http://127.0.0.1:8765/wiki/File:X.jpg"),
    ("File:X.jpg", "https://wiki.example.org/mw/api.php", "commons",
     "https://wiki.example.org/mw/index.php?title=File:X.jpg"),
])
def test_file_page_urls(title: str, api_url: str, site: str, url: str) -> None:
    assert file_page_url(title, api_url, site) == url


def test_categories_match_the_way_mediawiki_names_them() -> None:
    assert category_matches("Category:cats_in Berlin", ["Cats in Berlin"])
    assert not category_matches("Cats", ["Cats in Berlin"])


def test_next_open_wraps_and_ends() -> None:
    assert next_open([False, True, False], 1) == 2
    assert next_open([False, True, True], 1) == 0
    assert next_open([True, True, True], 0) is None


def test_candidates_are_ordered_by_rank_and_reviewer_added_ones_go_last() -> None:
    def cand(qid: str, rank, score) -> ReviewCandidate:
        return ReviewCandidate(candidate_id=0, qid=qid, score=score, rank=rank, linker="", state=C.PROPOSED)

    ordered = candidate_order([cand("Q9", None, None), cand("Q2", 2, 0.5), cand("Q1", 1, 0.4)])
    assert [c.qid for c in ordered] == ["Q1", "Q2", "Q9"]


def test_wikitext_escape_keeps_links_and_tables_intact() -> None:
    nasty = "cat | dog ]] {{delete}} <b>x</b> ~~~~ __NOTOC__ ''i''"
    code = mwparserfromhell.parse(f"[[d:Q1|{wikitext_escape(nasty)}]]")
    (link,) = code.filter_wikilinks()
    assert str(link.title) == "d:Q1"
    assert not code.filter_templates() and not code.filter_tags()
    assert "~~~" not in str(code) and "__NOTOC__" not in str(code)
    assert wikitext_escape("line one\nline two") == "line one line two"


def test_spreadsheet_formulas_are_defused() -> None:
    assert spreadsheet_safe("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert spreadsheet_safe("house cat") == "house cat"


@pytest.mark.parametrize("state, prominent, last, action, verdict", [
    (None, False, None, D.APPROVE, APPLY),
    (C.PROPOSED, False, None, D.APPROVE_PROMINENT, APPLY),
    (C.APPROVED, False, D.APPROVE, D.APPROVE, UNCHANGED),
    (C.APPROVED, False, D.APPROVE, D.APPROVE_PROMINENT, APPLY),
    (C.APPROVED, True, D.APPROVE_PROMINENT, D.APPROVE_PROMINENT, UNCHANGED),
    (C.REJECTED, False, D.REJECT, D.APPROVE, REFUSE),
    (C.REJECTED, False, D.REJECT, D.REJECT, UNCHANGED),
    (C.APPROVED, False, D.APPROVE, D.REJECT, APPLY),
    (C.WRITTEN, False, D.APPROVE, D.APPROVE, UNCHANGED),
    (C.WRITTEN, False, D.APPROVE, D.APPROVE_PROMINENT, REFUSE),
    (C.WRITTEN, False, D.APPROVE, D.REJECT, REFUSE),
    (C.REVERTED, False, D.APPROVE, D.APPROVE, REFUSE),
    (C.PROPOSED, False, None, D.SKIP, APPLY),
    (C.PROPOSED, False, D.SKIP, D.SKIP, UNCHANGED),
    (None, False, None, D.SKIP, REFUSE),
    (C.APPROVED, False, D.APPROVE, D.SKIP, UNCHANGED),
])
def test_offline_verdicts(state, prominent, last, action, verdict) -> None:
    got, reason = offline_verdict(state, prominent, last, action)
    assert got == verdict
    assert bool(reason) == (verdict != APPLY)


def test_refusing_a_written_rejection_points_to_revert() -> None:
    _, reason = offline_verdict(C.WRITTEN, False, D.APPROVE, D.REJECT)
    assert "already written to Commons" in reason and "revert" in reason
