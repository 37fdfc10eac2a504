"""A file the resident service linked, put into the review queue as the daemon puts one there.

A reviewer on a file page the bot has not queued yet (an older upload, one the daemon has not
reached) decides on the suggestions they see: the file is queued first, with exactly those
candidates (the running linker's version, its evidence, what the safety rules withheld), and
the decision then goes through the review page's one function. The moves are the daemon's
(``discovered`` → ``fetched`` → ``linked``), each checked by the store; a file already in the
queue keeps its row, and only its pairs are (re)linked as a re-link would: a decided pair, a
rejection above all, is never touched.

The upload's time is not known here (the upload log is the poller's); the queue records when
the file was queued instead, so it sorts among the newest.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from wikivel_bot.errors import IllegalTransition, WikivelError
from wikivel_bot.queue.resident_queries import file_state
from wikivel_bot.queue.store import Store
from wikivel_bot.types import FileState, Upload


class QueueBusy(WikivelError):
    """The daemon holds the file now (a claim, or a move in progress): try again shortly."""


def enqueue_linked(store: Store, outcome: Any) -> None:
    """Queue a ``Linked`` outcome of the ready linker (its media, candidates, withheld counts).

    :raises QueueBusy: the file is in a state the daemon is moving it out of.
    """
    media = outcome.media
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    store.enqueue([Upload(page_id=media.page_id, title=media.title, timestamp=now)])
    file_id = store.file_id_of(media.page_id)
    try:
        if file_state(store, media.page_id) is FileState.DISCOVERED:
            store.mark_fetched(file_id, media)
        store.save_candidates(file_id, list(outcome.candidates), outcome.ranking.withheld_by_rule())
    except IllegalTransition as exc:
        raise QueueBusy(f"{media.title}: the bot is working on this file now ({exc}); try again in a minute") from None
