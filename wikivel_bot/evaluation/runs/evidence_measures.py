"""What the evidence bench measures on one test split, per file, so every figure has an interval.

A row of the evidence table (``evidence.py``) is an :class:`Outcome`: per test file, its
ranking and the items accepted at the row's threshold, and the probabilities it served. Every
figure is then a function of a set of files, so the same function gives the figure and, over
files drawn with replacement (:func:`file_bootstrap`), its 95 % interval; two rows measured on
the same files give a *paired* interval of their difference (:func:`paired_gain`), which is
what an order between them needs (the interval excludes 0).

Calibration is measured on what is served: the probability each candidate carried out of
``ReadyLinker.link`` (:func:`served_calibration`: expected calibration error overall and on
the candidates with evidence alone, where the decisions are — easy image-only negatives
dominate the overall figure). Lone-category evidence (an item named by one linked category
and nothing else, the doubtful case) is judged by ROC-AUC with its interval
(:func:`lone_category_auc`) rather than by a count of "misleading kept".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from wikivel_bot.core.verification import expected_calibration_error, roc_auc
from wikivel_bot.evaluation.scoring import score_rankings

RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A figure and its 95 % interval (percentile bootstrap, or t over seeds)."""

    value: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0

    def text(self, scale: float = 100.0, signed: bool = False, digits: int = 1) -> str:
        """``+9.3 [+4.2, +15.3]`` (percentage points with the default scale)."""
        sign = "+" if signed else ""
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{self.value * scale:{sign}.{digits}f} [one run]"
        return (f"{self.value * scale:{sign}.{digits}f} [{self.low * scale:{sign}.{digits}f}, "
                f"{self.high * scale:{sign}.{digits}f}]")

    def as_dict(self) -> Dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass
class Outcome:
    """One row on the test split, per file (page ids in ``files`` order).

    :param rankings: ranked item ids per file (what R@1 and nDCG read).
    :param accepted: the items at or above the row's threshold per file.
    :param served: (page id, probability, depicted?, evidence kinds) of every candidate that
        carried a probability out of the linker (empty for rows without one).
    """

    linker: str
    mode: str
    files: Tuple[int, ...]
    rankings: Dict[int, List[str]]
    accepted: Dict[int, List[str]]
    threshold: Optional[float] = None
    on: str = ""
    reached: Optional[bool] = None
    served: List[Tuple[int, float, bool, Tuple[str, ...]]] = field(default_factory=list)


@dataclass(frozen=True)
class Truth:
    """The test split's answers: what each file depicts, the misleading (file, item) pairs,
    and the label set's items (for the share of suggestions from outside it)."""

    depicts: Mapping[int, Sequence[str]]
    misleading: Set[Tuple[int, str]]
    label_qids: Set[str]


def _per_file(outcome: Outcome, truth: Truth) -> Dict[str, np.ndarray]:
    hit = [1.0 if outcome.rankings.get(f) and outcome.rankings[f][0] in truth.depicts[f] else 0.0
           for f in outcome.files]
    taken = [len(outcome.accepted.get(f, ())) for f in outcome.files]
    right = [sum(1 for q in outcome.accepted.get(f, ()) if q in truth.depicts[f]) for f in outcome.files]
    depicted = [len(truth.depicts[f]) for f in outcome.files]
    return {"hit": np.asarray(hit), "taken": np.asarray(taken, float), "right": np.asarray(right, float),
            "depicted": np.asarray(depicted, float)}


def row_of(outcome: Outcome, truth: Truth) -> Dict[str, Any]:
    """The table's row: R@1, R@10, nDCG@5 (hop 0), precision and recall at the threshold, the
    share of suggestions outside the label set, and the share of misleading pairs kept."""
    report = score_rankings(((str(f), outcome.rankings.get(f, [])) for f in outcome.files),
                            {str(f): list(truth.depicts[f]) for f in outcome.files}, ks=(1, 5, 10), hops=(0,))
    scores = report.scores[0]
    per = _per_file(outcome, truth)
    pairs = {(f, q) for f in outcome.files for q in outcome.accepted.get(f, ())}
    misleading = {(f, q) for f, q in truth.misleading if f in set(outcome.files)}
    taken = float(per["taken"].sum())
    return {"linker": outcome.linker, "mode": outcome.mode, "R@1": scores["R@1"], "R@10": scores["R@10"],
            "nDCG@5": scores["nDCG@5"],
            "precision": float(per["right"].sum()) / taken if taken else None,
            "recall": float(per["right"].sum()) / max(1.0, float(per["depicted"].sum())),
            "outside label set": (sum(1 for _, q in pairs if q not in truth.label_qids) / len(pairs)) if pairs else None,
            "misleading kept": len(pairs & misleading) / len(misleading) if misleading else None,
            "threshold": outcome.threshold, "on": outcome.on, "reached": outcome.reached, "suggestions": int(taken)}


