"""Items that moved or vanished since a reviewer approved them: held for a human, so that one
bad item does not sink its file's group edit.

Wikidata merges duplicate items every day: the merged item becomes a redirect to the one it
was merged into, and items get deleted. Wikibase checks a new statement's item with a
redirect-resolving look-up (``RedirectResolvingEntityLookup`` behind ``EntityExistsValidator``),
so a statement naming a redirect is *accepted* and stored with the old id, and one naming a
deleted item fails the **whole** ``wbeditentity`` (``modification-failed``) — every other
pair of the file's group with it. So right before a group is sent, the writer asks the items
repository once, uncached (``wbgetentities``, ``props=info``, through the one Wikidata client)
about the group's items:

* an item that does not exist any more, and
* an item that is now a redirect (``ItemInfo.resolved`` / the answer's ``id`` differs)

are **held for a human**: the pair becomes ``Failed(reason, retry_after=None)`` — the queue's
``write_failed``, which a human re-approves or rejects — with a reason that names the
redirect's target. The pair is never rewritten to the target: the reviewer approved an item,
not whatever it was merged into (a merge can be wrong, and the target can be more generic).
The rest of the group is written in one edit as usual.
"""

from __future__ import annotations

from typing import Any, Dict, List, MutableMapping, Optional, Sequence

from wikivel_bot.types import ApprovedEdit, Failed

__all__ = ["HELD", "hold_moved_items", "moved_items"]

# The first words of every hold's reason (the write counters group failures by them).
HELD = "held for a human"


def moved_items(items: Any, qids: Sequence[str]) -> Dict[str, str]:
    """{qid: why it is held} for those of ``qids`` that are missing or now a redirect.

    :param items: the Wikidata client of the items repository
        (``wikidata.client.WikidataClient``: ``get_entities``, never cached); None checks
        nothing.
    :raises WikiError: the repository could not be asked (the group is retried later).
    """
    wanted = list(dict.fromkeys(q for q in qids if q))
    if items is None or not wanted:
        return {}
    found = items.get_entities(wanted, props=("info",))
    out: Dict[str, str] = {}
    for qid in wanted:
        entity = found.get(qid)
        now = str(entity.get("id") or "") if isinstance(entity, dict) else ""
        if not now:
            out[qid] = f"{HELD}: {qid} no longer exists on Wikidata (deleted since it was approved)"
        elif now != qid:
            out[qid] = (f"{HELD}: {qid} is now a redirect to {now} (merged since it was approved); "
                        f"approve {now} itself if it is right, the bot does not rewrite a pair")
    return out


def hold_moved_items(items: Any, edits: List[ApprovedEdit],
                     done: MutableMapping[int, Any]) -> List[ApprovedEdit]:
    """The pairs of ``edits`` to send; the held ones get their ``Failed`` in ``done``.

    :param items: as for :func:`moved_items`.
    :param done: {candidate id: outcome} of the group being written.
    """
    held = moved_items(items, [e.qid for e in edits])
    kept: List[ApprovedEdit] = []
    for edit in edits:
        reason: Optional[str] = held.get(edit.qid)
        if reason:
            done[edit.candidate_id] = Failed(reason, retry_after=None)
        else:
            kept.append(edit)
    return kept
