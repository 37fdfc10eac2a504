"""Edit planning rules on files as the writer re-reads them."""

from __future__ import annotations

import pytest

from wikivel_bot.core.edit_rules import (
    SummaryItem,
    group_summary,
    plan_edit,
    summary_fits,
    summary_limit,
)
from wikivel_bot.types import Depiction, MediaFile

# house cat Q146 -> (P279) domestic animal / pet ... ; a specific cat item -> Q146 (P31)
HIERARCHY = {
    "Q27745011": {"Q146": 1, "Q39201": 2, "Q729": 3},  # an individual cat
    "Q146": {"Q39201": 1, "Q729": 2, "Q35120": 4},
    "Q5": {"Q215627": 1, "Q35120": 3},
}


def ancestors(qid: str) -> dict:
    return HIERARCHY.get(qid, {})


def media(*depicts: str, **flags) -> MediaFile:
    return MediaFile(page_id=1, title="File:Cat.jpg", depicts=tuple(Depiction(q) for q in depicts), **flags)


@pytest.mark.parametrize(
    "file, qid, reason",
    [
        (media(), "Q146", None),
        (media("Q146"), "Q146", "Q146 is already depicted"),
        (media("Q27745011"), "Q146", "more specific item is already depicted: Q27745011 (1 hop"),
        (media("Q27745011"), "Q729", "(3 hop(s) below Q729)"),
        (media("Q146"), "Q35120", None),  # 4 hops: too far to count as "more specific"
        (media("Q5"), "Q146", None),  # unrelated items do not block
        (media(bots_allowed=False), "Q146", "opts out of bots"),
        (media(protected=True), "Q146", "edit-protected"),
        (None, "Q146", "deleted"),
    ],
)
def test_plan_edit(file, qid, reason) -> None:
    plan = plan_edit(file, qid, ancestors)
    if reason is None:
        assert plan.write and plan.reason is None
    else:
        assert not plan.write and reason in plan.reason


def test_summary_names_items_labels_reviewers_version_and_batch() -> None:
    items = [SummaryItem("Q146", "house cat"), SummaryItem("Q3736439", "duck", prominent=True),
             SummaryItem("Q5", prominent=True), SummaryItem("Q144")]
    text = group_summary(items, ["Ann", "Bob", "Ann"], "0.1.0", "b-20261121000000-abcd")
    assert text == ("Adding depicts [[d:Q146|Q146]] (house cat), [[d:Q3736439|Q3736439]] (duck, "
                    "prominent), [[d:Q5|Q5]] (prominent), [[d:Q144|Q144]], approved by [[User:Ann]], "
                    "[[User:Bob]] (wikivel-bot 0.1.0, batch b-20261121000000-abcd)")


def test_labels_cannot_become_wikitext() -> None:
    text = group_summary([SummaryItem("Q1", "a [[link]] {{t}} /* c */ x|y")], ["Ann"], "0.1.0", "b-1")
    assert "(a link t c x y)" in text


def test_long_summaries_shorten_labels_and_names_never_ids() -> None:
    items = [SummaryItem(f"Q{1000000 + i}", "a rather long label " * 5, prominent=i % 2 == 0)
             for i in range(7)]
    text = group_summary(items, ["R" * 300, "Bob"], "0.1.0", "b-20261121000000-abcd")
    # Room for Wikibase's autocomment of a 7-statement edit (about 90 characters).
    assert len(text) <= summary_limit(items) <= 500 - 85
    for item in items:
        assert f"[[d:{item.qid}|{item.qid}]]" in text
    assert text.count("…") >= 7 and "[[User:Bob]]" in text
    # The long name is shortened as plain text, never a link to a user who does not exist.
    assert "approved by RRR" in text and "[[User:R" not in text
    assert text.endswith(" (wikivel-bot 0.1.0, batch b-20261121000000-abcd)")


def test_too_many_items_for_one_summary_do_not_fit() -> None:
    items = [SummaryItem(f"Q{1000000000 + i}", prominent=True) for i in range(20)]
    assert not summary_fits(items, ["Ann"], "0.1.0", "b-1")
    assert summary_fits(items[:7], ["Ann"], "0.1.0", "b-1")
    with pytest.raises(ValueError):
        group_summary(items, ["Ann"], "0.1.0", "b-1")
