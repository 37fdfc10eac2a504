"""Link several batches at once on CPU: one thread per core, one torch thread each.

One batch at a time, the model's forward pass spreads over every core (torch's OpenMP team),
and everything between two forward passes — decoding and resizing the next thumbnails, the
search, the ranking rules — either runs in a decode pool that competes with that team for
the same cores or leaves cores idle. A team waits at each of its barriers for its slowest
thread, so every millisecond another thread takes from one member costs the whole team.
With one torch thread per batch and as many batches in flight as cores, each thread runs its
batch from thumbnail bytes to ranked candidates: no barriers, no idle core. On a 2-core Xeon
with AMX it linked 13 % to 27 % more images per second at bf16 than one batch at a time with
the decode pool, in four runs of ``bench/linker.py`` (docs/benchmarks.md, "Concurrent batches
and packed bf16 weights").

A single batch (``suggest`` on one file) keeps the whole machine for itself: its latency is
what matters there, and nothing else is in flight.

``torch.set_num_threads`` sets the calling thread's OpenMP team size (and a process-wide
default for threads that have not run torch yet); each worker sets its own to one, and the
caller's setting is put back when the batches are done.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional, Tuple

import torch


def units(n: int, batch: int, workers: int) -> List[Tuple[int, int]]:
    """``(start, stop)`` ranges covering ``n`` items: no more than ``batch`` each, a multiple
    of ``workers`` of them where there are enough items, and as even as they can be (so no
    worker is left with a small last batch while the others wait)."""
    if n <= 0:
        return []
    count = math.ceil(n / max(1, batch))
    count = min(n, math.ceil(count / workers) * workers)
    base, extra = divmod(n, count)
    out, start = [], 0
    for i in range(count):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def worker_count(requested: int, n: int) -> int:
    """Workers worth starting for ``n`` items: at most ``requested``, the CPUs and ``n``."""
    return max(1, min(requested, os.cpu_count() or 1, n))


def run_units(ranges: List[Tuple[int, int]], workers: int, work: Callable[[int, int], None]) -> None:
    """Call ``work(start, stop)`` for every range, ``workers`` at a time, each worker with one
    torch thread; returns when all are done.

    The first exception a worker raises stops the others taking new ranges and is raised here
    once they have finished the range in hand (so nothing is left half-written behind it).
    """
    saved = torch.get_num_threads()
    lock = threading.Lock()
    pending = iter(ranges)
    failed: List[BaseException] = []

    def take() -> Optional[Tuple[int, int]]:
        with lock:
            return None if failed else next(pending, None)

    def worker() -> None:
        torch.set_num_threads(1)
        while True:
            unit = take()
            if unit is None:
                return
            try:
                work(*unit)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                with lock:
                    failed.append(exc)
                return

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wikivel-link") as pool:
            futures = [pool.submit(worker) for _ in range(workers)]
            try:
                for future in futures:
                    future.result()
            except BaseException as exc:  # Ctrl-C while waiting: the workers stop after their range
                with lock:
                    failed.append(exc)
                raise
    finally:
        torch.set_num_threads(saved)
    if failed:
        raise failed[0]
