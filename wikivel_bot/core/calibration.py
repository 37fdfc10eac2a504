"""Score thresholds that reach a target precision, overall or per group (super-category).

The linker's scores are similarities, not probabilities: 0.29 may be a safe suggestion for a
*painting* and a coin toss for a *human*. Calibration looks at held-out (score, correct) pairs
and finds, for a target precision such as 0.9, the **lowest** threshold whose accepted set
(every pair with ``score >= threshold``) reaches it: the lowest one because it accepts the most
suggestions, i.e. gives the best recall at that precision. Ties are accepted or refused
together, so the candidate thresholds are the distinct scores.

Example (checked in ``tests/test_calibration.py``)::

    scores   0.9 0.8 0.7 0.6 0.5 0.4
    correct   1   1   1   0   1   0
    threshold 0.5 accepts 5 with 4 correct: precision 0.8, recall 4/4, coverage 5/6
    threshold 0.7 accepts 3 with 3 correct: precision 1.0, recall 3/4, coverage 3/6
    target 0.8  -> 0.5 (the lowest reaching it; 0.4 gives 4/6 = 0.667)
    target 0.9  -> 0.7 (0.6 gives 3/4 = 0.75, 0.5 gives 0.8)

When no threshold reaches the target, the result says so (``reached`` False, ``threshold``
None: accept nothing) and names the best precision that was possible and where.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

# Precision is a ratio of integers; compare with a little slack so 9/10 >= 0.9 holds.
_EPS = 1e-12


@dataclass(frozen=True)
class OperatingPoint:
    """What a threshold gives on a set of (score, correct) pairs.

    :param threshold: accept pairs with ``score >= threshold``; None = accept nothing (the
        target was not reached, or there was no data).
    :param target: the precision asked for (None when a threshold was just applied).
    :param reached: whether ``precision >= target`` with at least ``min_support`` accepted.
    :param precision: correct accepted / accepted (0.0 when nothing is accepted).
    :param recall: correct accepted / all correct pairs (0.0 when none is correct).
    :param coverage: accepted / all pairs.
    :param accepted: pairs accepted.
    :param correct: correct pairs accepted.
    :param total: all pairs.
    :param total_correct: all correct pairs.
    :param best_threshold: the threshold with the highest precision (lowest on ties) among
        those accepting at least ``min_support`` pairs; tells how close an unreached target was.
    :param best_precision: the precision at ``best_threshold``.
    """

    threshold: Optional[float]
    target: Optional[float]
    reached: bool
    precision: float
    recall: float
    coverage: float
    accepted: int
    correct: int
    total: int
    total_correct: int
    best_threshold: Optional[float] = None
    best_precision: float = 0.0

    def as_dict(self) -> Dict[str, object]:
        """Plain data for JSON output."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class CurvePoint:
    """One candidate threshold: everything scoring at least ``threshold`` is accepted."""

    threshold: float
    accepted: int
    correct: int

    def precision(self) -> float:
        return self.correct / self.accepted if self.accepted else 0.0


def precision_curve(pairs: Iterable[Tuple[float, bool]]) -> Tuple[List[CurvePoint], int, int]:
    """The accepted/correct counts at every distinct score, highest threshold first.

    :param pairs: (score, correct) pairs; scores must be finite numbers.
    :returns: (points, total pairs, total correct pairs).
    :raises ValueError: on a NaN or infinite score.
    """
    rows = []
    for score, is_right in pairs:
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"score {score!r} is not a finite number")
        rows.append((value, bool(is_right)))
    # Deterministic whatever the input order: sort by score only, ties form one block.
    rows.sort(key=lambda row: -row[0])
    points: List[CurvePoint] = []
    accepted = correct = 0
    for index, (score, is_correct) in enumerate(rows):
        accepted += 1
        correct += is_correct
        if index + 1 == len(rows) or rows[index + 1][0] != score:
            points.append(CurvePoint(score, accepted, correct))
    return points, len(rows), correct


