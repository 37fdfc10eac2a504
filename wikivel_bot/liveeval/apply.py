"""Applying calibrated thresholds where suggestions are shown: suggest, export and review.

``--calibrated thresholds.json`` on those commands keeps only the suggestions that reach the
threshold ``wikivel-bot calibrate`` found for their linker (and super-category, when it
calibrated per category): the suggestions measured to reach the target precision.

* ``suggest`` and ``export`` filter each candidate (:func:`filter_outcomes`,
  :func:`filter_review_files`), per super-category when the file has such thresholds.
* ``review`` filters in the queue query, which knows one score threshold and one linker:
  :func:`review_threshold` gives the linker's overall threshold (per-category thresholds
  are not applied there; the command says so).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple

from wikivel_bot.errors import UsageError
from wikivel_bot.liveeval.thresholds import CalibratedFilter, Thresholds


def filter_outcomes(outcomes: Sequence[Any], flt: CalibratedFilter) -> List[Any]:
    """``link_files`` outcomes with the candidates below their threshold removed.

    Failed outcomes pass unchanged; ranks stay those the linker gave, so a gap shows that
    something was left out.
    """
    kept: List[Any] = []
    for outcome in outcomes:
        candidates = getattr(outcome, "candidates", None)
        if candidates is None:
            kept.append(outcome)
            continue
        passing = tuple(c for c in candidates if flt.keep(c.linker, c.qid, c.score, getattr(c, "probability", None)))
        kept.append(dataclasses.replace(outcome, candidates=passing))
    return kept


def filter_review_files(files: Iterable[Any], flt: CalibratedFilter) -> Iterator[Any]:
    """Review files (``core.review_rules.ReviewFile``) with only passing candidates; files
    left without candidates are not yielded."""
    for review_file in files:
        passing = tuple(c for c in review_file.candidates
                        if flt.keep(c.linker, c.qid, c.score, getattr(c, "probability", None)))
        if passing:
            yield dataclasses.replace(review_file, candidates=passing)


def review_threshold(thresholds: Thresholds, linker: Optional[str]) -> Tuple[str, float, bool]:
    """(linker, score threshold, per-category thresholds ignored?) for the review query.

    :param thresholds: the loaded file.
    :param linker: the ``--linker`` filter given, if any.
    :raises UsageError: several linkers calibrated and none chosen, the chosen one not
        calibrated, or its target not reached (nothing would be shown).
    """
    names = sorted(thresholds.linkers)
    if linker is None:
        if len(names) != 1:
            raise UsageError(f"{thresholds.path}: thresholds for {len(names)} linkers ({', '.join(names)}); "
                             "choose one with --linker")
        linker = names[0]
    entry = thresholds.linkers.get(linker)
    if entry is None:
        raise UsageError(f"{thresholds.path}: no threshold for linker {linker!r} (calibrated: {', '.join(names)})")
    if entry.on == "probability":
        raise UsageError(f"{thresholds.path}: linker {linker!r} is calibrated on the verifier's probability, which "
                         "the review query cannot filter on; use export --calibrated")
    if entry.threshold is None:
        raise UsageError(f"{thresholds.path}: linker {linker!r} did not reach the target precision "
                         f"{thresholds.target:g}: no suggestion passes")
    return linker, entry.threshold, bool(entry.categories)
