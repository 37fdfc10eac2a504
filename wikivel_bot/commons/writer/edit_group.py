"""The parts of one grouped edit that are not the writer's flow: the statements it adds, the
wait for pywikibot's put throttle, and finding this bot's own edit again after a crash.

:class:`~wikivel_bot.commons.writer.statement_writer.StatementWriter` writes all approved pairs of one file
as one ``wbeditentity`` edit; this module holds what it builds on:

* :func:`new_statement` — one P180 statement with a GUID the writer chooses (as pywikibot's
  ``addClaim`` does), so the statement ids are known before the edit is sent;
  :func:`statement_guid` makes it the same for every attempt at the pair: an edit the wiki
  applies late (after the writer re-read the file and saw nothing) and the retry carry the
  same GUID. Wikibase does not refuse a known GUID (sent with a fresh ``baserevid`` it
  replaces that statement, ``ChangeOpStatement``): the second of them is refused because
  its ``baserevid`` is stale by then — the patch of "add this GUID" onto a revision that
  has it does not apply, an edit conflict — and a retry re-reads first, never a second
  statement.
* :func:`wait_put_throttle` — waits until pywikibot's write throttle lets the next write
  through, *without* taking the write slot: the writer then makes its last check and sends,
  and the request's own throttle wait is (about) zero. The last check is therefore the last
  thing that happens before the request leaves.
* :class:`History` — this bot's recent revisions of the file: a statement found on the file
  whose edit's answer was lost (a kill -9 between the API's success and the queue's commit)
  is recovered from the revision that added it, with its statement GUID from that
  revision's diff, for every pair of the group.
* :class:`Lost` — a pair this writer no longer holds (another writer took it over, or a
  human changed it): nothing was written for it and nothing is recorded.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from wikivel_bot.commons.mediainfo import DEPICTS, depicts_of, parse_entity
from wikivel_bot.types import Written

# Page revisions searched for this bot's own lost write.
RECOVERY_DEPTH = 50

# "(wikivel-bot 0.1.0, batch b-20240502090000-fa17)" at the end of every summary.
BATCH_IN_SUMMARY = re.compile(r"\bbatch (b-\d{14}-[0-9a-f]{4})\b")

__all__ = ["BATCH_IN_SUMMARY", "GUID_NAMESPACE", "History", "Lost", "RECOVERY_DEPTH", "new_statement",
           "recovery_marker", "statement_guid", "wait_put_throttle"]

# The namespace of this bot's statement GUIDs (uuid5 of the pair's name in it). Never
# change it: a pair's retry after an upgrade must still carry its first attempt's GUID.
GUID_NAMESPACE = uuid.UUID("6b54d81b-d965-4d05-99fe-0b0bf1583f03")


@dataclass(frozen=True)
class Lost:
    """The pair is no longer this writer's (``confirm_claim`` said no): not written, not
    recorded; the writer or human that has it now decides."""

    reason: str


def recovery_marker(qid: str) -> str:
    """How every summary of this bot names an item it adds; :class:`History` looks for it."""
    return f"[[d:{qid}|{qid}]]"


def statement_guid(mid: str, qid: str, candidate_id: int, written_before: int) -> str:
    """The GUID of the statement that writes one approved pair: ``<entity id>$<UUID>``, the
    form Wikibase's ``GuidValidator`` accepts (a version-5 UUID).

    The same for every attempt at one approval, never the attempt number: a first edit the
    wiki applies only after the writer's re-read and its retry must carry the same GUID.
    ``written_before`` (the pair's earlier ``written`` edits) changes when a statement that
    was written and reverted is approved again, so that write is a new statement. The file
    and the item are in the name too, so that another queue's candidate with the same id
    never names a statement of this file.
    """
    return f"{mid}${uuid.uuid5(GUID_NAMESPACE, f'{mid}:{qid}:{candidate_id}:{written_before}')}"


def new_statement(repo: Any, mid: str, qid: str, prominent: bool, guid: Optional[str] = None) -> Any:
    """A ``pywikibot.Claim`` P180 → ``qid`` for the MediaInfo ``mid``, with its own GUID.

    :param repo: the items' Wikibase repository (the claim's target lives there).
    :param prominent: preferred rank ("prominent" in the Commons UI).
    :param guid: the statement's GUID (:func:`statement_guid`); None: a random one.
    """
    import pywikibot

    claim = pywikibot.Claim(repo, DEPICTS, datatype="wikibase-item")
    claim.setTarget(pywikibot.ItemPage(repo, qid))
    if prominent:
        claim.setRank("preferred")
    # The id Wikibase keeps: known before the edit, so the audit never waits for an answer
    # that may be lost.
    claim.snak = guid or f"{mid}${uuid.uuid4()}"
    return claim


def wait_put_throttle(throttle: Any) -> float:
    """Wait until pywikibot's put throttle would let a write through now; the seconds waited.

    pywikibot waits inside the request (``Request.submit`` calls ``site.throttle(write=True)``,
    which waits ``put_throttle`` after the last write and then marks this moment as the last
    write). Calling the throttle here would take that slot and make the request wait a second
    full interval, so this asks ``waittime`` and sleeps with the throttle's own ``wait``
    instead, leaving the slot to the request.

    :param throttle: the edited site's ``pywikibot.throttle.Throttle`` (``site.throttle``).
    """
    waited = 0.0
    # A loop: another thread's write (or a new retry-after) may move the time on.
    while True:
        left = float(throttle.waittime(write=True))
        if left <= 0:
            return waited
        throttle.wait(left)
        waited += left


class History:
    """This bot's recent revisions of one file, read at most once per group attempt.

    :param site: the Commons site (``simple_request``, ``username``).
    :param page_id: the file.
    """

    def __init__(self, site: Any, page_id: int) -> None:
        self.site = site
        self.page_id = page_id
        self._ours: Optional[List[Dict[str, Any]]] = None
        self._contents: Dict[int, Dict[str, Any]] = {}

    def recover(self, qid: str, present: Set[str]) -> Optional[Written]:
        """This bot's earlier write of ``qid`` whose answer was lost, or None.

        Looks for a recent revision by this account whose summary names the item (its
        :func:`recovery_marker` and "wikivel-bot"), takes the P180 statements of ``qid`` it
        added (its content minus its parent's) and returns the one still present as
        ``Written`` under the batch its summary names. A grouped edit added several items:
        each pair of the group finds the same revision and its own statement.

        :param present: GUIDs of the file's current P180 statements naming ``qid``.
        """
        for comment, revid, parent, contents in self._own_edits_of(qid):
            added = _guids(contents.get(revid, {}), qid) - _guids(contents.get(parent, {}), qid)
            for guid in sorted(added & present):
                made_by = BATCH_IN_SUMMARY.search(comment)
                return Written(revid=revid, statement_id=guid,
                               batch_id=made_by.group(1) if made_by else "")
        return None

    def added(self, qid: str, guid: str) -> Optional[Written]:
        """This bot's revision that added the statement ``guid`` of ``qid``, whether or not
        the file still shows it (``commons.writer.unsettled``: an edit applied late and then
        removed by someone is still this bot's edit), or None."""
        for comment, revid, parent, contents in self._own_edits_of(qid):
            if guid in _guids(contents.get(revid, {}), qid) - _guids(contents.get(parent, {}), qid):
                made_by = BATCH_IN_SUMMARY.search(comment)
                return Written(revid=revid, statement_id=guid, batch_id=made_by.group(1) if made_by else "")
        return None

    def followed_up(self, qid: str, guid: str, rank: str = "") -> Optional[int]:
        """The revision of this bot's own follow-up edit (``commons.writer.follow_up``) that removed
        the statement ``guid`` (``rank`` ""), or set its rank to ``rank``; None if there is
        none. A follow-up whose answer was lost (a crash before its record) is recorded
        from it, so every bot edit stays in the audit."""
        for _, revid, parent, contents in self._own_edits_of(qid):
            before = _statement(contents.get(parent, {}), guid)
            after = _statement(contents.get(revid, {}), guid)
            if before is None:
                continue
            if not rank and after is None:
                return revid
            if rank and after is not None and after.get("rank") == rank and before.get("rank") != rank:
                return revid
        return None

    def _own_edits_of(self, qid: str) -> Iterator[Tuple[str, int, int, Dict[int, Dict[str, Any]]]]:
        """(summary, revision, parent, both contents) of this bot's recent edits whose summary
        names ``qid`` (its :func:`recovery_marker` and "wikivel-bot"), newest first."""
        marker = recovery_marker(qid)
        for revision in self._own_revisions():
            comment = revision.get("comment", "")
            if marker not in comment or "wikivel-bot" not in comment or not revision.get("parentid"):
                continue
            revid, parent = int(revision["revid"]), int(revision["parentid"])
            yield comment, revid, parent, self._content(revid, parent)

    def _own_revisions(self) -> List[Dict[str, Any]]:
        if self._ours is None:
            user = self.site.username()
            self._ours = self._revisions(pageids=self.page_id, rvuser=user, rvprop="ids|comment",
                                         rvlimit=RECOVERY_DEPTH) if user else []
        return self._ours

    def _content(self, *revids: int) -> Dict[int, Dict[str, Any]]:
        missing = [r for r in revids if r not in self._contents]
        if missing:
            for revision in self._revisions(revids="|".join(map(str, missing)), rvprop="ids|content",
                                            rvslots="mediainfo"):
                self._contents[int(revision["revid"])] = revision
        return {r: self._contents[r] for r in revids if r in self._contents}

    def _revisions(self, **params: Any) -> List[Dict[str, Any]]:
        """``prop=revisions`` entries (formatversion 2) of the pages asked for, all pages."""
        data = self.site.simple_request(action="query", prop="revisions", formatversion=2,
                                        **params).submit()
        return [r for page in data.get("query", {}).get("pages", [])
                for r in page.get("revisions", [])]


def _statement(revision: Mapping[str, Any], guid: str) -> Optional[Dict[str, Any]]:
    """The P180 statement ``guid`` in one revision's mediainfo slot, or None."""
    slot = (revision.get("slots") or {}).get("mediainfo") or {}
    statements = parse_entity(slot.get("content") or slot.get("*")).get("statements")
    group = statements.get(DEPICTS) if isinstance(statements, dict) else None
    return next((s for s in group if isinstance(s, dict) and s.get("id") == guid), None) \
        if isinstance(group, list) else None


def _guids(revision: Mapping[str, Any], qid: str) -> set:
    """GUIDs of the P180 statements naming ``qid`` in one revision's mediainfo slot."""
    slot = (revision.get("slots") or {}).get("mediainfo") or {}
    statements = parse_entity(slot.get("content") or slot.get("*")).get("statements")
    group = statements.get(DEPICTS) if isinstance(statements, dict) else None
    found = set()
    for statement in group if isinstance(group, list) else []:
        named = depicts_of({"statements": {DEPICTS: [statement]}})
        if named and named[0].qid == qid and isinstance(statement.get("id"), str):
            found.add(statement["id"])
    return found
