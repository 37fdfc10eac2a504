"""Sending one group edit: the last check, the request that leaves once, and what happens
when its answer is late or says "lagged".

:class:`~wikivel_bot.commons.writer.statement_writer.StatementWriter` plans a file's group edit;
:func:`send_group` sends it::

    last check  wait out the put throttle, then ``still_ours`` for every pair left (a
                decision clears the writer's claim, so a reject, undo or rank switch drops
                its pair here); remembered with the time it was made
    fresh?      if more than ``fresh_s`` (a fixed fraction of the lease) passed since that
                check — a process frozen, a slow summary, a long lag wait — check again
    send        one ``wbeditentity`` through :func:`~wikivel_bot.commons.writer.one_shot.send_once`:
                never resent by pywikibot
    lagged      a ``maxlag`` answer applied nothing: wait the lag out (pywikibot's throttle,
                so ``retry_max`` bounds it) and start again at the last check, up to
                ``config.max_retries`` times
    no answer   a timeout or garbled answer may hide an applied edit: re-read the file; the
                statement GUIDs were chosen here, so "are my GUIDs on the page?" decides —
                all there: each pair is ``Written`` with the revision that added them (found
                in the page history); none there: a transient failure, the next cycle writes
                them after a fresh re-read; nothing is resent blindly. The GUIDs are the
                same at the retry (``edit_group.statement_guid``). The wiki does not refuse
                a GUID it knows — with a fresh ``baserevid`` the same id replaces its
                statement (``ChangeOpStatement``) — what protects the file is the stale
                ``baserevid`` and the re-read: should the wiki apply the first edit only
                after that re-read, whichever of the two lands second was made on a revision
                without the statement, and Wikibase's patch of "add this GUID" onto a
                revision that has it does not apply: an edit conflict, not a second
                statement (on a file that had no structured data, the second is made on a
                revision without MediaInfo and fails to save, ``failed-save``, see
                ``statement_writer``); the next re-read finds the item and records the revision

Twins — a statement just added whose item the file shows twice, because a human or another
tool added the item between the re-read and the edit — are found by re-reading the file,
never from the answer: Wikibase answers with the entity built on the *base* revision and
patches the change onto the latest one afterwards (``repo/includes/Api/EditEntity.php``), so
a statement added meanwhile is saved but not in the answer. The file is re-read after every
edit that was patched or may have been: the answer warns ``wikibase-conflict-patched`` (or
``wikibase-self-conflict-patched``), or carries no entity to tell; and after an unanswered
edit that turns out applied. An edit whose base was the latest revision cannot have been
patched, and the re-read's plan left out every item the file showed then, so it needs no
second read. :func:`send_group` reports the twins (``Sent.twins``) for the follow-up module
to remove and record; should that re-read fail, every statement of the edit is reported and
``follow_up.remove_twins``, which re-reads the file itself, removes only the real twins. (A
writer that resumes after its lease was taken over carries the same GUID as the writer that
took over, on a ``baserevid`` read before that writer's edit: an edit conflict, not a twin.)
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Sequence, Tuple, Union

from wikivel_bot.commons.writer.edit_group import History, Lost, wait_put_throttle
from wikivel_bot.commons.mediainfo import DEPICTS
from wikivel_bot.commons.writer.one_shot import LagRefused, Unanswered, send_once
from wikivel_bot.commons.writer.outcomes import failure_for
from wikivel_bot.events import event
from wikivel_bot.types import ApprovedEdit, DryRun, Failed, Written, rank_of

__all__ = ["Sent", "send_group"]

# A pair's outcome in ``done``: what the writer records (Lost: not this writer's any more).
Done = Dict[int, Union[Written, DryRun, Failed, Lost]]


@dataclass
class Sent:
    """What one send did beyond each pair's outcome: ``twins`` are (candidate id, GUID) of
    statements just added whose item the file now shows more than once."""

    twins: List[Tuple[int, str]] = field(default_factory=list)


def send_group(writer: Any, edits: List[ApprovedEdit], mediainfo: Any, claims: Dict[int, Any],
               filter_ours: Callable[[List[ApprovedEdit]], List[ApprovedEdit]],
               done: Done, simulate_check: Callable[[], bool]) -> Sent:
    """Send ``edits`` (pairs of one file, planned) as one edit; outcomes go into ``done``.

    :param writer: the ``StatementWriter`` (``site``, ``tags``, ``summary``, ``fresh_s``,
        ``monotonic``, ``batch_id``).
    :param claims: {candidate id: pywikibot Claim with its GUID}: the same GUIDs for every
        try, so a late answer is recognised on the page.
    :param filter_ours: the pairs of a list this writer still holds (the last check).
    :param simulate_check: ``guard_simulate`` for this writer: True when simulated.
    :raises Unanswered: no answer and the GUIDs are not on the page (nothing applied).
    :raises LagRefused: still lagged after ``config.max_retries`` waits.
    """
    from pywikibot import config

    sent = Sent()
    # A statement of this pair's GUID already on the file (an earlier attempt applied late,
    # and someone changed its item since): that edit is recorded, never made again.
    edits = _settle_present(writer, edits, mediainfo, claims, done)
    lagged = 0
    while edits:
        edits, checked = _last_check(writer, edits, mediainfo, filter_ours, simulate_check)
        if not edits:
            return sent
        summary = writer.summary(edits)
        data = {"claims": {DEPICTS: [claims[e.candidate_id].toJSON() for e in edits]}}
        simulate = simulate_check()
        if writer.monotonic() - checked > writer.fresh_s:
            continue  # the check is stale (a frozen or slow process): check again first
        params = dict(action="wbeditentity", id=mediainfo.getID(), bot=True, summary=summary,
                      baserevid=mediainfo.latest_revision_id, data=json.dumps(data),
                      token=mediainfo.repo.tokens["csrf"])
        if writer.tags:
            params["tags"] = "|".join(writer.tags)
        # Noted (committed) before the request leaves: should its answer never come — a
        # timeout, a kill -9 — a later run re-reads the file and settles it
        # (commons.writer.unsettled), whatever the pair's state by then.
        noted = [] if simulate else writer.journal.sending(
            [(e.candidate_id, str(claims[e.candidate_id].snak)) for e in edits])
        writer.budget.spend(edits[0].page_id)  # edit_budget: every request that leaves counts
        try:
            answer = send_once(mediainfo.repo, **params)
        except LagRefused as exc:
            writer.journal.answered(noted)
            lagged += 1
            if lagged > config.max_retries:
                raise
            mediainfo.repo.throttle.lag(exc.lag * lagged)
            continue  # nothing was applied: last check again, then send again
        except Unanswered:
            # One line for the operator (pywikibot's traceback is cut to its last line:
            # commons.site.OneLineTracebacks), saying what happens next.
            event("write", "no-answer", level=logging.WARNING, file=mediainfo.getID(),
                  batch=writer.batch_id, next="re-reading the file to see whether the edit was applied; "
                  "never sent again blindly")
            _recover_unanswered(writer, edits, mediainfo, claims, done)
            # Applied after all, perhaps patched onto a newer revision: the re-read just made
            # shows any twin.
            sent.twins = twins_on_page(mediainfo, edits, claims)
            return sent
        except Exception:
            writer.journal.answered(noted)  # an error answer: nothing of it was applied
            raise
        if simulate:
            for edit in edits:
                done[edit.candidate_id] = DryRun(summary)
            return sent
        entity = answer.get("entity") or {}
        revid = int(entity.get("lastrevid") or 0)
        mediainfo.latest_revision_id = revid
        for edit in edits:
            done[edit.candidate_id] = Written(revid=revid, statement_id=str(claims[edit.candidate_id].snak),
                                              rank=rank_of(edit.prominent))
        sent.twins = _twins_after(answer, edits, mediainfo, claims)
        return sent
    return sent


def _last_check(writer: Any, edits: List[ApprovedEdit], mediainfo: Any,
                filter_ours: Callable[[List[ApprovedEdit]], List[ApprovedEdit]],
                simulate_check: Callable[[], bool]) -> Tuple[List[ApprovedEdit], float]:
    """Throttle wait, then the last check; (pairs still held, when the check was made)."""
    if not simulate_check():
        # The CSRF token and the put throttle come before the last check, so that nothing
        # between that check and the request leaving can take long.
        mediainfo.repo.tokens["csrf"]
        wait_put_throttle(mediainfo.repo.throttle)
    # The kill switch, read again right before the edit (stop_page.StopGuard): raises
    # WritingPaused, and the run ends with its claims released.
    writer.check_stop()
    # Timed from before the check: the age measured is never less than the check's.
    checked = writer.monotonic()
    return filter_ours(edits), checked


def _recover_unanswered(writer: Any, edits: List[ApprovedEdit], mediainfo: Any,
                        claims: Dict[int, Any], done: Done) -> None:
    """After a request without an answer: the pairs whose GUIDs are on the page are
    ``Written`` (with the revision that added them); if none is, re-raise."""
    mediainfo.get(force=True)
    if len(_settle_present(writer, edits, mediainfo, claims, done)) == len(edits):
        raise Unanswered("no answer to the edit and its statements are not on the page: "
                         "nothing was applied; retried after a fresh re-read")
    for edit in edits:
        # One edit applies all its statements or none; should the page say otherwise, the
        # missing ones are a transient failure, written after a fresh re-read.
        done.setdefault(edit.candidate_id, failure_for(Unanswered("statement not on the page after "
                                                                  "an unanswered edit")))


def _settle_present(writer: Any, edits: List[ApprovedEdit], mediainfo: Any, claims: Dict[int, Any],
                    done: Done) -> List[ApprovedEdit]:
    """The pairs whose GUID is not on the (loaded) page; the others are ``Written`` with the
    revision that added their statement (found in the page history)."""
    present = {c.snak for group in mediainfo.statements.values() for c in group}
    ours = [e for e in edits if claims[e.candidate_id].snak in present]
    history = History(writer.site, edits[0].page_id) if ours else None
    for edit in ours:
        guid = str(claims[edit.candidate_id].snak)
        found = history.recover(edit.qid, {guid}) if history is not None else None
        revid = found.revid if found is not None else int(mediainfo.latest_revision_id or 0)
        done[edit.candidate_id] = Written(revid=revid, statement_id=guid, rank=rank_of(edit.prominent))
    return [e for e in edits if e not in ours]


def _may_be_patched(answer: Dict[str, Any]) -> bool:
    """Whether the wiki may have patched the edit onto a revision newer than its base: it
    says so (``wikibase-conflict-patched``, ``wikibase-self-conflict-patched``, in whatever
    shape the warnings come), or the answer has no entity revision to tell by."""
    warnings = json.dumps(answer.get("warnings") or {})
    entity = answer.get("entity")
    return "conflict-patched" in warnings or not isinstance(entity, dict) or not entity.get("lastrevid")


def _twins_after(answer: Dict[str, Any], edits: Sequence[ApprovedEdit], mediainfo: Any,
                 claims: Dict[int, Any]) -> List[Tuple[int, str]]:
    """The twins of an edit just answered, from a re-read of the file when it may have been
    patched (module docstring); every statement of the edit when that re-read fails."""
    if not _may_be_patched(answer):
        return []
    try:
        mediainfo.get(force=True)
    except Exception:  # noqa: BLE001 - remove_twins re-reads and decides; the edit stands
        return [(e.candidate_id, str(claims[e.candidate_id].snak)) for e in edits]
    return twins_on_page(mediainfo, edits, claims)


def twins_on_page(mediainfo: Any, edits: Sequence[ApprovedEdit], claims: Dict[int, Any]) -> List[Tuple[int, str]]:
    """(candidate id, GUID) of the statements of ``edits`` the loaded ``mediainfo`` shows
    next to another statement of the same item."""
    statements = mediainfo.statements.get(DEPICTS, [])
    out = []
    for edit in edits:
        guid = str(claims[edit.candidate_id].snak)
        if not any(c.snak == guid for c in statements):
            continue
        if any(c.snak != guid and getattr(c.getTarget(), "id", None) == edit.qid for c in statements):
            out.append((edit.candidate_id, guid))
    return out
