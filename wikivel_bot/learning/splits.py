"""Splits of decision records by file and by upload date.

Records are ordered by upload time (then page id) and cut in three consecutive parts:
``train`` (the fine-tuning), ``calibration`` (the held-out part the probability and the
threshold are fitted on) and ``evaluation`` (where champion and challenger are judged). So
evaluation is always on later files than training, as the model will meet them, and a file's
decisions are never on both sides of a cut.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Sequence, Tuple

from wikivel_bot.errors import UsageError
from wikivel_bot.learning.records import Record

SPLITS = ("train", "calibration", "evaluation")
DEFAULT_SHARES = (0.6, 0.2, 0.2)


def parse_shares(text: str) -> Tuple[float, float, float]:
    """``0.6,0.2,0.2`` → shares of train, calibration, evaluation (summing to 1).

    float() reads ``nan`` and ``inf``; a NaN passes both comparisons below (it compares false
    to everything), so finiteness is checked first, or the split would fail deep inside."""
    try:
        parts = tuple(float(p) for p in text.split(","))
    except ValueError:
        parts = ()
    if (len(parts) != 3 or not all(math.isfinite(p) for p in parts) or any(p <= 0 for p in parts)
            or abs(sum(parts) - 1.0) > 1e-6):
        raise UsageError(f"--split takes three positive shares summing to 1, like 0.6,0.2,0.2 (not {text!r})")
    return parts[0], parts[1], parts[2]


def assign_splits(records: Sequence[Record], shares: Tuple[float, float, float] = DEFAULT_SHARES) -> List[Record]:
    """The records in upload order, each with its ``split`` (see the module docstring).

    With three files or more every split gets at least one.
    """
    ordered = sorted(records, key=lambda r: (r.uploaded_at, r.page_id))
    n = len(ordered)
    n_train = int(round(n * shares[0]))
    n_cal = int(round(n * shares[1]))
    if n >= 3:
        n_train = min(max(1, n_train), n - 2)
        n_cal = min(max(1, n_cal), n - n_train - 1)
    cuts = (n_train, n_train + n_cal)
    return [dataclasses.replace(r, split=SPLITS[0] if i < cuts[0] else SPLITS[1] if i < cuts[1] else SPLITS[2])
            for i, r in enumerate(ordered)]


def by_split(records: Sequence[Record]) -> Dict[str, List[Record]]:
    out: Dict[str, List[Record]] = {name: [] for name in SPLITS}
    for record in records:
        out.setdefault(record.split, []).append(record)
    return out
