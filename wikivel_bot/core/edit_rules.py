"""Edit planning: whether an approved (file, item) may be written now, and the summary.

Pure functions over what the writer re-read from the wiki just before writing. The re-read
is the guard against duplicates: a crash after the API accepted a statement but before the
queue recorded it is caught here on restart, because the item is then already present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from wikivel_bot.types import MediaFile

# MediaWiki keeps 500 characters of an edit comment (CommentStore), and Wikibase puts its
# auto comment ("/* wbeditentity-update:0| */ ", about 30 characters) in front of ours:
# the rest of the reserve covers longer auto comments of other Wikibase versions.
COMMENT_LIMIT = 500
AUTO_COMMENT_RESERVE = 60
SUMMARY_LIMIT = COMMENT_LIMIT - AUTO_COMMENT_RESERVE
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


# Characters that would make a label wikitext in a summary (links, templates, an auto
# comment): labels are plain text.
_WIKITEXT = re.compile(r"[\[\]{}|<>]|/\*|\*/")


def _shorten(text: str, room: int) -> str:
    return text if len(text) <= room else (text[: room - 1].rstrip() + "…" if room >= 2 else "")


def _item_text(item: SummaryItem, label: str) -> str:
    notes = ", ".join(n for n in (label, "prominent" if item.prominent else "") if n)
    return f"[[d:{item.qid}|{item.qid}]]" + (f" ({notes})" if notes else "")


def group_summary(items: Sequence[SummaryItem], reviewers: Sequence[str], version: str,
                  batch_id: str, limit: int = SUMMARY_LIMIT) -> str:
    """The summary of one edit adding ``items`` to a file: every item with its label, who
    approved them, the tool version and the batch (for ``revert --batch`` and patrollers).

    Each item appears as ``[[d:Q146|Q146]]`` (the writer's recovery finds its own lost edits
    by it) followed by its label and "prominent" when preferred. Within ``limit`` characters,
    labels and then reviewer names are shortened (dropped when no room is left); item ids,
    the version and the batch id never are.

    :raises ValueError: the ids alone do not fit (:func:`summary_fits` before building).
    """
    names = list(dict.fromkeys(r for r in reviewers if r)) or ["?"]
    clean = [" ".join(_WIKITEXT.sub(" ", i.label).split()) for i in items]

    def build(labels: Sequence[str], people: Sequence[str]) -> str:
        what = ", ".join(_item_text(i, lab) for i, lab in zip(items, labels, strict=True))
        # A shortened name is plain text: as a link it would point to a user who does not exist.
        who = ", ".join(f"[[User:{p}]]" if p == n else p for p, n in zip(people, names, strict=True))
        return f"Adding depicts {what}, approved by {who} (wikivel-bot {version}, batch {batch_id})"

    text = build(clean, names)
    if len(text) <= limit:
        return text
    # Reviewer names first cut to 12 characters (2 when even that is too long), then labels
    # share what is left evenly, then the names take back what the labels left.
    short_names = [_shorten(n, 12) for n in names]
    bare = build([""] * len(items), short_names)
    if len(bare) > limit:
        short_names = [_shorten(n, 2) for n in names]
        bare = build([""] * len(items), short_names)
    if len(bare) > limit:
        raise ValueError(f"{len(items)} items do not fit in one summary of {limit} characters")
    room = limit - len(bare)
    labels = [""] * len(items)
    wanting = [i for i in sorted(range(len(items)), key=lambda i: len(clean[i])) if clean[i]]
    for n, index in enumerate(wanting):
        # A label costs " (label)" (3 more characters), or ", label" beside "prominent".
        frame = 2 if items[index].prominent else 3
        labels[index] = _shorten(clean[index], room // (len(wanting) - n) - frame)
        room -= frame + len(labels[index]) if labels[index] else 0
    people = list(short_names)
    for index, name in enumerate(names):
        room = limit - len(build(labels, people))
        people[index] = _shorten(name, len(people[index]) + room) if room > 0 else people[index]
    return build(labels, people)


def summary_fits(items: Sequence[SummaryItem], reviewers: Sequence[str], version: str,
                 batch_id: str, limit: int = SUMMARY_LIMIT) -> bool:
    """Whether one summary can name all of ``items`` (ids in full)."""
    try:
        group_summary(items, reviewers, version, batch_id, limit)
    except ValueError:
        return False
    return True
