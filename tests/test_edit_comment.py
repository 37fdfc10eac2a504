"""The summary budget: what Commons keeps of a comment after Wikibase's autocomment.

The builders are checked over many generated inputs (hypothesis, derandomized so a run on a
loaded machine is the same run every time) and exhaustively over every limit of a range:
the summary never passes its room, always keeps every item link, "wikivel-bot" and the
batch id, and no control or direction-override character of a label reaches it.
"""

from __future__ import annotations

import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikivel_bot.core.edit_comment import (
    COMMENT_LIMIT,
    adding,
    plain,
    ranking,
    removing,
    stored,
)
from wikivel_bot.core.edit_rules import (
    SummaryItem,
    group_summary,
    summary_fits,
    summary_limit,
)

BATCH = "b-20261128000000-0a1b"
MARK = f"(wikivel-bot 0.1.0, batch {BATCH})"
HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}
# Characters a label may hold that must never reach a summary as they are.
NASTY = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u200b\x00\x07\n\t\x7f\u2028"

FAST = settings(max_examples=300, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

# Pieces, not characters: combining marks, a character NFC lengthens (U+0958) and Hangul
# jamo NFC joins, beside wikitext and the characters that must not pass.
labels = st.lists(st.sampled_from(
    list("abc xyz[]{}|<>/*é") + list(NASTY) + ["e\u0301", "\u0958", "\u1100\u1161", "ﬁ", "猫"]),
    max_size=120).map("".join)
qids = st.integers(min_value=1, max_value=9_999_999_999).map(lambda n: f"Q{n}")
items = st.lists(st.builds(SummaryItem, qids, labels, st.booleans()), min_size=1, max_size=12,
                 unique_by=lambda i: i.qid)
names = st.lists(st.text(alphabet=st.sampled_from(list("Ann Bob_ü") + list(NASTY)), max_size=40),
                 min_size=1, max_size=4)


def _check(text: str, group: list, limit: int) -> None:
    assert len(text) <= limit
    assert text == unicodedata.normalize("NFC", text)
    assert not any(unicodedata.category(ch) in HIDDEN for ch in text)
    for item in group:
        assert f"[[d:{item.qid}|{item.qid}]]" in text
    assert text.endswith(MARK)


@FAST
@given(items, names, st.integers(min_value=100, max_value=500))
def test_the_summary_never_passes_its_room_and_keeps_what_recovery_reads(group, people, limit) -> None:
    if summary_fits(group, people, "0.1.0", BATCH, limit):
        _check(group_summary(group, people, "0.1.0", BATCH, limit), group, limit)


@FAST
@given(items, names)
def test_the_default_room_leaves_wikibases_longest_autocomment(group, people) -> None:
    if summary_fits(group, people, "0.1.0", BATCH):
        text = group_summary(group, people, "0.1.0", BATCH)
        _check(text, group, summary_limit(group))
        # Wikibase's autocomment and the summary, as Commons stores them: nothing cut.
        whole = "x" * adding([i.qid for i in group]) + text
        assert stored(whole) == whole


def test_every_limit_of_a_range_is_kept_a_restored_name_included() -> None:
    """Exhaustive over the limits where reviewer names are cut and given back: a name given
    back whole becomes a ``[[User:…]]`` link, 9 characters more than the plain name (the
    builder overran its limit by that much)."""
    group = [SummaryItem(f"Q{100 + i}", "a label of some length " * 3, i % 3 == 0) for i in range(6)]
    for people in (["Reviewername14"], ["Reviewername14", "Second_reviewer_x"], ["R" * 40, "Bob"]):
        checked = 0
        for limit in range(150, 520):
            if summary_fits(group, people, "0.1.0", BATCH, limit):
                _check(group_summary(group, people, "0.1.0", BATCH, limit), group, limit)
                checked += 1
        assert checked > 300


def test_direction_overrides_and_controls_never_reach_a_summary() -> None:
    text = group_summary([SummaryItem("Q146", "cat\u202e)tab hctab\u202c\u2066x\u2069\x00y")],
                         ["Ann\u200f"], "0.1.0", BATCH)
    assert text == ("Adding depicts [[d:Q146|Q146]] (cat )tab hctab x y), approved by [[User:Ann]] "
                    f"{MARK}")
    assert plain("a\u202ab\u2028c e\u0301") == "a b c é"


def test_the_autocomments_are_wikibases_own_lengths() -> None:
    # wbeditentity adding three P180 statements (EditSummaryHelper, "add" or "update").
    example = "/* wbeditentity-statements-single-property-add:1||3 */ [[d:Special:EntityPage/P180]], "
    assert adding(["Q146", "Q5", "Q1"]) >= len(example)
    # One statement: ClaimSummaryBuilder's "update" with its value.
    one = "/* wbsetclaim-update:1||1 */ [[d:Special:EntityPage/P180]]: [[d:Special:EntityPage/Q146]], "
    assert adding(["Q146"]) == len(one)
    two = ("/* wbremoveclaims-remove:2| */ [[d:Special:EntityPage/P180]]: [[d:Special:EntityPage/Q146]], "
           "[[d:Special:EntityPage/P180]]: [[d:Special:EntityPage/Q5]], ")
    assert removing(["Q146", "Q5"]) == len(two)
    rank = "/* wbsetclaim-update-rank:2||1 */ [[d:Special:EntityPage/P180]]: [[d:Special:EntityPage/Q146]], "
    assert ranking("Q146") == len(rank)


def test_commentstore_cuts_at_500_characters_with_an_ellipsis() -> None:
    assert stored("x" * COMMENT_LIMIT) == "x" * COMMENT_LIMIT
    cut = stored("y" * 496 + "  abcdef")
    assert cut == "y" * 496 + "..." and len(cut) == 499
    assert len(stored("z" * 600)) == COMMENT_LIMIT
