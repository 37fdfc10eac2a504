"""Score thresholds from ``evaluate-live`` results, checked on held-out files.

The files are split deterministically by a hash of their MediaInfo id — the same file
lands on the same side for every linker and every rerun, whatever the order of the results —
into a *calibration* part and a *held-out* part (``holdout`` is the held-out share). On the
calibration part, :func:`wikivel_bot.core.calibration.calibrate` finds the lowest threshold
whose suggestions reach the target precision; the held-out part then says what that
threshold really gives (:func:`~wikivel_bot.core.calibration.apply_threshold`). Only the
held-out number is an honest estimate: the calibration part chose the threshold.

A suggestion is *correct* when it stands for a human item within ``hops`` hops (0: the
exact item; the default, because a too-generic item is not what Commons:Depicts asks for).

With ``by_category``, each super-category of the suggestions gets its own threshold from
:func:`~wikivel_bot.core.calibration.calibrate_groups` (a category that does not reach the
target accepts nothing); ``held_out_combined`` is what the per-category rule gives on all
held-out suggestions together.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.core.calibration import OperatingPoint, apply_threshold, calibrate, calibrate_groups
from wikivel_bot.errors import UsageError
from wikivel_bot.liveeval.aggregate import UNCATEGORISED
from wikivel_bot.liveeval.records import FileResult, by_linker
from wikivel_bot.liveeval.thresholds import thresholds_document

CALIBRATE = "calibrate"
HELD_OUT = "held-out"
DEFAULT_TARGET = 0.9
DEFAULT_HOLDOUT = 0.5
DEFAULT_MIN_SUPPORT = 10

Pair = Tuple[float, bool]


def split_of(file: str, holdout: float = DEFAULT_HOLDOUT) -> str:
    """Which part a file belongs to: :data:`HELD_OUT` or :data:`CALIBRATE`.

    A hash rather than the file order, so adding files to a rerun moves no file across.

    :param file: the MediaInfo id (any stable file name works).
    :param holdout: the share held out, in (0, 1).
    """
    digest = hashlib.sha256(file.encode("utf-8")).digest()
    position = int.from_bytes(digest[:8], "big") / 2 ** 64
    return HELD_OUT if position < holdout else CALIBRATE


def split_results(results: Sequence[FileResult], holdout: float = DEFAULT_HOLDOUT
                  ) -> Tuple[List[FileResult], List[FileResult]]:
    """(calibration part, held-out part) of ``results`` (see :func:`split_of`)."""
    calibration = [r for r in results if split_of(r.file, holdout) == CALIBRATE]
    held_out = [r for r in results if split_of(r.file, holdout) == HELD_OUT]
    return calibration, held_out


# What a threshold applies to: the linker's score, or a verifier's calibrated probability
# (the cascade's; suggestions without one are left out of the calibration).
ON = ("score", "probability")


def _value(s: Any, on: str) -> Optional[float]:
    return s.score if on == "score" else s.probability


def pairs(results: Sequence[FileResult], hops: int = 0, on: str = "score") -> List[Pair]:
    """(score or probability, correct at ``hops``) of every suggestion that has the value."""
    return [(v, s.correct(hops)) for r in results for s in r.suggestions if (v := _value(s, on)) is not None]


def grouped_pairs(results: Sequence[FileResult], hops: int = 0, on: str = "score") -> List[Tuple[str, float, bool]]:
    """(super-category, score or probability, correct) of every suggestion that has the value."""
    return [(s.category or UNCATEGORISED, v, s.correct(hops)) for r in results for s in r.suggestions
            if (v := _value(s, on)) is not None]


def calibrate_linker(results: Sequence[FileResult], *, target: float = DEFAULT_TARGET, hops: int = 0,
                     holdout: float = DEFAULT_HOLDOUT, min_support: int = DEFAULT_MIN_SUPPORT,
                     by_category: bool = False, on: str = "score") -> Dict[str, Any]:
    """The thresholds entry of one linker (see :mod:`wikivel_bot.liveeval.thresholds`).

    :param results: one linker's results.
    :param target: precision to reach, in (0, 1].
    :param hops: hop credit for "correct" (0..3).
    :param holdout: share of files held out, in (0, 1).
    :param min_support: suggestions a threshold must accept to count (per category too).
    :param by_category: also a threshold per super-category.
    :param on: ``score`` or ``probability`` (a verifier's: the cascade's suggestions carry one,
        any linker's do with ``linker.verifier``).
    :raises UsageError: ``on`` is ``probability`` and no suggestion of the linker has one.
    """
    calibration, held_out = split_results(results, holdout)
    if on == "probability" and not pairs(results, hops, on):
        raise UsageError(f"no suggestion of linker {results[0].run.linker!r} carries a probability: "
                         "calibrate on it needs a run with a verifier (linker.verifier = a cascade best.pt, "
                         "or the cascade with cascade.verifier = true)")
    point = calibrate(pairs(calibration, hops, on), target, min_support)
    entry: Dict[str, Any] = {
        "threshold": point.threshold,
        "on": on,
        "run": dict(results[0].run.__dict__),
        "files": {"calibrate": len(calibration), "held_out": len(held_out)},
        "calibration": point.as_dict(),
        "held_out": _applied(pairs(held_out, hops, on), point.threshold, target).as_dict(),
    }
    if by_category:
        groups = calibrate_groups(grouped_pairs(calibration, hops, on), target, min_support)
        held = grouped_pairs(held_out, hops, on)
        entry["categories"] = {
            name: {
                "threshold": found.threshold,
                "calibration": found.as_dict(),
                "held_out": _applied([(s, c) for g, s, c in held if g == name], found.threshold, target).as_dict(),
            }
            for name, found in groups.items()
        }
        rule = {name: found.threshold for name, found in groups.items()}
        entry["held_out_combined"] = _combined(held, rule, point.threshold, target).as_dict()
    return entry


def calibrate_results(results: Sequence[FileResult], *, target: float = DEFAULT_TARGET, hops: int = 0,
                      holdout: float = DEFAULT_HOLDOUT, min_support: int = DEFAULT_MIN_SUPPORT,
                      by_category: bool = False, sources: Sequence[str] = (), on: str = "score") -> Dict[str, Any]:
    """A thresholds document for every linker in ``results``.

    :param sources: the results files, recorded in the document.
    :param on: threshold the linker ``score`` or a verifier's ``probability``.
    :raises UsageError: bad target, hops, holdout or min_support; mixed setups of one linker.
    """
    if not 0.0 < target <= 1.0:
        raise UsageError(f"--target must be a precision in (0, 1], not {target}")
    if not 0 <= hops <= 3:
        raise UsageError(f"--hops must be 0..3, not {hops}")
    if not 0.0 < holdout < 1.0:
        raise UsageError(f"--holdout must be a share strictly between 0 and 1, not {holdout}")
    if on not in ON:
        raise UsageError(f"--on must be one of {', '.join(ON)}, not {on!r}")
    if min_support < 1:
        raise UsageError(f"--min-support must be at least 1, not {min_support}")
    linkers = {name: calibrate_linker(group, target=target, hops=hops, holdout=holdout, min_support=min_support,
                                      by_category=by_category, on=on)
               for name, group in by_linker(results).items()}
    return thresholds_document(linkers, target=target, hops=hops, holdout=holdout, min_support=min_support,
                               by_category=by_category, results=sources)


def _held_out(results: Sequence[FileResult], threshold: Optional[float], target: float, hops: int) -> OperatingPoint:
    return _applied(pairs(results, hops), threshold, target)


def _applied(found: Sequence[Pair], threshold: Optional[float], target: float) -> OperatingPoint:
    if threshold is None:
        # Accept nothing: what apply_threshold gives above every score.
        total_correct = sum(1 for _, c in found if c)
        return OperatingPoint(None, target, False, 0.0, 0.0, 0.0, 0, 0, len(found), total_correct)
    return apply_threshold(found, threshold, target)


def _combined(rows: Sequence[Tuple[str, float, bool]], rule: Dict[str, Optional[float]],
              fallback: Optional[float], target: float) -> OperatingPoint:
    # Shift every score by its own category's threshold: "accepted" becomes score >= 0, so
    # apply_threshold counts the per-category rule in one pass. A category without a
    # threshold (not reached) accepts nothing.
    shifted: List[Pair] = []
    for group, score, correct in rows:
        threshold = rule.get(group, fallback)
        shifted.append((score - threshold if threshold is not None else float("-inf"), correct))
    point = apply_threshold(shifted, 0.0, target)
    return replace(point, threshold=None, best_threshold=None)