def calibrate(pairs: Iterable[Tuple[float, bool]], target: float = 0.9, min_support: int = 1) -> OperatingPoint:
    """The lowest threshold whose accepted pairs reach ``target`` precision.

    :param pairs: held-out (score, correct) pairs, in any order.
    :param target: the precision to reach, in (0, 1].
    :param min_support: a threshold must accept at least this many pairs to count, so one
        lucky top score cannot set it.
    :raises ValueError: for a target outside (0, 1], min_support < 1, or a non-finite score.
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target precision must be in (0, 1], not {target}")
    if min_support < 1:
        raise ValueError(f"min_support must be at least 1, not {min_support}")
    points, total, total_correct = precision_curve(pairs)
    eligible = [p for p in points if p.accepted >= min_support]
    best: Optional[CurvePoint] = None
    for point in eligible:  # highest threshold first: a later equal precision is lower
        if best is None or point.precision() >= best.precision() - _EPS:
            best = point
    chosen: Optional[CurvePoint] = None
    for point in eligible:
        if point.correct >= target * point.accepted - _EPS:
            chosen = point  # keep going: a lower threshold that still reaches it is better
    best_threshold = best.threshold if best else None
    best_precision = best.precision() if best else 0.0
    if chosen is None:
        return OperatingPoint(None, target, False, 0.0, 0.0, 0.0, 0, 0, total, total_correct,
                              best_threshold, best_precision)
    return _point(chosen, total, total_correct, target, True, best_threshold, best_precision)


def apply_threshold(pairs: Iterable[Tuple[float, bool]], threshold: float,
                    target: Optional[float] = None) -> OperatingPoint:
    """What ``threshold`` gives on other data (e.g. the test split, after calibrating on
    validation).

    :param pairs: (score, correct) pairs.
    :param threshold: accept ``score >= threshold``.
    :param target: when given, ``reached`` says whether the precision reaches it.
    """
    accepted = correct = total = total_correct = 0
    for score, is_correct in pairs:
        total += 1
        total_correct += bool(is_correct)
        if float(score) >= threshold:
            accepted += 1
            correct += bool(is_correct)
    point = CurvePoint(threshold, accepted, correct)
    reached = target is not None and accepted > 0 and correct >= target * accepted - _EPS
    return _point(point, total, total_correct, target, reached, threshold, point.precision())


def calibrate_groups(rows: Iterable[Tuple[str, float, bool]], target: float = 0.9,
                     min_support: int = 1) -> Dict[str, OperatingPoint]:
    """:func:`calibrate` separately for each group (e.g. each super-category).

    :param rows: (group, score, correct) triples.
    :param target: precision to reach in every group.
    :param min_support: as for :func:`calibrate`, applied within each group.
    :returns: {group: OperatingPoint}, groups in sorted order.
    """
    grouped: Dict[str, List[Tuple[float, bool]]] = {}
    for group, score, correct in rows:
        grouped.setdefault(group, []).append((score, correct))
    return {group: calibrate(grouped[group], target, min_support) for group in sorted(grouped)}


def _point(point: CurvePoint, total: int, total_correct: int, target: Optional[float], reached: bool,
           best_threshold: Optional[float], best_precision: float) -> OperatingPoint:
    return OperatingPoint(
        threshold=point.threshold,
        target=target,
        reached=reached,
        precision=point.precision(),
        recall=point.correct / total_correct if total_correct else 0.0,
        coverage=point.accepted / total if total else 0.0,
        accepted=point.accepted,
        correct=point.correct,
        total=total,
        total_correct=total_correct,
        best_threshold=best_threshold,
        best_precision=best_precision,
    )


def thresholds_table(points: Dict[str, OperatingPoint]) -> Sequence[Tuple[str, str]]:
    """One human-readable line per group: ("human", "≥ 0.4100: precision 0.91, recall ...")."""
    lines = []
    for group, point in points.items():
        if point.reached and point.threshold is not None:
            text = (f">= {point.threshold:.4f}: precision {point.precision:.3f}, recall {point.recall:.3f}, "
                    f"coverage {point.coverage:.3f} ({point.accepted} of {point.total})")
        elif point.best_threshold is not None:
            text = (f"target {point.target} not reached; best precision {point.best_precision:.3f} "
                    f"at >= {point.best_threshold:.4f}")
        else:
            text = "no data"
        lines.append((group, text))
    return lines
