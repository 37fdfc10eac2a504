"""Match probabilities for (file, item) pairs: calibration maps and verification metrics.

The cascade's pair model (seed 000's cross-attention verifier) outputs a logit ``z`` per
pair. A logit is not a probability; on held-out files with known answers this module fits a
monotone map ``z -> P(match)``:

* **Platt scaling** — ``sigmoid(a·z + b)``, two parameters fitted by Newton's method on the
  log-loss (with Platt's smoothed targets so separable data does not run off to infinity).
* **Isotonic regression** — pool-adjacent-violators: a non-decreasing step function, read
  with linear interpolation between the fitted points.

Both are non-decreasing in ``z``: a higher score never gets a lower probability. And the
metrics a verifier is judged by (seed 000): accuracy and F1 at a probability threshold,
ROC-AUC, the expected calibration error (ECE) and the reliability diagram's bins.

Pure standard library; the maps serialise to plain dicts stored in checkpoints.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from wikivel_bot.errors import UsageError

METHODS = ("platt", "isotonic")


@dataclass(frozen=True)
class Calibration:
    """A fitted map from logit to probability.

    :param method: ``platt`` or ``isotonic``.
    :param a: Platt slope; :param b: Platt intercept.
    :param xs: isotonic breakpoints (increasing logits); :param ys: their probabilities.
    :param pairs: how many (logit, label) pairs it was fitted on; :param positives: of which matches.
    """

    method: str
    a: float = 1.0
    b: float = 0.0
    xs: Tuple[float, ...] = ()
    ys: Tuple[float, ...] = ()
    pairs: int = 0
    positives: int = 0

    def probability(self, z: float) -> float:
        """P(match) for logit ``z`` (non-decreasing in ``z``)."""
        if self.method == "platt":
            return _sigmoid(self.a * z + self.b)
        if not self.xs:
            return 0.0
        if z <= self.xs[0]:
            return self.ys[0]
        if z >= self.xs[-1]:
            return self.ys[-1]
        i = bisect.bisect_right(self.xs, z)
        x0, x1, y0, y1 = self.xs[i - 1], self.xs[i], self.ys[i - 1], self.ys[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (z - x0) / (x1 - x0)

    def as_dict(self) -> Dict[str, Any]:
        """Plain data for checkpoints."""
        return {"method": self.method, "a": self.a, "b": self.b, "xs": list(self.xs), "ys": list(self.ys),
                "pairs": self.pairs, "positives": self.positives}

    @staticmethod
    def from_dict(doc: Mapping[str, Any]) -> "Calibration":
        """Inverse of :meth:`as_dict`."""
        return Calibration(method=str(doc["method"]), a=float(doc.get("a", 1.0)), b=float(doc.get("b", 0.0)),
                           xs=tuple(float(x) for x in doc.get("xs", ())), ys=tuple(float(y) for y in doc.get("ys", ())),
                           pairs=int(doc.get("pairs", 0)), positives=int(doc.get("positives", 0)))


def fit_calibration(logits: Sequence[float], labels: Sequence[bool], method: str = "platt") -> Calibration:
    """Fit a calibration map on held-out (logit, is-a-match) pairs.

    :param logits: the pair model's logits.
    :param labels: True where the pair is a correct match.
    :param method: ``platt`` or ``isotonic``.
    :raises UsageError: an unknown method, or pairs of one class only (nothing to calibrate).
    """
    if method not in METHODS:
        raise UsageError(f"calibration method must be one of {', '.join(METHODS)}, not {method!r}")
    if len(logits) != len(labels):
        raise UsageError("calibration needs one label per logit")
    positives = sum(1 for y in labels if y)
    if positives == 0 or positives == len(labels):
        raise UsageError(f"cannot calibrate on {len(labels)} pairs of which {positives} match: need both kinds")
    if method == "platt":
        a, b = _platt(logits, labels)
        return Calibration("platt", a=a, b=b, pairs=len(labels), positives=positives)
    xs, ys = _isotonic(logits, labels)
    return Calibration("isotonic", xs=tuple(xs), ys=tuple(ys), pairs=len(labels), positives=positives)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _platt(logits: Sequence[float], labels: Sequence[bool], iterations: int = 100) -> Tuple[float, float]:
    """Newton's method with a backtracking line search on the log-loss of sigmoid(a z + b),
    with Platt's smoothed targets (the safeguarded form of Lin, Lin & Weng 2007: a plain
    Newton step overshoots on well separated scores)."""
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    hi, lo = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
    targets = [hi if y else lo for y in labels]
    a, b = 0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))

    def loss(a_: float, b_: float) -> float:
        total = 0.0
        for z, t in zip(logits, targets):
            f = a_ * z + b_
            # t·(−log σ(f)) + (1−t)·(−log(1−σ(f))), in a form that never overflows.
            total += (1.0 - t) * f + math.log1p(math.exp(-f)) if f >= 0 else -t * f + math.log1p(math.exp(f))
        return total

    current = loss(a, b)
    for _ in range(iterations):
        ga = gb = 0.0
        haa = hbb = 1e-12
        hab = 0.0
        for z, t in zip(logits, targets):
            p = _sigmoid(a * z + b)
            d = p - t
            w = p * (1.0 - p)
            ga += d * z
            gb += d
            haa += w * z * z
            hab += w * z
            hbb += w
        if abs(ga) < 1e-9 and abs(gb) < 1e-9:
            break
        det = haa * hbb - hab * hab
        da = -(hbb * ga - hab * gb) / det
        db = -(haa * gb - hab * ga) / det
        slope = ga * da + gb * db
        step = 1.0
        while step >= 1e-10:
            candidate = loss(a + step * da, b + step * db)
            if candidate < current + 1e-4 * step * slope:
                break
            step /= 2.0
        if step < 1e-10:
            break
        a, b, current = a + step * da, b + step * db, candidate
    return a, b


def _isotonic(logits: Sequence[float], labels: Sequence[bool]) -> Tuple[List[float], List[float]]:
    """Pool adjacent violators over pairs sorted by logit; one point per block (its mean logit)."""
    order = sorted(range(len(logits)), key=lambda i: logits[i])
    blocks: List[List[float]] = []  # [sum of labels, count, sum of logits]
    for i in order:
        blocks.append([1.0 if labels[i] else 0.0, 1.0, float(logits[i])])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            top = blocks.pop()
            blocks[-1] = [blocks[-1][0] + top[0], blocks[-1][1] + top[1], blocks[-1][2] + top[2]]
    return [b[2] / b[1] for b in blocks], [b[0] / b[1] for b in blocks]


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of a reliability diagram: predictions in [low, high)."""

    low: float
    high: float
    count: int
    mean_probability: float
    accuracy: float


