"""Ranges for integer options: every one has an upper bound the code behind it can hold.

An unbounded ``IntRange(min=1)`` lets ``--batch-size 99999999999999999999`` through to a SQL
LIMIT, a numpy seed or a thread pool, which ends in a traceback; with a bound it is one
``error:`` line naming the value and the range (``WikivelGroup``). The bounds are far beyond
any sensible run and within what every consumer accepts (64-bit SQL integers, numpy's 32-bit
seeds, Python's thread and process counts). ``tests/test_bad_input.py`` walks every option.
"""

from __future__ import annotations

import click

# Files, rows, downloads, steps: more than Commons holds, less than any integer column's limit.
MAX_COUNT = 10**9
# Threads, processes, actors, CPUs of one machine or cluster.
MAX_WORKERS = 4096
# Suggestions per file: linker.top_k's own limit.
MAX_TOP_K = 1000


def count(low: int = 1, high: int = MAX_COUNT) -> click.IntRange:
    """A number of things, from ``low`` to ``high``."""
    return click.IntRange(low, high)


def workers(low: int = 1) -> click.IntRange:
    """Threads, processes or actors, from ``low`` to :data:`MAX_WORKERS`."""
    return click.IntRange(low, MAX_WORKERS)


# numpy's and torch's generators take 32-bit unsigned seeds.
SEED = click.IntRange(0, 2**32 - 1)
TOP_K = click.IntRange(1, MAX_TOP_K)
