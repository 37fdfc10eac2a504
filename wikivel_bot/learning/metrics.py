"""How well a model's probabilities agree with reviewers' decisions, file by file.

A model is scored on the decided pairs of each evaluation file: its calibrated match
probability of every approved (positive) and rejected (negative) item, and whether it would
itself suggest the pair (``suggested``: among its own top-k, ``train.decisions.own_suggestions``; a
pair it ranks lower is never selected, whatever its probability). From these:

* **utility** per file at the operating threshold ``t``: TP − λ·FP over its selected pairs,
  λ = t / (1 − t) — the one number the judge decides on. A pair of probability p adds
  p − λ(1 − p) in expectation, positive exactly when p > t, so selecting at ``t`` is what
  maximises it, and a model that selects nothing scores 0 (neither credit nor blame);
* precision and recall at the threshold (suggested pairs at or above it; recall over the
  approved pairs), pooled over files; a model that selects nothing has **no** precision
  there (NaN), not precision 0;
* R@1: the file's best-scored decided item was approved (files with an approval);
* nDCG@5 of the decided items ranked by probability, approvals relevant (same files).

Per-file counts are kept so the paired bootstrap (:func:`bootstrap_deltas`) can resample
files — the unit of independence — for champion and challenger at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

METRICS = ("utility", "precision", "recall", "R@1", "nDCG@5")
# Columns of file_counts: selected, correct selected, approvals, has an approval, top approved,
# nDCG@5, and 1 (the file itself, so weighted sums count resampled files).
_COLUMNS = 7


def utility_weight(threshold: float) -> float:
    """λ = t / (1 − t): what one wrong statement costs in right ones at target precision ``t``
    (TP − λ·FP > 0 exactly when precision > t)."""
    t = min(max(float(threshold), 1e-6), 1 - 1e-6)
    return t / (1.0 - t)


@dataclass(frozen=True)
class FileScores:
    """One file's decided pairs under one model: probabilities and labels (True = approved).

    :param suggested: per pair, whether the model itself would suggest it (among its own
        top-k, ``train.decisions.own_suggestions``); only those can be selected at the threshold.
        Empty: every pair.
    """

    page_id: int
    probabilities: Tuple[float, ...]
    labels: Tuple[bool, ...]
    suggested: Tuple[bool, ...] = ()


def file_counts(files: Sequence[FileScores], threshold: float) -> np.ndarray:
    """Per-file (selected, correct selected, approvals, has approval, top is approved, nDCG@5,
    1): an (n, 7) array whose column sums give every metric."""
    out = np.zeros((len(files), _COLUMNS))
    for i, f in enumerate(files):
        p = np.asarray(f.probabilities, dtype=float)
        y = np.asarray(f.labels, dtype=bool)
        chosen = p >= threshold
        if f.suggested:
            chosen &= np.asarray(f.suggested, dtype=bool)
        out[i, 0], out[i, 1], out[i, 2], out[i, 6] = chosen.sum(), (chosen & y).sum(), y.sum(), 1.0
        if y.any():
            order = np.argsort(-p, kind="stable")
            out[i, 3], out[i, 4] = 1.0, float(y[order[0]])
            out[i, 5] = _ndcg5(y[order])
    return out


def metrics_of(counts: np.ndarray, weight: float = 1.0) -> Dict[str, float]:
    """The metrics of :data:`METRICS` (and ``selected``: pairs selected) from summed (or
    weighted) per-file counts; ``weight``: λ of the utility (:func:`utility_weight`)."""
    s = counts.sum(axis=0) if counts.ndim == 2 else counts
    return {**_ratios(s, weight), "selected": float(s[0])}


def _ratios(s: np.ndarray, weight: float) -> Dict[str, float]:
    # A model that selects nothing makes no statement: utility 0, precision undefined (NaN) —
    # never "precision 0", which would let any challenger beat a timid champion on precision.
    return {"utility": _div(s[1] - weight * (s[0] - s[1]), s[6]), "precision": _div(s[1], s[0]),
            "recall": _div(s[1], s[2]), "R@1": _div(s[4], s[3]), "nDCG@5": _div(s[5], s[3])}


def bootstrap_deltas(champion: np.ndarray, challenger: np.ndarray, *, resamples: int, seed: int,
                     level: float = 0.95, weight: float = 1.0) -> Dict[str, Dict[str, float]]:
    """Paired bootstrap over files of challenger − champion for each metric.

    :param champion, challenger: :func:`file_counts` of the same files, in the same order.
    :param weight: λ of the utility (:func:`utility_weight`).
    :returns: {metric: {"delta", "low", "high"}} with the ``level`` percentile interval; a
        resample where either model selects nothing has no precision change and is left out
        of that metric's interval.
    """
    n = champion.shape[0]
    point_a, point_b = metrics_of(champion, weight), metrics_of(challenger, weight)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples) if n else np.zeros((resamples, 0))
    sums_a, sums_b = weights @ champion, weights @ challenger
    out: Dict[str, Dict[str, float]] = {}
    tail = (1.0 - level) / 2.0
    drawn = [(_ratios(a, weight), _ratios(b, weight)) for a, b in zip(sums_a, sums_b)]
    for name in METRICS:
        deltas = np.array([b[name] - a[name] for a, b in drawn])
        deltas = deltas[~np.isnan(deltas)]
        low, high = (float(np.quantile(deltas, tail)), float(np.quantile(deltas, 1 - tail))) if deltas.size else (
            math.nan, math.nan)
        out[name] = {"delta": point_b[name] - point_a[name], "low": low, "high": high}
    return out


def _ndcg5(relevance: np.ndarray) -> float:
    gains = relevance[:5].astype(float)
    dcg = float((gains / np.log2(np.arange(2, gains.size + 2))).sum())
    ideal_n = min(int(relevance.sum()), 5)
    ideal = float((1.0 / np.log2(np.arange(2, ideal_n + 2))).sum())
    return dcg / ideal if ideal else 0.0


def _div(a: float, b: float) -> float:
    return float(a) / float(b) if b else math.nan


def counts_table(rows: List[Tuple[str, Dict[str, float]]]) -> str:
    """A Markdown table of named metric dicts (reports and `models`); n/a where undefined."""
    head = "| model | " + " | ".join(METRICS) + " |\n|---|" + "---|" * len(METRICS) + "\n"
    return head + "".join(f"| {name} | " + " | ".join(_cell(m.get(k)) for k in METRICS) + " |\n" for name, m in rows)


def _cell(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) and not math.isnan(value) else "n/a"
