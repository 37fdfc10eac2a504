"""The order in which waiting files reach a reviewer (``review.order``).

* ``queue`` — oldest first (files by queue id), today's order;
* ``uncertainty`` — uncertainty sampling: first the file whose most doubtful suggestion is
  nearest the decision boundary. A suggestion's probability is its calibrated match
  probability when it has one (verifier, cascade, evidence model, a model learned from
  decisions), else its score; the
  boundary is ``learning.threshold``. A reviewer's decision there teaches the model most
  (docs/learning.md; bench/learning.py measures it on synthetic data).
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from wikivel_bot.core.review_rules import ReviewCandidate, ReviewFile

ORDERS = ("queue", "uncertainty")


def candidate_uncertainty(candidate: ReviewCandidate, threshold: float) -> Optional[float]:
    """Distance of the suggestion's probability from the boundary (None: no number at all)."""
    p = candidate.probability if candidate.probability is not None else candidate.score
    return None if p is None else abs(float(p) - threshold)


def file_uncertainty(file: ReviewFile, threshold: float) -> float:
    """The file's nearest suggestion to the boundary; files with no number go last."""
    values = [u for u in (candidate_uncertainty(c, threshold) for c in file.candidates) if u is not None]
    return min(values) if values else float("inf")


def uncertainty_order(files: Iterable[ReviewFile], threshold: float) -> List[ReviewFile]:
    """The files nearest the boundary first (ties: oldest first)."""
    return sorted(files, key=lambda f: (file_uncertainty(f, threshold), f.file_id))


def next_in_order(ordered: Sequence[ReviewFile], after_id: int = 0,
                  exclude: Iterable[int] = ()) -> Optional[ReviewFile]:
    """The file following ``after_id`` in ``ordered`` (from the top when ``after_id`` is not
    there any more: a decided file has left the queue), skipping ``exclude``."""
    skip = set(exclude)
    ids = [f.file_id for f in ordered]
    start = ids.index(after_id) + 1 if after_id in ids else 0
    return next((f for f in ordered[start:] if f.file_id not in skip and f.file_id != after_id), None)


def order_text(order: str, threshold: float) -> str:
    """How the next file is chosen, as `review` and `status` name it."""
    if order == "uncertainty":
        return f"uncertainty (suggestions nearest the threshold {threshold:g} first)"
    return "queue (oldest first)"
