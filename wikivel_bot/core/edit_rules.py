"""Edit planning: whether an approved (file, item) may be written now, and the summary.

The summary's room is what Commons leaves after Wikibase's own autocomment of the edit
(:mod:`wikivel_bot.core.edit_comment`), so the stored comment keeps every item link,
"wikivel-bot" and the batch id.

Pure functions over what the writer re-read from the wiki just before writing. The re-read
is the guard against duplicates: a crash after the API accepted a statement but before the
queue recorded it is caught here on restart, because the item is then already present.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional, Sequence

from wikivel_bot.core.edit_comment import COMMENT_LIMIT, adding, plain, room, shorten
from wikivel_bot.types import MediaFile

__all__ = ["COMMENT_LIMIT", "MAX_HOPS", "AncestorLookup", "EditPlan", "SummaryItem", "group_summary",
           "plan_edit", "summary_fits", "summary_limit"]

MAX_HOPS = 3

AncestorLookup = Callable[[str], Mapping[str, int]]


@dataclass(frozen=True)
class EditPlan:
    """Either write (``reason`` None) or skip with a reason a human can read."""

    reason: Optional[str] = None

    @property
    def write(self) -> bool:
        return self.reason is None


def plan_edit(
    media: Optional[MediaFile],
    qid: str,
    ancestors_of: AncestorLookup,
    exists: bool = True,
    max_hops: int = MAX_HOPS,
) -> EditPlan:
    """Decide whether to add ``P180 = qid`` to the file as it is now.

    :param media: the file as just re-read (None when the page is gone).
    :param qid: the approved item.
    :param ancestors_of: {ancestor: hops} over P31 ∪ P279 for an item (the label set's
        hierarchy, or Wikidata for items outside it).
    :param exists: False when the page was deleted since it was queued.
    :param max_hops: how far down "a more specific item is present" looks.
    """
    if media is None or not exists:
        return EditPlan("file page deleted")
    if not media.bots_allowed:
        return EditPlan("file page opts out of bots ({{bots}}/{{nobots}})")
    if media.protected:
        return EditPlan("file page is edit-protected")
    present = {d.qid for d in media.depicts}
    if qid in present:
        return EditPlan(f"{qid} is already depicted")
    for other in sorted(present):
        hops = ancestors_of(other).get(qid)
        if hops is not None and hops <= max_hops:
            return EditPlan(f"a more specific item is already depicted: {other} ({hops} hop(s) below {qid})")
    return EditPlan()


@dataclass(frozen=True)
class SummaryItem:
    """One statement of a grouped edit, as its summary names it."""

    qid: str
    label: str = ""
    prominent: bool = False


def summary_limit(items: Sequence[SummaryItem]) -> int:
    """The room of the summary of an edit adding ``items``: 500 characters less the longest
    autocomment Wikibase can write before it (:func:`edit_comment.adding`)."""
    return room(adding([i.qid for i in items]))


def _item_text(item: SummaryItem, label: str) -> str:
    notes = ", ".join(n for n in (label, "prominent" if item.prominent else "") if n)
    return f"[[d:{item.qid}|{item.qid}]]" + (f" ({notes})" if notes else "")


def group_summary(items: Sequence[SummaryItem], reviewers: Sequence[str], version: str,
                  batch_id: str, limit: Optional[int] = None) -> str:
    """The summary of one edit adding ``items`` to a file: every item with its label, who
    approved them, the tool version and the batch (for ``revert --batch`` and patrollers).

    Each item appears as ``[[d:Q146|Q146]]`` (the writer's recovery finds its own lost edits
    by it) followed by its label and "prominent" when preferred. Within ``limit`` characters
    (default :func:`summary_limit`), labels and then reviewer names are shortened (dropped
    when no room is left); item ids, the version and the batch id never are. Labels and
    names are plain text (:func:`edit_comment.plain`: no wikitext, no control or
    direction-override character) and the summary is NFC, as MediaWiki stores it, so its
    length here is its length on the wiki.

    :raises ValueError: the ids alone do not fit (:func:`summary_fits` before building).
    """
    limit = summary_limit(items) if limit is None else limit
    names = list(dict.fromkeys(p for p in (plain(r) for r in reviewers) if p)) or ["?"]
    clean = [plain(i.label) for i in items]

    def build(labels: Sequence[str], people: Sequence[str]) -> str:
        what = ", ".join(_item_text(i, lab) for i, lab in zip(items, labels, strict=True))
        # A shortened name is plain text: as a link it would point to a user who does not exist.
        who = ", ".join(f"[[User:{p}]]" if p == n else p for p, n in zip(people, names, strict=True))
        text = f"Adding depicts {what}, approved by {who} (wikivel-bot {version}, batch {batch_id})"
        return unicodedata.normalize("NFC", text)

    text = build(clean, names)
    if len(text) <= limit:
        return text
    # Reviewer names first cut to 12 characters (2 when even that is too long), then labels
    # share what is left evenly, then the names take back what the labels left.
    short_names = [shorten(n, 12) for n in names]
    bare = build([""] * len(items), short_names)
    if len(bare) > limit:
        short_names = [shorten(n, 2) for n in names]
        bare = build([""] * len(items), short_names)
    if len(bare) > limit:
        raise ValueError(f"{len(items)} items do not fit in one summary of {limit} characters")
    left = limit - len(bare)
    labels = [""] * len(items)
    wanting = [i for i in sorted(range(len(items)), key=lambda i: len(clean[i])) if clean[i]]
    for n, index in enumerate(wanting):
        # A label costs " (label)" (3 more characters), or ", label" beside "prominent".
        frame = 2 if items[index].prominent else 3
        labels[index] = shorten(clean[index], left // (len(wanting) - n) - frame)
        left -= frame + len(labels[index]) if labels[index] else 0
    people = _names_back(names, short_names, lambda p: len(build(labels, p)), limit)
    text = build(labels, people)
    # Never past the limit, whatever the text (a label whose cut is not NFC-stable): then
    # the summary without labels, which fits (checked above).
    return text if len(text) <= limit else build([""] * len(items), short_names)


def _names_back(names: Sequence[str], short: Sequence[str], length: Callable[[Sequence[str]], int],
                limit: int) -> List[str]:
    """The reviewer names ``short`` lengthened again, one after the other, as far as the
    summary's ``length`` stays within ``limit``. A name given back whole becomes a
    ``[[User:…]]`` link (9 characters more), so it is given back whole only when the link
    fits; otherwise it stays a cut, plain name."""
    people = list(short)
    for index, name in enumerate(names):
        spare = limit - length(people)
        if spare <= 0 or people[index] == name:
            continue
        whole = [*people[:index], name, *people[index + 1:]]
        if length(whole) <= limit:
            people = whole
            continue
        longer = shorten(name, min(len(people[index]) + spare, len(name) - 1))
        if len(longer) > len(people[index]):
            people[index] = longer
    return people


def summary_fits(items: Sequence[SummaryItem], reviewers: Sequence[str], version: str,
                 batch_id: str, limit: Optional[int] = None) -> bool:
    """Whether one summary can name all of ``items`` (ids in full)."""
    try:
        group_summary(items, reviewers, version, batch_id, limit)
    except ValueError:
        return False
    return True
