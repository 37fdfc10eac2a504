"""Edit planning rules on files as the writer re-reads them."""

from __future__ import annotations

import pytest

from wikivel_bot.core.edit_rules import SUMMARY_LIMIT, edit_summary, plan_edit
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


def test_summary_names_item_reviewer_version_and_batch() -> None:
    text = edit_summary("Q146", "Ann", "0.1.0", "b-20261121-1", prominent=True)
    assert text == ("Adding depicts [[d:Q146|Q146]] (prominent), approved by [[User:Ann]] "
                    "(wikivel-bot 0.1.0, batch b-20261121-1)")


def test_summary_is_cut_in_the_reviewer_name_only() -> None:
    text = edit_summary("Q146", "A" * 400, "0.1.0", "b-1")
    assert len(text) == SUMMARY_LIMIT
    assert text.endswith("…]] (wikivel-bot 0.1.0, batch b-1)")
