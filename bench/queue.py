"""Queue throughput: enqueue and claim rows/s on each backend at 100k rows.

    .venv/bin/python bench/queue.py [--rows 100000] [--repeat 3] [--backends sqlite,postgresql,mysql]

Server URLs come from WIKIVEL_TEST_POSTGRES_URL / WIKIVEL_TEST_MYSQL_URL (defaults: the local
services); each run works in a scratch database it creates and drops. Figures are medians of
``--repeat`` runs; paste the printed table into docs/benchmarks.md with the machine.

What is timed:
* enqueue: ``Store.enqueue`` of the rows in batches of 500 (what one poll page commits),
  every row new.
* claim: ``Store.claim_files`` in batches of 100 until the queue is drained, each claimed
  batch completed with ``mark_unavailable`` per row, as a fetch worker would (claim and
  state change both counted — a claim alone would leave the rows for the next claim).
* claim-only: ``claim_files`` batches of 500 over 10k rows without completing them (lease
  only), the cost a worker pays for the locking read itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the standard library's `queue`, which psycopg imports: run from
# the repository root instead of this folder so the name does not shadow it.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402
from typing import Callable, Dict, List  # noqa: E402

from bench.scratch_db import Scratch  # noqa: E402
from wikivel_bot.queue import migrate  # noqa: E402
from wikivel_bot.queue.engine import create_engine_for  # noqa: E402
from wikivel_bot.queue.store import Store  # noqa: E402
from wikivel_bot.types import FileState, Upload  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def uploads(n: int, offset: int = 0) -> List[Upload]:
    return [
        Upload(page_id=offset + i, title=f"File:Benchmark {offset + i}.jpg", timestamp=T0 + timedelta(seconds=i),
               uploader="Bench", log_id=offset + i, sha1="0" * 40, mime="image/jpeg", size=100_000,
               width=1024, height=768)
        for i in range(1, n + 1)
    ]


def timed(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    rows = fn()
    return rows / (time.perf_counter() - start)


def one_run(backend: str, rows: int, workdir: Path) -> Dict[str, float]:
    scratch = Scratch(backend, workdir)
    try:
        engine = create_engine_for(scratch.url)
        migrate.upgrade(engine)
        store = Store(engine)
        batch = uploads(rows)

        def enqueue() -> int:
            for start in range(0, rows, 500):
                store.enqueue(batch[start:start + 500])
            return rows

        def claim_and_complete() -> int:
            done = 0
            while True:
                work = store.claim_files(FileState.DISCOVERED, 100, "bench")
                if not work:
                    return done
                for item in work:
                    store.mark_unavailable(item.id, "benchmark")
                done += len(work)

        extra = uploads(10_000, offset=10 * rows)

        def claim_only() -> int:
            store.enqueue(extra)
            start = time.perf_counter()
            claimed = 0
            while True:
                work = store.claim_files(FileState.DISCOVERED, 500, "bench")
                if not work:
                    break
                claimed += len(work)
            return claimed, time.perf_counter() - start  # type: ignore[return-value]

        result = {"enqueue": timed(enqueue), "claim+complete": timed(claim_and_complete)}
        claimed, seconds = claim_only()
        result["claim-only"] = claimed / seconds
        engine.dispose()
        return result
    finally:
        scratch.drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="sqlite,postgresql,mysql")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    print(f"# bench/queue.py --rows {args.rows} --repeat {args.repeat} on {platform.node()} "
          f"({os.cpu_count()} cores, Python {platform.python_version()})")
    print("| backend | enqueue rows/s | claim+complete rows/s | claim-only rows/s |")
    print("| --- | --- | --- | --- |")
    for backend in args.backends.split(","):
        runs = [one_run(backend, args.rows, args.workdir) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"| {backend} | {med['enqueue']:,.0f} | {med['claim+complete']:,.0f} | {med['claim-only']:,.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
