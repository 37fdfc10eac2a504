"""The store's file rows: uploads entering the queue, claimed for a stage, moved on one by one.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). The poller enqueues, the fetcher claims
``discovered`` files and marks each ``fetched``, ``unavailable`` or ``ineligible``. Saving a
file's candidates (its move to ``linked``) is in ``linking``, with the backfill's
block-at-once settlement that shares its code.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from sqlalchemy import select, update

from wikivel_bot.errors import NotFound
from wikivel_bot.queue.rows import file_work, media_to_json, to_db_time
from wikivel_bot.queue.store.base import ENQUEUE_CHUNK, StoreBase
from wikivel_bot.queue.tables import files
from wikivel_bot.types import Cursor, FileState, FileWork, MediaFile, Upload


class FilesMixin(StoreBase):
    """Enqueueing, claiming and moving file rows (see the module docstring)."""

    def enqueue(
        self,
        uploads: Iterable[Upload],
        ineligible: Optional[Mapping[int, str]] = None,
        cursor: Optional[Tuple[str, Cursor]] = None,
    ) -> int:
        """Add uploads to the queue; an upload already there (same page id) is left alone.

        :param uploads: the uploads, in any order.
        :param ineligible: {page id: reason} for uploads a filter refused; they are stored
            as ``ineligible`` with the reason, so `status` can say why and they are never
            fetched.
        :param cursor: (source, cursor) saved in the same transaction, so a poll that dies
            half-way resumes exactly after the last batch it committed.
        :return: the number of new rows.
        """
        ineligible = ineligible or {}
        now = self._now()
        batch = {u.page_id: u for u in uploads}  # the same page twice in one batch = once
        new_rows = 0
        with self.transaction() as conn:
            page_ids = list(batch)
            for start in range(0, len(page_ids), ENQUEUE_CHUNK):
                chunk = page_ids[start:start + ENQUEUE_CHUNK]
                known = set(
                    conn.execute(select(files.c.page_id).where(files.c.page_id.in_(chunk))).scalars()
                )
                rows = [
                    _upload_row(batch[pid], ineligible.get(pid), now)
                    for pid in chunk
                    if pid not in known
                ]
                if rows:
                    # "Insert or ignore" covers a racing worker inserting the same page.
                    conn.execute(self._insert_ignore(files), rows)
                    new_rows += len(rows)
            if cursor is not None:
                self._save_cursor(conn, cursor[0], cursor[1], now)
        return new_rows

    def claim_files(self, state: FileState, limit: int, worker: str) -> List[FileWork]:
        """Reserve up to ``limit`` files in ``state`` for ``worker``, oldest first."""
        now = self._now()
        with self.transaction() as conn:
            query = (
                select(files)
                .where(files.c.state == state.value, self._claimable(files, now))
                .order_by(files.c.id)
                .limit(limit)
            )
            rows = conn.execute(query.with_for_update(skip_locked=True)).all()
            if rows:
                conn.execute(
                    update(files)
                    .where(files.c.id.in_([r.id for r in rows]))
                    .values(claimed_by=worker, claimed_at=now, attempts=files.c.attempts + 1)
                )
        # The rows were read before the attempt was counted.
        return [dataclasses.replace(file_work(r), attempts=r.attempts + 1) for r in rows]

    def mark_fetched(self, file_id: int, media: MediaFile) -> None:
        """Store what the fetcher learned; the file moves to ``fetched``."""
        self._move_file(file_id, FileState.FETCHED, media=media_to_json(media), reason=None)

    def mark_unavailable(self, file_id: int, reason: str) -> None:
        """The file is gone, corrupt or not an image; ``reason`` is shown to operators."""
        self._move_file(file_id, FileState.UNAVAILABLE, reason=reason)

    def mark_ineligible(self, file_id: int, reason: str) -> None:
        """A filter refused the file after fetching (e.g. it already has enough depicts)."""
        self._move_file(file_id, FileState.INELIGIBLE, reason=reason)

    def file_id_of(self, page_id: int) -> int:
        """The queue's row id for a page id; NotFound when the file was never queued."""
        with self.transaction() as conn:
            found = conn.execute(select(files.c.id).where(files.c.page_id == page_id)).scalar()
        if found is None:
            raise NotFound(f"file M{page_id} is not in the queue")
        return int(found)

    # -- helpers -----------------------------------------------------------------------

    def _move_file(self, file_id: int, target: FileState, **values: object) -> None:
        with self.transaction() as conn:
            self._check_file_move(conn, file_id, target)
            conn.execute(
                update(files).where(files.c.id == file_id).values(
                    state=target.value, claimed_by=None, claimed_at=None,
                    updated_at=self._now(), **values
                )
            )


def _upload_row(upload: Upload, reason: Optional[str], now: object) -> Dict[str, object]:
    return dict(
        page_id=upload.page_id, title=upload.title, sha1=upload.sha1,
        uploaded_at=to_db_time(upload.timestamp), uploader=upload.uploader,
        log_id=upload.log_id, mime=upload.mime, size=upload.size, width=upload.width,
        height=upload.height,
        state=(FileState.INELIGIBLE if reason else FileState.DISCOVERED).value,
        reason=reason, attempts=0, discovered_at=now, updated_at=now,
    )
