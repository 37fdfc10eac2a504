"""A rank follow-up that overwrote what someone added meanwhile puts it back.

Wikibase has no module that changes only a statement's rank: a follow-up sends the whole
statement as it last read it (``wbsetclaim`` with that read's ``baserevid``). When someone
edited the file between that read and the edit, Wikibase applies the change to the entity at
the base revision and patches it onto the latest one, and a changed statement *replaces*
whatever the latest revision holds under its GUID (``StatementListPatcher::changeStatement`` in
wikibase/data-model-services, used by ``MediaWikiEditEntity::fixEditConflict``): the edit
succeeds, with the warning ``wikibase-conflict-patched``, and a qualifier or reference added
meanwhile is gone. No ``baserevid`` can prevent it (a fresh one replaces the statement just the
same), so the follow-up looks afterwards:

    parent      the revision its edit replaced (one ``prop=revisions`` request from its own
                revision); the read's revision: nobody came between, nothing to do
    compare     the statement there against the one the follow-up read: qualifiers,
                references, item, rank
    repair      someone changed it: their statement goes back, with the rank the decision
                asks for unless they changed the rank themselves (then theirs, as they left
                it), in one more ``wbsetclaim`` on the follow-up's own revision, sent once

The outcome is :class:`Repaired`: the repair's revision, with ``first`` the rank change's, so
both bot edits are recorded (``follow_up.settle_follow_ups``); when their own rank was kept,
``rank`` says so and the follow-up ends there, the statement left as they made it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional

from wikivel_bot.commons.mediainfo import DEPICTS, parse_entity
from wikivel_bot.types import Skipped, Written

__all__ = ["Repaired", "overwritten", "record_repaired", "repair_rank_change"]

# What someone else may have changed in the statement between the read and the edit.
_COMPARED = ("qualifiers", "references", "rank")


@dataclass(frozen=True)
class Repaired(Written):
    """A rank follow-up in two edits: ``first`` changed the rank and dropped someone's
    change, ``revid`` put it back (with ``rank``)."""

    first: int = 0


def overwritten(site: Any, page_id: int, revid: int, base: int, guid: str) -> Optional[Dict[str, Any]]:
    """The statement ``guid`` as it was in the revision that the edit ``revid`` replaced,
    when that revision is not ``base`` (someone edited after the read); None otherwise, or
    when it had no such statement.

    :param site: the Commons site (``simple_request``).
    """
    data = site.simple_request(action="query", prop="revisions", pageids=page_id, rvstartid=revid,
                               rvlimit=2, rvprop="ids|content", rvslots="mediainfo",
                               formatversion=2).submit()
    revisions = {int(r["revid"]): r for page in (data.get("query") or {}).get("pages", [])
                 for r in page.get("revisions", [])}
    parent_id = int((revisions.get(revid) or {}).get("parentid") or 0)
    if not parent_id or parent_id == int(base or 0) or parent_id not in revisions:
        return None
    slot = (revisions[parent_id].get("slots") or {}).get("mediainfo") or {}
    statements = parse_entity(slot.get("content") or slot.get("*")).get("statements")
    group = statements.get(DEPICTS) if isinstance(statements, dict) else None
    return next((s for s in group if isinstance(s, dict) and s.get("id") == guid), None) \
        if isinstance(group, list) else None


def _differs(theirs: Mapping[str, Any], read: Mapping[str, Any]) -> bool:
    """Whether someone changed the statement: its qualifiers, references, rank or item."""
    def item(statement: Mapping[str, Any]) -> Any:
        value = ((statement.get("mainsnak") or {}).get("datavalue") or {}).get("value")
        if not isinstance(value, dict):
            return value
        # pywikibot's JSON may give only the numeric id; the stored form both.
        return value.get("id") or (f"Q{value['numeric-id']}" if "numeric-id" in value else None)

    return item(theirs) != item(read) or any(
        bool(theirs.get(key)) != bool(read.get(key)) or (theirs.get(key) and theirs.get(key) != read.get(key))
        for key in _COMPARED)


def repair_rank_change(site: Any, page_id: int, done: Written, base: int, read: Mapping[str, Any],
                       wanted: str, send: Callable[[str, Dict[str, Any]], Any], summary: str) -> Written:
    """``done`` (the rank change's outcome) when nobody came between, else :class:`Repaired`.

    :param base: the revision the follow-up read (its ``baserevid``).
    :param read: the statement as the follow-up read it (before its rank was set).
    :param wanted: the rank the last decision asks for.
    :param send: sends one request once with ``done.revid`` as its ``baserevid``
        (``follow_up._send``); its answer.
    :param summary: the repair's edit summary.
    """
    theirs = overwritten(site, page_id, done.revid, base, done.statement_id)
    if theirs is None or not _differs(theirs, read):
        return done
    rank = wanted if theirs.get("rank") == read.get("rank") else str(theirs.get("rank") or "")
    restored = dict(theirs, rank=rank)
    answer = send(summary, dict(action="wbsetclaim", claim=json.dumps(restored)))
    revid = int((answer.get("pageinfo") or {}).get("lastrevid") or 0)
    return Repaired(revid=revid, statement_id=done.statement_id, rank=rank, first=done.revid)


def record_repaired(store: Any, item: Any, outcome: Repaired, started: object, note: str,
                    worker: Optional[str]) -> None:
    """Both edits of a repaired rank follow-up in the audit: the rank change, the repair (with
    the rank it left); when that is the other person's rank, a ``skipped`` row ends the
    follow-up, their statement left as they made it.

    :param store: the queue (``record_follow_up``); :param item: the follow-up.
    """
    store.record_follow_up(item, Written(revid=outcome.first, statement_id=outcome.statement_id,
                                         rank=item.wanted), started, note, worker=worker)
    store.record_follow_up(item, outcome, started, f"{note}; someone's change to the statement made "
                           "meanwhile put back", worker=worker)
    if outcome.rank != item.wanted:
        store.record_follow_up(item, Skipped(f"changed by someone else: rank is {outcome.rank} (set while "
                                             "the rank change was in flight)"), started, note, worker=worker)
