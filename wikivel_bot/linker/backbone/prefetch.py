"""Decode and preprocess the next batch in a small thread pool while this one is encoded.

JPEG decoding, resizing and normalisation release the GIL (Pillow and torch do the work in
C), so a couple of threads keep the cores busy while the model's forward pass runs — the
forward pass alone does not use both cores all the time (its serial parts, the search, the
ranking rules). Results come back in input order, one value per file: the prepared image, or
the :class:`FileUnavailable` that says why not (one bad file never costs the batch).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Iterator, List, Sequence, Tuple, TypeVar, Union

from wikivel_bot.errors import FileUnavailable

T = TypeVar("T")
Prepared = Union[Any, FileUnavailable]

# Two threads: enough to hide decoding behind a batch's forward pass on the small machines
# the bot runs on, without crowding out torch's own threads.
MAX_WORKERS = 2


def safe_prepare(prepare: Callable[[T], Any], item: T) -> Prepared:
    """``prepare(item)``, or the :class:`FileUnavailable` it raised (one bad file, one reason)."""
    try:
        return prepare(item)
    except FileUnavailable as exc:
        return exc


def prefetched_batches(
    items: Sequence[T], size: int, prepare: Callable[[T], Any], workers: int = 0
) -> Iterator[Tuple[int, List[Prepared]]]:
    """``(start, prepared values)`` per batch of ``size`` items, the next batch prepared ahead.

    :param items: the inputs (e.g. (file, bytes) pairs).
    :param size: items per batch.
    :param prepare: item -> prepared value; may raise :class:`FileUnavailable`.
    :param workers: pool threads (0 = up to :data:`MAX_WORKERS`, never more than the CPUs);
        with one item or one worker everything runs inline.
    """
    size = max(1, size)
    workers = workers or min(MAX_WORKERS, os.cpu_count() or 1)
    if len(items) <= 1 or workers <= 1:
        for start in range(0, len(items), size):
            yield start, [safe_prepare(prepare, item) for item in items[start:start + size]]
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wikivel-decode") as pool:

        def submit(start: int) -> List[Future]:
            return [pool.submit(safe_prepare, prepare, item) for item in items[start:start + size]]

        pending = submit(0)
        for start in range(0, len(items), size):
            ready = [future.result() for future in pending]
            nxt = start + size
            # Queue the next batch before handing this one out: it is decoded while the
            # caller encodes this one.
            pending = submit(nxt) if nxt < len(items) else []
            yield start, ready
