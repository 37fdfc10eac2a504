"""New uploads from the upload log, oldest first, in batches that end at a cursor.

``list=logevents`` is read with ``ledir=newer`` from the stored cursor: log timestamps are
not unique (an UploadWizard batch shares one second), so the cursor is (timestamp, log id)
and the request starts *at* the cursor's second, skipping entries at or before the cursor.
Each answer page becomes one :class:`PollBatch`: its uploads, checked against the
eligibility rules with one file query per 50 pages, and the cursor of the page's last entry.
The caller commits a batch and its cursor in one transaction before the next request is
sent, so a poll that fails half-way resumes exactly after the last committed batch.

Without a stored cursor (a new queue) polling starts with the newest ``batch_size`` uploads
rather than at the beginning of the log — 100 million files are not "new uploads".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Optional, Tuple

from wikivel_bot.commons import api
from wikivel_bot.commons.files import query_files
from wikivel_bot.commons.filters import FileFacts, refuse_upload
from wikivel_bot.config import PollSettings
from wikivel_bot.core.timestamps import format_timestamp, parse_timestamp
from wikivel_bot.types import Cursor, Upload


@dataclass(frozen=True)
class PollBatch:
    """One page of the upload log, ready to enqueue.

    :param uploads: every upload read that could be recorded (eligible or not).
    :param ineligible: {page id: reason} for those the rules refused.
    :param cursor: where the next poll starts (the page's last log entry).
    :param read: log entries read in this page (after the cursor).
    :param unrecorded: entries without a page id (deleted pages whose log row has none).
    """

    uploads: Tuple[Upload, ...]
    ineligible: Dict[int, str]
    cursor: Cursor
    read: int
    unrecorded: int = 0


@dataclass
class UploadPoller:
    """Reads new uploads of one wiki. Build one per site; it keeps no state between polls.

    :param site: a pywikibot site (from :func:`wikivel_bot.commons.site.open_site`).
    :param settings: ``Settings.poll``.
    :param file_batch: pages per file query (≤ 50).
    """

    site: Any
    settings: PollSettings = field(default_factory=PollSettings)
    file_batch: int = 50

    @property
    def source(self) -> str:
        """The cursor's name in the queue: one cursor per wiki and log."""
        return f"upload-log:{api.site_key(self.site)}"

    def batches(self, start: Optional[Cursor]) -> Iterator[PollBatch]:
        """Pages of new uploads after ``start`` (None: the newest ``batch_size`` uploads).

        :raises WikiError: a request failed; batches already yielded stay valid.
        """
        if start is None:
            start = self._first_start()
            if start is None:
                return
        start = Cursor(_utc(start.timestamp), start.log_id)
        params: Dict[str, Any] = {
            "action": "query",
            "list": "logevents",
            "leprop": ["ids", "title", "type", "user", "timestamp", "details"],
            "ledir": "newer",
            "lestart": format_timestamp(start.timestamp),
            "lelimit": max(1, min(self.settings.batch_size, 5000)),
        }
        params.update(self._action_filter())
        # Not pywikibot's logevents generator: it hides where an API page ends, and the queue
        # commits the cursor once per page (nothing seen twice or lost after a crash).
        cont: Dict[str, Any] = {}
        while True:
            data = api.request(self.site, "reading the upload log", **params, **cont)
            fresh = [e for e in data.get("query", {}).get("logevents", ()) if _after(e, start)]
            if fresh:
                # The cursor moves past entries of other actions (reverts) too.
                wanted = [e for e in fresh if e.get("action") in self._actions()]
                yield self._batch(wanted, last=fresh[-1])
            if "continue" not in data:
                return
            cont = dict(data["continue"])

    def _batch(self, events: List[Dict[str, Any]], last: Dict[str, Any]) -> PollBatch:
        ids = [int(e.get("pageid") or 0) for e in events]
        known = [i for i in ids if i]
        entries = {
            entry.key: entry
            for entry in (query_files(self.site, page_ids=known, batch_size=self.file_batch) if known else ())
        }
        uploads: List[Upload] = []
        ineligible: Dict[int, str] = {}
        unrecorded = 0
        for event, pid in zip(events, ids):
            entry = entries.get(pid) if pid else None
            # A page deleted before this poll has page id 0; its log row still names it.
            page_id = pid or int(event.get("logpage") or 0)
            if not page_id:
                unrecorded += 1
                continue
            info = entry.info if entry is not None and entry.exists else {}
            upload = Upload(
                page_id=page_id,
                title=event.get("title", ""),
                timestamp=parse_timestamp(event["timestamp"]),
                uploader=event.get("user", ""),
                log_id=int(event.get("logid") or 0),
                sha1=info.get("sha1", ""),
                mime=info.get("mime", ""),
                size=int(info.get("size") or 0),
                width=int(info.get("width") or 0),
                height=int(info.get("height") or 0),
            )
            facts = entry.facts() if entry is not None else FileFacts(exists=False)
            # The rules apply to the uploader of this log entry, not of the newest version.
            facts = dataclasses.replace(facts, uploader=upload.uploader)
            why = refuse_upload(facts, self.settings)
            uploads.append(upload)
            if why:
                ineligible[page_id] = why
        return PollBatch(
            uploads=tuple(uploads),
            ineligible=ineligible,
            cursor=Cursor(parse_timestamp(last["timestamp"]), int(last["logid"])),
            read=len(events),
            unrecorded=unrecorded,
        )

    def _actions(self) -> Tuple[str, ...]:
        return ("upload", "overwrite") if self.settings.include_overwrites else ("upload",)

    def _action_filter(self) -> Dict[str, str]:
        # leaction narrows the log on the server; with overwrites both actions are wanted,
        # which only letype can ask for (the "revert" action is dropped here).
        if self.settings.include_overwrites:
            return {"letype": "upload"}
        return {"leaction": "upload/upload"}

    def _first_start(self) -> Optional[Cursor]:
        """A cursor just before the newest ``batch_size`` uploads (None: an empty log)."""
        data = api.request(
            self.site, "reading the upload log", action="query", list="logevents",
            leprop=["ids", "timestamp"], ledir="older",
            lelimit=max(1, min(self.settings.batch_size, 5000)), **self._action_filter(),
        )
        events = data.get("query", {}).get("logevents", ())
        if not events:
            return None
        oldest = events[-1]
        # Log id 0 keeps every entry of that second, the oldest one included.
        return Cursor(parse_timestamp(oldest["timestamp"]), 0)


def _after(event: Dict[str, Any], start: Cursor) -> bool:
    return (parse_timestamp(event["timestamp"]), int(event.get("logid") or 0)) > (start.timestamp, start.log_id)


def _utc(value: datetime) -> datetime:
    """Naive datetimes (as the queue stores them) are UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
