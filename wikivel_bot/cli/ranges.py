"""Types of numeric options: integer ranges with an upper bound, floats that are finite.

An unbounded ``IntRange(min=1)`` lets ``--batch-size 99999999999999999999`` through to a SQL
LIMIT, a numpy seed or a thread pool, which ends in a traceback; with a bound it is one
``error:`` line naming the value and the range (``WikivelGroup``). The bounds are far beyond
any sensible run and within what every consumer accepts (64-bit SQL integers, numpy's 32-bit
seeds, Python's thread and process counts). ``tests/test_bad_input.py`` walks every option.

Every float option is a :data:`FINITE_FLOAT` or a :func:`finite_range`: click's own FLOAT
and FloatRange take ``nan``, ``inf`` and ``-inf`` (a NaN passes every range check, since it
compares false to everything), and then ``--min-score nan`` silently matches nothing and a
NaN learning rate trains garbage. These refuse them in one ``error:`` line naming the option.
``tests/test_bad_input.py`` walks every float option of every command too.
"""

from __future__ import annotations

import math
from typing import Any, Optional

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


def _finite(kind: click.ParamType, value: Any, param: Optional[click.Parameter],
            ctx: Optional[click.Context]) -> float:
    """``value`` as a float, refused (one line naming the option) when it is not finite."""
    number: float = click.FLOAT.convert(value, param, ctx)
    if not math.isfinite(number):
        kind.fail(f"{value!r} is not a finite number (nan and infinities are refused).", param, ctx)
    return number


class FiniteFloat(click.types.FloatParamType):
    """A float option without bounds that still refuses ``nan``, ``inf`` and ``-inf``."""

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        return _finite(self, value, param, ctx)


class FiniteFloatRange(click.FloatRange):
    """A float range that refuses ``nan`` before the range check, which a NaN would pass."""

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        return super().convert(_finite(self, value, param, ctx), param, ctx)


FINITE_FLOAT = FiniteFloat()


def finite_range(low: Optional[float] = None, high: Optional[float] = None, *,
                 low_open: bool = False, high_open: bool = False) -> FiniteFloatRange:
    """A finite float from ``low`` to ``high`` (None: no bound on that side; ``*_open``: the
    bound itself is excluded)."""
    return FiniteFloatRange(low, high, min_open=low_open, max_open=high_open)