def reliability(probabilities: Sequence[float], labels: Sequence[bool], bins: int = 10) -> List[ReliabilityBin]:
    """Equal-width bins of predicted probability with the observed match rate in each."""
    sums = [[0, 0.0, 0] for _ in range(bins)]
    for p, y in zip(probabilities, labels):
        i = min(bins - 1, max(0, int(p * bins)))
        sums[i][0] += 1
        sums[i][1] += p
        sums[i][2] += 1 if y else 0
    return [ReliabilityBin(i / bins, (i + 1) / bins, int(c), s / c if c else 0.0, hits / c if c else 0.0)
            for i, (c, s, hits) in enumerate(sums)]


def expected_calibration_error(probabilities: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float:
    """ECE: the count-weighted mean |accuracy − confidence| over equal-width bins."""
    total = len(probabilities)
    if not total:
        return float("nan")
    return sum(b.count * abs(b.accuracy - b.mean_probability) for b in reliability(probabilities, labels, bins)) / total


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Area under the ROC curve (the probability a match outscores a non-match; ties count ½)."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return float("nan")
    rank_sum = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        average_rank = (i + j) / 2.0 + 1.0  # ranks are 1-based; ties share their mean rank
        rank_sum += average_rank * sum(1 for m in range(i, j + 1) if labels[order[m]])
        i = j + 1
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def verification_metrics(probabilities: Sequence[float], labels: Sequence[bool], threshold: float = 0.5,
                         bins: int = 10) -> Dict[str, float]:
    """Accuracy, precision, recall and F1 at ``threshold``, ROC-AUC, ECE, pairs and base rate."""
    tp = sum(1 for p, y in zip(probabilities, labels) if p >= threshold and y)
    fp = sum(1 for p, y in zip(probabilities, labels) if p >= threshold and not y)
    fn = sum(1 for p, y in zip(probabilities, labels) if p < threshold and y)
    n = len(labels)
    tn = n - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "pairs": float(n),
        "base_rate": (tp + fn) / n if n else float("nan"),
        "accuracy": (tp + tn) / n if n else float("nan"),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "roc_auc": roc_auc(probabilities, labels),
        "ece": expected_calibration_error(probabilities, labels, bins),
    }
