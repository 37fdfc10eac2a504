"""Parsing blocks in worker processes, results in order, with bounded memory."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any, Callable, Deque, Iterable, Iterator, Optional, TypeVar

from wikivel_bot.labels.dump_reader import Block

R = TypeVar("R")


def worker_pool(workers: int) -> Optional[ProcessPoolExecutor]:
    """Processes for :func:`map_blocks` (None for ``workers <= 1``); shut it down after use.

    One pool can serve several dumps, which saves starting the interpreters again.
    """
    if workers <= 1:
        return None
    # spawn, not fork: the parallel decompressors run threads, and forking a process with
    # threads can deadlock the child.
    return ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))


def map_blocks(
    blocks: Iterable[Block],
    parse: Callable[[int, bytes, Any], R],
    options: Any,
    workers: int = 1,
    pool: Optional[ProcessPoolExecutor] = None,
) -> Iterator[R]:
    """``parse(first_line, data, options)`` for every block, results in block order.

    :param workers: processes that parse; 1 parses in this process (no pickling). The main
        process keeps reading and decompressing while they work, with at most two blocks per
        worker in flight so memory stays bounded when parsing is the slower side.
    :param pool: a pool from :func:`worker_pool` to use (and leave running); without one a
        pool is started and shut down here.
    """
    if workers <= 1:
        for block in blocks:
            yield parse(block.first_line, block.data, options)
        return
    executor = pool or worker_pool(workers)
    assert executor is not None
    pending: Deque[Future] = deque()
    try:
        for block in blocks:
            pending.append(executor.submit(parse, block.first_line, block.data, options))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        if pool is None:
            executor.shutdown(wait=True, cancel_futures=True)


def default_workers() -> int:
    """Parsing processes when none are asked for: the usable CPUs less one.

    The main process needs a core of its own to decompress and hand out blocks; on two
    cores one inline parser beats two workers (measured, docs/benchmarks.md).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus - 1)
