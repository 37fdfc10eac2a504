"""Edit planning: whether an approved (file, item) may be written now, and the summary.

Pure functions over what the writer re-read from the wiki just before writing. The re-read
is the guard against duplicates: a crash after the API accepted a statement but before the
queue recorded it is caught here on restart, because the item is then already present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from wikivel_bot.types import MediaFile

# Commons' edit summary limit is 500 bytes, but the auto comment of wbsetclaim shares the
# 260-character comment field with ours (COMMONS_API.md).
SUMMARY_LIMIT = 260
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


def edit_summary(qid: str, reviewer: str, version: str, batch_id: str, prominent: bool = False) -> str:
    """The edit summary: what, who approved it, the tool version and the batch (for undo).

    Cut to :data:`SUMMARY_LIMIT` characters by shortening the reviewer name, never the batch
    id, since `revert --batch` and patrollers rely on it.
    """
    what = f"depicts [[d:{qid}|{qid}]]" + (" (prominent)" if prominent else "")
    tail = f" (wikivel-bot {version}, batch {batch_id})"
    head = f"Adding {what}, approved by [[User:"
    room = SUMMARY_LIMIT - len(head) - len("]]") - len(tail)
    name = reviewer if len(reviewer) <= room else reviewer[: max(room - 1, 0)] + "…"
    return f"{head}{name}]]{tail}"
