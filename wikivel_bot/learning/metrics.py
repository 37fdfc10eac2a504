"""How well a model's probabilities agree with reviewers' decisions, file by file.

A model is scored on the decided pairs of each evaluation file: its calibrated match
probability of every approved (positive) and rejected (negative) item, and whether it would
itself suggest the pair (``suggested``: among its own top-k, ``train.decisions.own_suggestions``; a
pair it ranks lower is never selected, whatever its probability). From these:

* precision and recall at the operating threshold (suggested pairs at or above it; recall
  over the approved pairs), pooled over files; a model that selects nothing has precision 0 there;
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

METRICS = ("precision", "recall", "R@1", "nDCG@5")


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
    """Per-file (selected, correct selected, approvals, has approval, top is approved, nDCG@5):
    an (n, 6) array whose column sums give every metric."""
    out = np.zeros((len(files), 6))
    for i, f in enumerate(files):
        p = np.asarray(f.probabilities, dtype=float)
        y = np.asarray(f.labels, dtype=bool)
        chosen = p >= threshold
        if f.suggested:
            chosen &= np.asarray(f.suggested, dtype=bool)
        out[i, 0], out[i, 1], out[i, 2] = chosen.sum(), (chosen & y).sum(), y.sum()
        if y.any():
            order = np.argsort(-p, kind="stable")
            out[i, 3], out[i, 4] = 1.0, float(y[order[0]])
            out[i, 5] = _ndcg5(y[order])
    return out


def metrics_of(counts: np.ndarray) -> Dict[str, float]:
    """The metrics of :data:`METRICS` from summed (or weighted) per-file counts."""
    s = counts.sum(axis=0) if counts.ndim == 2 else counts
    return _ratios(s)


def _ratios(s: np.ndarray) -> Dict[str, float]:
    # A model that selects nothing at the threshold makes no statement a reviewer could
    # approve: its precision there counts as 0, so a challenger that does select correctly
    # can beat it (NaN would refuse every comparison with a timid champion).
    return {"precision": float(s[1]) / float(s[0]) if s[0] else 0.0, "recall": _div(s[1], s[2]),
            "R@1": _div(s[4], s[3]), "nDCG@5": _div(s[5], s[3])}


def bootstrap_deltas(champion: np.ndarray, challenger: np.ndarray, *, resamples: int, seed: int,
                     level: float = 0.95) -> Dict[str, Dict[str, float]]:
    """Paired bootstrap over files of challenger − champion for each metric.

    :param champion, challenger: :func:`file_counts` of the same files, in the same order.
    :returns: {metric: {"delta", "low", "high"}} with the ``level`` percentile interval.
    """
    n = champion.shape[0]
    point_a, point_b = metrics_of(champion), metrics_of(challenger)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples) if n else np.zeros((resamples, 0))
    sums_a, sums_b = weights @ champion, weights @ challenger
    out: Dict[str, Dict[str, float]] = {}
    tail = (1.0 - level) / 2.0
    for name in METRICS:
        deltas = np.array([_ratios(b)[name] - _ratios(a)[name] for a, b in zip(sums_a, sums_b)])
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
    """A Markdown table of named metric dicts (reports and `models`)."""
    head = "| model | " + " | ".join(METRICS) + " |\n|---|" + "---|" * len(METRICS) + "\n"
    return head + "".join(f"| {name} | " + " | ".join(f"{m[k]:.3f}" for k in METRICS) + " |\n" for name, m in rows)
