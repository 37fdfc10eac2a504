"""The community-trial dry run: measured precision before the first real edit.

Public API::

    compare(file, ranked, truth, ancestors_of, *, media, category_of, ...) -> FileResult
    human_items(media) -> (qid, ...)              non-deprecated P180 items of a file
    FileResult / Suggestion / RunInfo             one line of results.jsonl (records.py)
    iter_results(path) / read_results(paths)      read results.jsonl; by_linker(results)
    summarize_run(results, ks, bands) -> Summary  P@k, R@k, DivR@k, mAP@k per hop 0..3, by
                                                  score band, by super-category, writer skips
    split_of(file, holdout) -> "calibrate" | "held-out"
    calibrate_results(results, target=0.9, hops=0, holdout=0.5, min_support=10,
                      by_category=False) -> thresholds document (dict)
    load_thresholds(path) -> Thresholds; filter_for(path, label_set_loader) -> CalibratedFilter
    write_report(results, out_dir, thresholds=None, ratings=None) -> {name: path}

The live part (``live.py``: :func:`select_uploads`, :func:`evaluate_live`) talks to the wiki
and runs the linker; it is imported by the CLI only. Everything else is pure and works on
the results file alone. The commands are ``wikivel-bot evaluate-live``, ``calibrate`` and
``report`` (:mod:`wikivel_bot.cli.liveeval`); the operator's guide is
``docs/community-trial.md``.
"""

from __future__ import annotations

from typing import Any

from wikivel_bot.liveeval.aggregate import Summary, summarize_run
from wikivel_bot.liveeval.calibrate import CALIBRATE, HELD_OUT, calibrate_results, split_of
from wikivel_bot.liveeval.compare import compare, human_items
from wikivel_bot.liveeval.records import (
    FileResult,
    RunInfo,
    Suggestion,
    by_linker,
    iter_results,
    read_results,
    write_result,
)
from wikivel_bot.liveeval.thresholds import CalibratedFilter, Thresholds, filter_for, load_thresholds

__all__ = [
    "CALIBRATE",
    "HELD_OUT",
    "CalibratedFilter",
    "FileResult",
    "RunInfo",
    "Suggestion",
    "Summary",
    "Thresholds",
    "by_linker",
    "calibrate_results",
    "compare",
    "filter_for",
    "human_items",
    "iter_results",
    "load_thresholds",
    "read_results",
    "split_of",
    "summarize_run",
    "write_result",
]


def write_report(*args: Any, **kwargs: Any) -> Any:
    """See :func:`wikivel_bot.liveeval.report.write_report` (imported on call: it brings the
    evaluation tables and, when drawing, matplotlib)."""
    from wikivel_bot.liveeval.report import write_report as _write_report

    return _write_report(*args, **kwargs)