def file_bootstrap(n_files: int, statistic: Callable[[np.ndarray], Optional[float]], seed: int = 0,
                   resamples: int = RESAMPLES) -> Optional[Interval]:
    """The statistic on all files and its 95 % percentile interval over files drawn with
    replacement (resamples where it is undefined are skipped); None when undefined on all files."""
    value = statistic(np.arange(n_files))
    if value is None or n_files == 0:
        return None
    rng = np.random.default_rng([seed, 43])
    draws = [statistic(rng.integers(0, n_files, n_files)) for _ in range(resamples)]
    finite = [d for d in draws if d is not None and math.isfinite(d)]
    if not finite:
        return None
    low, high = np.percentile(finite, [2.5, 97.5])
    return Interval(float(value), float(low), float(high))


def paired_gain(a: Outcome, b: Outcome, truth: Truth, seed: int = 0) -> Dict[str, Optional[Interval]]:
    """``a`` minus ``b`` on the same test files, with paired 95 % intervals: R@1 (points per
    file), and precision and recall at each row's threshold (ratios over the resampled files;
    with both thresholds set for one target precision, recall is where they differ)."""
    if a.files != b.files:
        raise ValueError(f"{a.linker}/{a.mode} and {b.linker}/{b.mode} were measured on different files")
    pa, pb = _per_file(a, truth), _per_file(b, truth)

    def r1(idx: np.ndarray) -> float:
        return float(pa["hit"][idx].mean() - pb["hit"][idx].mean())

    def precision(idx: np.ndarray) -> Optional[float]:
        ta, tb = pa["taken"][idx].sum(), pb["taken"][idx].sum()
        if not ta or not tb:
            return None
        return float(pa["right"][idx].sum() / ta - pb["right"][idx].sum() / tb)

    def recall(idx: np.ndarray) -> Optional[float]:
        depicted = pa["depicted"][idx].sum()
        return float((pa["right"][idx].sum() - pb["right"][idx].sum()) / depicted) if depicted else None

    n = len(a.files)
    return {"R@1": file_bootstrap(n, r1, seed), "precision": file_bootstrap(n, precision, seed),
            "recall": file_bootstrap(n, recall, seed)}


def served_calibration(outcome: Outcome, bins: int = 10) -> Dict[str, Any]:
    """ECE of the served probabilities, overall and on the candidates with evidence alone."""
    if not outcome.served:
        return {}
    probabilities = [p for _, p, _, _ in outcome.served]
    labels = [y for _, _, y, _ in outcome.served]
    with_evidence = [(p, y) for _, p, y, kinds in outcome.served if kinds]
    out: Dict[str, Any] = {"candidates": len(labels), "ece": expected_calibration_error(probabilities, labels, bins),
                           "evidence_candidates": len(with_evidence)}
    if with_evidence:
        out["ece_evidence"] = expected_calibration_error([p for p, _ in with_evidence], [y for _, y in with_evidence],
                                                         bins)
    return out


def lone_category_auc(outcome: Outcome, seed: int = 0) -> Dict[str, Any]:
    """ROC-AUC of the served probability on lone-category candidates (one linked category and
    no other evidence), with its 95 % interval over files; None without both classes."""
    by_file: Dict[int, List[Tuple[float, bool]]] = {}
    for page_id, p, y, kinds in outcome.served:
        if kinds == ("category",):
            by_file.setdefault(page_id, []).append((p, y))
    files = sorted(by_file)

    def auc(idx: np.ndarray) -> Optional[float]:
        pairs = [pair for i in idx.tolist() for pair in by_file[files[i]]]
        labels = [y for _, y in pairs]
        if all(labels) or not any(labels):
            return None
        return roc_auc([p for p, _ in pairs], labels)

    pairs = [pair for found in by_file.values() for pair in found]
    interval = file_bootstrap(len(files), auc, seed) if files else None
    return {"candidates": len(pairs), "matches": sum(1 for _, y in pairs if y),
            "auc": interval.as_dict() if interval is not None else None}
