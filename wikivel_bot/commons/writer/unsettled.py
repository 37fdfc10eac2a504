"""Edits whose answer never came: noted before they leave, settled by a later re-read.

MediaWiki finishes a POST after the client hung up. A write that timed out ("no answer …
nothing was applied" after a re-read that did not find its statements) may still be applied
a moment later; a process killed after the wiki saved its edit never records it. Either way
a reviewer may decide meanwhile — a reject must then still remove the statement.

So every request that adds statements is noted in the queue before it leaves
(:class:`Journal`, ``queue.store.sends``), and a request stays *unsettled* until its answer
settles it (a ``written`` record of its GUID) or :func:`settle_unsettled` does, at the start
of every write run and after each batch:

    re-read     the file's MediaInfo (one request per file), and for a GUID not on it this
                bot's recent revisions of the file (``edit_group.History``): an edit applied
                and then changed by someone else is still this bot's edit
    applied     recorded ``written`` under the batch that sent it, as *applied late*; the
                pair keeps its last decision, so a reject, an undo or a rank switch is then
                owed a follow-up (``commons.writer.follow_up``) like any decision made while
                the edit was in flight
    not applied an error answer came, or ``SETTLE_HORIZON`` has passed since it was sent
                without the statement showing up: settled ``not_applied``
    otherwise   left unsettled; ``status`` and the review page show it

A dry run sends nothing and notes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from wikivel_bot.commons.mediainfo import DEPICTS, load_mediainfo
from wikivel_bot.commons.writer.edit_group import History
from wikivel_bot.commons.writer.outcomes import classify
from wikivel_bot.events import event
from wikivel_bot.types import Written, rank_of

__all__ = ["Journal", "NO_JOURNAL", "SETTLE_HORIZON", "SendQueue", "Settled", "settle_unsettled"]

# How long after it was sent a request without an answer may still land. Wikimedia's
# servers stop a POST after 200 seconds of work (the edit is saved inside the request, not
# in a job), so an hour is a wide margin; a re-read after it that does not find the
# statement settles the send as not applied. A statement found is recorded whenever that
# happens, however late.
SETTLE_HORIZON = timedelta(hours=1)


class SendQueue(Protocol):
    def record_sending(self, pairs: Sequence[Tuple[int, str]], batch_id: str, worker: str) -> List[int]: ...

    def mark_answered(self, send_ids: Sequence[int]) -> None: ...

    def unsettled_sends(self, limit: Optional[int] = None) -> List[Any]: ...

    def unsettled_summary(self) -> Dict[str, Any]: ...

    def settle_send(self, send: Any, found: Optional[Written], started_at: object) -> bool: ...


class Journal:
    """What the writer tells the queue about a request: ``sending`` before it leaves,
    ``answered`` when an error answer came back (nothing of it was applied)."""

    def __init__(self, store: Optional[SendQueue], batch_id: str, worker: str) -> None:
        self.store = store
        self.batch_id = batch_id
        self.worker = worker

    def sending(self, pairs: Sequence[Tuple[int, str]]) -> List[int]:
        return self.store.record_sending(pairs, self.batch_id, self.worker) if self.store is not None else []

    def answered(self, send_ids: Sequence[int]) -> None:
        if self.store is not None and send_ids:
            self.store.mark_answered(send_ids)


# A writer used on its own (tests, ``suggest``-side tools) notes nothing.
NO_JOURNAL = Journal(None, "", "")


@dataclass
class Settled:
    """What one :func:`settle_unsettled` did."""

    applied_late: int = 0
    not_applied: int = 0
    waiting: int = 0


def settle_unsettled(store: SendQueue, writer: Any, *, horizon: Optional[timedelta] = None,
                     clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                     limit: int = 200) -> Settled:
    """Decide every unsettled request the re-read can decide now; see the module docstring.

    :param writer: the run's ``StatementWriter`` (its ``site``).
    :param horizon: a ``timedelta``; default :data:`SETTLE_HORIZON`.
    :param clock: aware-UTC now, for the horizon and the audit rows' start time.
    """
    horizon = SETTLE_HORIZON if horizon is None else horizon
    done = Settled()
    if getattr(writer, "simulates", False):
        return done  # a dry run reads nothing it could not record
    by_file: Dict[int, List[Any]] = {}
    for send in store.unsettled_sends(limit=limit):
        by_file.setdefault(send.page_id, []).append(send)
    for page_id, file_sends in by_file.items():
        try:
            _settle_file(store, writer, page_id, file_sends, clock, horizon, done)
        except Exception as exc:  # noqa: BLE001 - a wiki error leaves the file for the next run
            if classify(exc) is None:
                raise  # a bug, not the wiki
            event("write", "unsettled-unread", file=f"M{page_id}", error=" ".join(str(exc).split())[:200])
            done.waiting += len(file_sends)
    return done


def _settle_file(store: SendQueue, writer: Any, page_id: int, file_sends: List[Any],
                 clock: Callable[[], datetime], horizon: timedelta, done: Settled) -> None:
    """Re-read one file and settle what its unsettled requests can be settled as now."""
    started = clock()
    mediainfo = load_mediainfo(writer.site, page_id)
    present = ({c.snak: c.getRank() for c in mediainfo.statements.get(DEPICTS, [])}
               if mediainfo is not None else {})
    history = History(writer.site, page_id)
    latest = int(getattr(mediainfo, "latest_revision_id", 0) or 0) if mediainfo is not None else 0
    for send in file_sends:
        # An error answer applied nothing: a GUID on the file is another request's (a
        # retry's, or the writer's that took the pair over), recorded by its own run.
        found = None if send.answered else _applied(send, present, history, latest)
        if found is None and not send.answered and _utc(clock()) - _utc(send.sent_at) < horizon:
            done.waiting += 1
            continue
        if not store.settle_send(send, found, started):
            continue  # another process settled it first
        if found is not None:
            done.applied_late += 1
        else:
            done.not_applied += 1
        event("write", "applied-late" if found is not None else "not-applied", file=send.mid,
              item=send.qid, statement=send.statement_id, batch=send.batch_id,
              revid=getattr(found, "revid", None), decision=send.state.value)


def _utc(moment: datetime) -> datetime:
    """Aware UTC: the queue keeps naive UTC times."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _applied(send: Any, present: Dict[str, str], history: History, latest: int) -> Optional[Written]:
    """The edit that applied ``send``'s statement, or None: the revision of this bot that
    added its GUID (found while the GUID is on the file, or after someone removed it); a GUID
    on the file whose revision is past the history searched is the latest revision's."""
    guid = send.statement_id
    found = history.added(send.qid, guid)
    if found is None and guid not in present:
        return None
    revid = found.revid if found is not None else latest
    # The rank it was sent with: a later decision asking for another one is owed a follow-up.
    rank = present.get(guid) or rank_of(send.prominent)
    return Written(revid=revid, statement_id=guid, batch_id=send.batch_id, rank=rank)
