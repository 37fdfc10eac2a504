"""Follow-up edits: the wiki made to agree again with a decision that came too late to stop
an edit, and a statement this bot added twice removed again.

A reject, an undo or a rank switch that lands after the writer's request left cannot stop
that edit (``commons.writer.edit_send``'s last check is the last moment it can). The edit is
recorded and the pair keeps the reviewer's decision; the store then lists the pair as owed a
follow-up (``queue.store.follow_ups``). :func:`settle_follow_ups` claims those, and for each:

    re-read     the file (by page id) and find the bot's statement by its GUID
    left alone  the statement is gone, changed by a human (item, rank, qualifiers or
                references), or the wiki already shows what the decision asks: recorded as
                skipped with the reason, nothing is edited; statements others added are
                never named
    last check  wait out the put throttle, then ``confirm_follow_up`` (a newer decision
                clears the claim: the next cycle looks again)
    edit        ``wbremoveclaims`` (rejected, or approval undone) or ``wbsetclaim`` with the
                rank the last decision asks for, baserevid from the re-read, sent once
                (``commons.writer.one_shot``); the summary names the later decision, who made it,
                and the batch and revision of the edit it follows up
    repair      a rank change (the whole statement, as read) that replaced someone's change
                made after the read — a qualifier, a reference — puts it back in one more
                edit (``commons.writer.rank_repair``)
    record      a ``reverted`` row (removal) or a ``written`` row with the new rank, under
                the batch that wrote the statement, so ``revert --batch`` neither removes it
                twice nor re-adds anything

:func:`remove_twins` runs after a group edit that the wiki patched onto a newer revision (or
may have), when a re-read of the file shows one of its new statements' items twice (a human
or another tool added the item since the writer's re-read; ``commons.writer.edit_send``
says why the answer cannot tell): it re-reads the file once more, and the new statement is
removed again in one edit and recorded, the older one stays. A dry run simulates every edit and records nothing.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime, timezone
from typing import Any, Callable, List, Optional, Protocol, Sequence, Tuple, Union

from wikivel_bot.commons.writer.edit_group import History, Lost, recovery_marker, wait_put_throttle
from wikivel_bot.commons.mediainfo import DEPICTS, load_mediainfo
from wikivel_bot.commons.writer.one_shot import Unanswered, send_once
from wikivel_bot.commons.writer.rank_repair import Repaired, record_repaired, repair_rank_change
from wikivel_bot.commons.writer.outcomes import WriteStopped, failure_for
from wikivel_bot.commons.writer.statement_writer import guard_simulate
from wikivel_bot.commons.writer.stop_page import WritingPaused
from wikivel_bot.core.edit_comment import COMMENT_LIMIT, plain, ranking, removing, room, shorten
from wikivel_bot.events import event
from wikivel_bot.types import REMOVE, DryRun, Failed, Skipped, Written

__all__ = ["FollowUpQueue", "follow_up", "follow_up_summary", "remove_twins", "settle_follow_ups",
           "twin_groups", "twin_summary"]

Outcome = Union[Written, Skipped, Failed, DryRun]


class FollowUp(Protocol):
    """One owed follow-up (``queue.store.follow_ups.FollowUp``, read-only)."""

    candidate_id: int
    page_id: int
    qid: str
    statement_id: str
    batch_id: str
    revid: int
    written_rank: str

    @property
    def wanted(self) -> str: ...

    @property
    def mid(self) -> str: ...

    def decision(self) -> str: ...


class FollowUpQueue(Protocol):
    def claim_follow_ups(self, limit: int, worker: str) -> List[FollowUp]: ...

    def confirm_follow_up(self, item: FollowUp, worker: str) -> bool: ...

    def release_follow_up(self, item: FollowUp, worker: str) -> None: ...

    def record_follow_up(self, item: FollowUp, outcome: Outcome, started_at: object, note: str,
                         worker: Optional[str] = None) -> None: ...

    def record_twin_removed(self, candidate_id: int, batch_id: str, revid: int, statement_id: str,
                            note: str) -> None: ...


def follow_up_summary(item: FollowUp, batch_id: str, version: str) -> str:
    """The summary of a follow-up edit: what it does, the later decision (what, who), and
    the edit it follows up (its batch and revision).

    Within what Commons keeps after Wikibase's autocomment of the edit (a removal names the
    removed value, a rank change the statement: ``core.edit_comment``): the decision's words
    (a long reviewer name) are cut, never the item link, "wikivel-bot" or the batch id that
    ``edit_group.History`` reads back."""
    item_link = recovery_marker(item.qid)
    what = (f"Removing depicts {item_link} again: " if item.wanted == REMOVE
            else f"Setting depicts {item_link} to {item.wanted} rank: ")
    tail = f" after edit {item.revid} of {item.batch_id} was sent (wikivel-bot {version}, batch {batch_id})"
    limit = room(removing([item.qid]) if item.wanted == REMOVE else ranking(item.qid))
    return what + shorten(plain(item.decision()), limit - len(what) - len(tail)) + tail


def twin_summary(qids: Sequence[str], batch_id: str, version: str) -> str:
    """The summary of the edit removing this bot's second statements of ``qids``."""
    items = ", ".join(recovery_marker(q) for q in qids)
    return (f"Removing a second depicts {items} this bot just added (the file already "
            f"shows it) (wikivel-bot {version}, batch {batch_id})")


