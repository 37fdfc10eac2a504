"""Evaluation of ranked depicts suggestions: files in, metrics and reports out.

Public API::

    iter_records(path) / read_records(path) -> {file: Record}    predictions / truth JSONL
    score_rankings(rankings, truth, ks, hops, ancestors_of) -> EvaluationReport
    evaluate_files(predictions, truth, labels=None, ks, hops) -> EvaluationReport
    evaluation_table(report) -> Table          .markdown() / .html(); html_page([tables])
    build_sheet(...) / write_sheet(rows, out)  human-evaluation rating sheet (§5.2)
    read_sheets(paths) -> [RatedSheet]; summarize(sheets) -> HumanEvalSummary

The metric definitions live in :mod:`wikivel_bot.core.metrics` (pure, stdlib only);
thresholds in :mod:`wikivel_bot.core.calibration`; Fleiss' kappa in
:mod:`wikivel_bot.core.agreement`. Nothing here needs torch: rankings from any system can be
scored on the same split.
"""

from __future__ import annotations

from wikivel_bot.evaluation.human import (
    RATINGS,
    HumanEvalSummary,
    RatedSheet,
    SheetError,
    SheetRow,
    build_sheet,
    read_sheets,
    summarize,
    write_sheet,
)
from wikivel_bot.evaluation.jsonl import Record, iter_records, read_records
from wikivel_bot.evaluation.report import Table, evaluation_table, html_page
from wikivel_bot.evaluation.scoring import (
    DEFAULT_KS,
    REPORT_KS,
    EvaluationReport,
    evaluate_files,
    score_rankings,
)

__all__ = [
    "DEFAULT_KS",
    "REPORT_KS",
    "RATINGS",
    "EvaluationReport",
    "HumanEvalSummary",
    "RatedSheet",
    "Record",
    "SheetError",
    "SheetRow",
    "Table",
    "build_sheet",
    "evaluate_files",
    "evaluation_table",
    "html_page",
    "iter_records",
    "read_records",
    "read_sheets",
    "score_rankings",
    "summarize",
    "write_sheet",
]