def twin_groups(removable: Sequence[Tuple[int, str, str]], batch_id: str, version: str
                ) -> List[List[Tuple[int, str, str]]]:
    """``removable`` (candidate id, GUID, item) as removal edits: as many to an edit as
    Wikibase's autocomment (it names every removed value) and the summary fit in 500
    characters, so the stored comment keeps every item link and the batch id."""
    out: List[List[Tuple[int, str, str]]] = []
    for twin in removable:
        grown = [q for _, _, q in (out[-1] if out else [])] + [twin[2]]
        if out and len(twin_summary(grown, batch_id, version)) + removing(grown) <= COMMENT_LIMIT:
            out[-1].append(twin)
        else:
            out.append([twin])
    return out


def settle_follow_ups(store: FollowUpQueue, writer: Any, worker: str, *, limit: int = 50,
                      clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> List[Outcome]:
    """Claim and make every follow-up owed now (up to ``limit``); the outcomes recorded.

    :param writer: the run's ``StatementWriter`` (site, batch, tags, dry run, version).
    :raises WriteStopped, WriteRefused: the account cannot edit; the claim is given back.
    :raises WritingPaused: the stop page says stop; the claim is given back.
    """
    done: List[Outcome] = []
    for item in store.claim_follow_ups(limit, worker):
        if not writer.budget.allows(item.page_id):
            # The file had its edits for now (edit_budget): still owed, made next time.
            store.release_follow_up(item, worker)
            event("write", "follow-up-deferred", file=item.mid, item=item.qid,
                  reason="the file's edit budget is spent for now")
            continue
        started = clock()
        try:
            outcome = follow_up(writer, item, functools.partial(store.confirm_follow_up, item, worker))
        except BaseException:
            store.release_follow_up(item, worker)
            raise
        if isinstance(outcome, Lost):
            event("write", "follow-up-lost", file=item.mid, item=item.qid, reason=outcome.reason)
            continue  # a newer decision cleared the claim: the next cycle looks again
        note = f"follow-up: {item.decision()} after the edit was sent"
        if isinstance(outcome, Repaired):  # two edits: the rank change, the repair
            record_repaired(store, item, outcome, started, note, worker)
        else:
            store.record_follow_up(item, outcome, started, note, worker=worker)
        event("write", "follow-up-" + type(outcome).__name__.lower(), file=item.mid, item=item.qid,
              wanted=item.wanted, batch=item.batch_id, revid=getattr(outcome, "revid", None),
              reason=getattr(outcome, "reason", None))
        done.append(outcome)
    return done


def follow_up(writer: Any, item: FollowUp, still_ours: Callable[[], bool]) -> Union[Outcome, Lost]:
    """Make the wiki agree with ``item``'s last decision, if the bot's statement is still as
    it wrote it; see the module docstring."""
    try:
        mediainfo = load_mediainfo(writer.site, item.page_id)
        found = _statement(mediainfo, item)
        if isinstance(found, Skipped):
            # Perhaps this bot's own follow-up did it and died before its record.
            return (_settled(writer, item) if mediainfo is not None else None) or found
        if not writer.simulates:
            mediainfo.repo.tokens["csrf"]
            wait_put_throttle(mediainfo.repo.throttle)
        writer.check_stop()  # the kill switch, right before the last check and the edit
        if not still_ours():
            return Lost(f"{item.mid} {item.qid}: decided again meanwhile")
        simulate = guard_simulate(writer.dry_run)
        summary = follow_up_summary(item, writer.batch_id, writer.version)
        if item.wanted == REMOVE:
            params = dict(action="wbremoveclaims", claim=item.statement_id)
        else:
            read = found.toJSON()
            found.setRank(item.wanted)
            params = dict(action="wbsetclaim", claim=json.dumps(found.toJSON()))
        base = mediainfo.latest_revision_id
        try:
            answer = _send(writer, mediainfo, summary, params)
        except Unanswered:
            return _settled(writer, item) or failure_for(Unanswered("no answer; not applied"))
        if simulate:
            return DryRun(summary)
        revid = int((answer.get("pageinfo") or {}).get("lastrevid") or 0)
        done = Written(revid=revid, statement_id=item.statement_id,
                       rank="" if item.wanted == REMOVE else item.wanted)
        return done if item.wanted == REMOVE else _repaired(writer, mediainfo, item, done, base, read)
    except (WriteStopped, WritingPaused):
        raise
    except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
        return failure_for(exc)


def remove_twins(writer: Any, page_id: int, twins: Sequence[Tuple[int, str]]
                 ) -> List[Tuple[int, str, Outcome]]:
    """Remove the statements ``twins`` (candidate id, GUID) the group edit just added, each
    of whose item the file shows more than once; (candidate id, GUID, outcome) for each.
    One edit, or more when one comment cannot name them all (:func:`twin_groups`)."""
    try:
        mediainfo = load_mediainfo(writer.site, page_id)
        statements = mediainfo.statements.get(DEPICTS, []) if mediainfo is not None else []
        ours = {guid for _, guid in twins}
        removable = []
        for candidate_id, guid in twins:
            claim = next((c for c in statements if c.snak == guid), None)
            qid = str(getattr(claim.getTarget(), "id", "")) if claim is not None else ""
            if claim is not None and any(getattr(c.getTarget(), "id", None) == qid and c.snak not in ours
                                         for c in statements):
                removable.append((candidate_id, guid, qid))
    except (WriteStopped, WritingPaused):
        raise
    except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
        failure = failure_for(exc)
        return [(c, g, failure) for c, g in twins]
    done: List[Tuple[int, str, Outcome]] = []
    for group in twin_groups(removable, writer.batch_id, writer.version):
        summary = twin_summary([q for _, _, q in group], writer.batch_id, writer.version)
        try:
            if not writer.simulates:
                wait_put_throttle(mediainfo.repo.throttle)
            writer.check_stop()
            answer = _send(writer, mediainfo, summary,
                           dict(action="wbremoveclaims", claim="|".join(g for _, g, _ in group)))
            revid = int((answer.get("pageinfo") or {}).get("lastrevid") or 0)
            if revid:
                # The next group's baserevid: this bot's own revision, not a stale base.
                mediainfo.latest_revision_id = revid
            outcome: Outcome = DryRun(summary) if writer.simulates else Written(revid=revid)
        except (WriteStopped, WritingPaused):
            raise
        except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
            outcome = failure_for(exc)
        done += [(c, g, outcome) for c, g, _ in group]
    return done


def _repaired(writer: Any, mediainfo: Any, item: FollowUp, done: Written, base: int, read: Any) -> Written:
    """The rank change ``done``, or :class:`~wikivel_bot.commons.writer.rank_repair.Repaired`
    when it overwrote someone's change made after the read (``rank_repair``). A repair that
    fails leaves the rank change recorded, and says so in the log."""
    mediainfo.latest_revision_id = done.revid  # the repair's base: the follow-up's own revision
    summary = (f"Putting back what was added to depicts {recovery_marker(item.qid)} while its rank "
               f"change was in flight (wikivel-bot {writer.version}, batch {writer.batch_id})")
    try:
        return repair_rank_change(writer.site, item.page_id, done, base, read, item.wanted,
                                  lambda text, params: _send(writer, mediainfo, text, params), summary)
    except (WriteStopped, WritingPaused):
        raise
    except Exception as exc:  # noqa: BLE001 - the rank change itself was made and is recorded
        event("write", "rank-repair-failed", file=item.mid, item=item.qid, revid=done.revid,
              reason=" ".join(str(exc).split())[:200] or type(exc).__name__)
        return done


def _send(writer: Any, mediainfo: Any, summary: str, params: Any) -> Any:
    params = dict(params, baserevid=mediainfo.latest_revision_id, summary=summary, bot=True,
                  token=mediainfo.repo.tokens["csrf"])
    if writer.tags:
        params["tags"] = "|".join(writer.tags)
    writer.budget.spend(int(str(mediainfo.getID())[1:]))  # edit_budget: every request counts
    return send_once(mediainfo.repo, **params)


def _statement(mediainfo: Any, item: FollowUp) -> Any:
    """The bot's statement as it wrote it, or Skipped with why it is left alone."""
    if mediainfo is None:
        return Skipped("file page deleted")
    claim = next((c for c in mediainfo.statements.get(DEPICTS, []) if c.snak == item.statement_id), None)
    if claim is None:
        return Skipped("statement no longer present (removed by someone else)")
    if claim.getSnakType() != "value" or getattr(claim.getTarget(), "id", None) != item.qid:
        return Skipped("changed by someone else: it no longer depicts " + item.qid)
    if claim.qualifiers or claim.sources:
        return Skipped("changed by someone else: qualifiers or references were added")
    rank = claim.getRank()
    if item.wanted != REMOVE and rank == item.wanted:
        return Skipped(f"the wiki already shows {rank} rank")
    if item.written_rank and rank != item.written_rank:
        return Skipped(f"changed by someone else: rank is {rank}, the bot wrote {item.written_rank}")
    return claim


def _settled(writer: Any, item: FollowUp) -> Optional[Written]:
    """This bot's own follow-up edit that already did what ``item`` asks (its answer was lost
    to a timeout, or the process died before recording it), from the file's history."""
    rank = "" if item.wanted == REMOVE else item.wanted
    revid = History(writer.site, item.page_id).followed_up(item.qid, item.statement_id, rank)
    return Written(revid=revid, statement_id=item.statement_id, rank=rank) if revid else None
