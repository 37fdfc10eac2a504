"""The evidence model: one calibrated match probability from the image score and the file's evidence.

A candidate of a file comes from the image's top-K, from the file's own evidence (a linked
category, a description link, an identifier: ``core.evidence``), or from both. Evidence is
strong but not always right — "Category:Photographs by X" names the photographer, not what
the picture shows — so the image must be able to overrule it. This is a small logistic
regression over per-candidate features (:data:`FEATURES`, built by the one function
:func:`candidate_features`; a linked candidate's through :func:`served_features`, which the
linker and the training records both call, so what is served is what was fitted):

* the visual score, its gap to the best visual score of the file, the image rank (as 1/rank)
  and whether the image's top-K held the item at all;
* an indicator per evidence kind (:data:`~wikivel_bot.core.evidence.KINDS`) and the number of
  distinct kinds;
* whether the item is in the label set (items outside it were encoded on the fly);
* ``evidence_x_gap``: the gap, on candidates with evidence only — evidence the picture
  disagrees with is the case the model must learn to distrust, so it gets its own weight
  rather than sharing the image-only candidates' one.

:func:`fit` fits it by Newton's method with L2 regularisation (deterministic) on part of the
files and checks the calibration on the rest (ECE, reliability bins, ``core.verification``).
The checkpoint is one self-describing JSON file (:meth:`EvidenceModel.save`): the feature
names, the weights, the standardisation, what it was trained on (``"synthetic": true`` for
generated data), the held-out metrics, and a content hash of the parameters that serves as
its version. numpy only.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.core.evidence import BUCKET_IMAGE_ONLY, BUCKET_SEVERAL, KINDS
from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.core.verification import reliability, verification_metrics
from wikivel_bot.errors import LinkerError, UsageError

FORMAT = "wikivel-evidence-model"
FORMAT_VERSION = 1

KIND_FEATURES = tuple(f"kind:{kind}" for kind in KINDS)
# The order is the model's contract: a checkpoint whose list differs is refused at load.
FEATURES: Tuple[str, ...] = (
    "visual_score",
    "visual_gap",
    "inverse_rank",
    "outside_top_k",
    *KIND_FEATURES,
    "kinds",
    "in_label_set",
    "evidence_x_gap",
)


def candidate_features(visual_score: float, best_visual_score: float, image_rank: Optional[int],
                       kinds: Iterable[str], in_label_set: bool) -> List[float]:
    """The features of one candidate, in the order of :data:`FEATURES`.

    :param visual_score: the linker's image score of the item (the same scale for every
        candidate of the file, items encoded on the fly included).
    :param best_visual_score: the best visual score among the file's candidates.
    :param image_rank: the item's 1-based rank in the image's top-K over the label set; None
        when the image alone did not propose it (every item outside the label set).
    :param kinds: the kinds of its evidence (repeats count once; none: image only).
    :param in_label_set: False for an item fetched and encoded on the fly.
    :raises ValueError: an unknown kind or a rank below 1 (the message names it).
    """
    if image_rank is not None and image_rank < 1:
        raise ValueError(f"image rank {image_rank} is not a 1-based rank")
    present = set(kinds)
    unknown = sorted(present - set(KINDS))
    if unknown:
        raise ValueError(f"unknown evidence kind {unknown[0]!r} (known: {', '.join(KINDS)})")
    # An item encoded on the fly may outscore the label set's best; the gap is then 0.
    gap = max(0.0, float(best_visual_score) - float(visual_score))
    return [
        float(visual_score),
        gap,
        0.0 if image_rank is None else 1.0 / image_rank,
        1.0 if image_rank is None else 0.0,
        *(1.0 if kind in present else 0.0 for kind in KINDS),
        float(len(present)),
        1.0 if in_label_set else 0.0,
        gap if present else 0.0,
    ]


def served_features(evidence: Mapping[str, Any]) -> List[float]:
    """The features of a candidate from what the linker stored in its ``Candidate.evidence``.

    The one place that turns a linked candidate into features, for serving and for training:
    the linker (``evidence_link.annotate``) stores ``visual_score``, ``best_visual_score``
    (the best over the file's candidate set *before* the ranking rules: the image's top-K and
    every evidence item), ``image_rank``, ``sources`` and ``in_label_set``, then takes the
    probability of these features; the training records (``train.evidence.fit
    .evidence_records``) read the same stored values. Reading the best score again from the
    candidates kept *after* the rules made the two disagree (a dropped best moves the gap).

    :param evidence: a candidate's ``evidence`` mapping; ``sources`` holds ``Evidence.as_dict()``
        documents or :class:`~wikivel_bot.core.evidence.Evidence` values.
    :raises ValueError: ``visual_score`` or ``best_visual_score`` missing (linked before the
        linker stored them: link again), or what :func:`candidate_features` refuses.
    """
    for key in ("visual_score", "best_visual_score"):
        if evidence.get(key) is None:
            raise ValueError(f"the candidate's evidence has no {key!r} (link it again to store it)")
    kinds = [s.kind if hasattr(s, "kind") else str(s["kind"]) for s in evidence.get("sources") or ()]
    rank = evidence.get("image_rank")
    return candidate_features(float(evidence["visual_score"]), float(evidence["best_visual_score"]),
                              None if rank is None else int(rank), kinds, bool(evidence.get("in_label_set", True)))


def feature_bucket(features: Sequence[float]) -> str:
    """The report bucket (``core.evidence.kind_bucket``) a feature vector stands for."""
    start = FEATURES.index(KIND_FEATURES[0])
    present = [kind for kind, value in zip(KINDS, features[start:start + len(KINDS)]) if value]
    if not present:
        return BUCKET_IMAGE_ONLY
    return present[0] if len(present) == 1 else BUCKET_SEVERAL


class Example(NamedTuple):
    """One training row: the file it belongs to (the held-out part is split by file), the
    candidate's features (:func:`candidate_features`) and whether the file depicts it."""

    group: str
    features: Sequence[float]
    label: bool


@dataclass(frozen=True)
class EvidenceModel:
    """A fitted evidence model; :meth:`probability` is all the linker needs.

    :param weights: one per feature, on standardised features.
    :param intercept: the bias.
    :param mean: per-feature mean of the training rows; :param scale: their standard deviation.
    :param l2: the regularisation it was fitted with.
    :param data: what it was trained on (``synthetic``, ``records``, ``files``, ...).
    :param metrics: held-out metrics (``core.verification.verification_metrics`` and more).
    :param features: the feature names, :data:`FEATURES` for a model this program fits.
    """

    weights: Tuple[float, ...]
    intercept: float
    mean: Tuple[float, ...]
    scale: Tuple[float, ...]
    l2: float = 1.0
    data: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)
    features: Tuple[str, ...] = FEATURES
    created: str = ""

    def logit(self, features: Sequence[float]) -> float:
        """The model's log-odds for one candidate's features."""
        if len(features) != len(self.weights):
            raise ValueError(f"{len(features)} features given, the evidence model takes {len(self.weights)}")
        return self.intercept + sum(w * (x - m) / s for w, x, m, s in zip(self.weights, features, self.mean, self.scale))

    def probability(self, features: Sequence[float]) -> float:
        """P(the file depicts the candidate), from :func:`candidate_features`."""
        return _sigmoid(self.logit(features))

    @property
    def version(self) -> str:
        """A content hash of the parameters: it changes with any weight, and names the model
        wherever a probability it gave is stored."""
        return parameter_hash(self.features, self.weights, self.intercept, self.mean, self.scale)

    def as_dict(self) -> Dict[str, Any]:
        """The checkpoint's JSON document."""
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION, "version": self.version,
            "features": list(self.features), "weights": list(self.weights), "intercept": self.intercept,
            "standardise": {"mean": list(self.mean), "scale": list(self.scale)},
            "l2": self.l2, "data": dict(self.data), "metrics": dict(self.metrics), "created": self.created,
        }

    def save(self, path: Path) -> Path:
        """Write the checkpoint (see :meth:`as_dict`) as JSON."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")
        return path


def parameter_hash(features: Sequence[str], weights: Sequence[float], intercept: float, mean: Sequence[float],
                   scale: Sequence[float]) -> str:
    """sha256 of the parameters in a canonical JSON form (floats as ``repr`` round-trips them)."""
    doc = {"features": list(features), "weights": [repr(float(w)) for w in weights],
           "intercept": repr(float(intercept)), "mean": [repr(float(m)) for m in mean],
           "scale": [repr(float(s)) for s in scale]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode("utf-8")).hexdigest()


def load(path: Path) -> EvidenceModel:
    """Read a checkpoint written by :meth:`EvidenceModel.save`.

    :raises LinkerError: a missing or unreadable file, not an evidence model, a newer format,
        features other than :data:`FEATURES`, or parameters that do not match the stored
        version (one line, naming the file).
    """
    path = Path(path)
    where = f"evidence model {path}"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LinkerError(f"{where}: no such file (fit one with `wikivel-bot train evidence`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LinkerError(f"{where}: unreadable: {exc}") from None
    except ValueError as exc:
        raise LinkerError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LinkerError(f"{where}: not an evidence model checkpoint (no \"format\": \"{FORMAT}\")")
    if not isinstance(doc.get("format_version"), int) or doc["format_version"] > FORMAT_VERSION:
        raise LinkerError(f"{where}: format version {doc.get('format_version')!r} is not one this program reads "
                          f"(up to {FORMAT_VERSION})")
    features = doc.get("features")
    if features != list(FEATURES):
        raise LinkerError(f"{where}: fitted on features {features!r}, this program computes {list(FEATURES)!r}: "
                          "fit it again with `wikivel-bot train evidence`")
    try:
        standardise = doc["standardise"]
        weights = tuple(float(w) for w in doc["weights"])
        mean = tuple(float(m) for m in standardise["mean"])
        scale = tuple(float(s) for s in standardise["scale"])
        intercept = float(doc["intercept"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LinkerError(f"{where}: malformed parameters ({type(exc).__name__}: {exc})") from None
    if not len(weights) == len(mean) == len(scale) == len(FEATURES):
        raise LinkerError(f"{where}: {len(weights)} weights, {len(mean)} means and {len(scale)} scales for "
                          f"{len(FEATURES)} features")
    if not all(math.isfinite(v) for v in (*weights, *mean, intercept)) or not all(s > 0 for s in scale):
        raise LinkerError(f"{where}: parameters that are not finite (or a scale that is not positive)")
    model = EvidenceModel(weights=weights, intercept=intercept, mean=mean, scale=scale, l2=float(doc.get("l2", 0.0)),
                          data=dict(doc.get("data") or {}), metrics=dict(doc.get("metrics") or {}),
                          features=tuple(features), created=str(doc.get("created", "")))
    if doc.get("version") != model.version:
        raise LinkerError(f"{where}: its parameters do not match its version {str(doc.get('version'))[:12]!r} "
                          "(edited by hand or damaged): fit it again")
    return model


def fit(examples: Sequence[Example], *, l2: float = 1.0, held_out: float = 0.25, seed: int = 0,
        data: Optional[Mapping[str, Any]] = None, bins: int = 10) -> EvidenceModel:
    """Fit the model on part of the files and measure its calibration on the rest.

    :param examples: the candidates, with the file each belongs to.
    :param l2: the L2 penalty on the (standardised) weights; the intercept is not penalised.
    :param held_out: the share of *files* kept out of the fit to measure it on (0: none).
    :param seed: which files are held out.
    :param data: a description of the data, stored in the checkpoint; say ``"synthetic": True``
        for generated data (the model's numbers are then SYNTHETIC).
    :param bins: reliability bins of the held-out check.
    :raises UsageError: no examples, a wrong feature count, an invalid share or penalty, or
        one class only in the fitted part.
    """
    if not examples:
        raise UsageError("no candidate records to fit the evidence model on")
    if not 0.0 <= held_out < 1.0:
        raise UsageError(f"the held-out share must be in [0, 1), not {held_out}")
    if l2 < 0:
        raise UsageError(f"the L2 penalty must be 0 or more, not {l2}")
    for number, example in enumerate(examples, 1):
        if len(example.features) != len(FEATURES):
            raise UsageError(f"record {number} has {len(example.features)} features, not {len(FEATURES)}")
    groups = sorted({str(e.group) for e in examples})
    order = np.random.default_rng(seed).permutation(len(groups))
    n_out = int(round(held_out * len(groups))) if held_out else 0
    if held_out and len(groups) > 1:
        n_out = min(max(n_out, 1), len(groups) - 1)
    test_groups = {groups[i] for i in order[:n_out].tolist()}
    train = [e for e in examples if str(e.group) not in test_groups]
    test = [e for e in examples if str(e.group) in test_groups]
    x = np.asarray([e.features for e in train], dtype=np.float64)
    y = np.asarray([1.0 if e.label else 0.0 for e in train])
    positives = int(y.sum())
    if positives == 0 or positives == len(y):
        raise UsageError(f"cannot fit on {len(y)} candidates of which {positives} match: need both kinds")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0  # a constant feature: its weight stays 0 under the penalty
    weights, intercept, iterations = _newton((x - mean) / scale, y, l2)
    model = EvidenceModel(weights=tuple(float(w) for w in weights), intercept=float(intercept),
                          mean=tuple(float(m) for m in mean), scale=tuple(float(s) for s in scale), l2=float(l2),
                          created=format_timestamp())
    described = {**(data or {}), "records": len(examples), "files": len(groups),
                 "positives": sum(1 for e in examples if e.label)}
    described.setdefault("synthetic", False)
    metrics: Dict[str, Any] = {"split": {"held_out_share": held_out, "seed": seed, "fitted_records": len(train),
                                         "fitted_files": len(groups) - len(test_groups),
                                         "held_out_records": len(test), "held_out_files": len(test_groups)},
                               "newton_iterations": iterations}
    if test:
        metrics.update(held_out_metrics(model, test, bins=bins))
    return replace(model, data=described, metrics=metrics)


def held_out_metrics(model: EvidenceModel, examples: Sequence[Example], bins: int = 10) -> Dict[str, Any]:
    """Calibration and ranking-free metrics of ``model`` on ``examples`` (files it was not fitted on).

    ``held_out`` holds ``verification_metrics`` at P >= 0.5 (accuracy, precision, recall, F1,
    ROC-AUC, ECE, base rate) and the log-loss; ``reliability`` the bins; ``by_bucket`` the
    pairs, match rate and mean probability per evidence bucket.
    """
    probabilities = [model.probability(e.features) for e in examples]
    labels = [bool(e.label) for e in examples]
    summary = verification_metrics(probabilities, labels, bins=bins)
    eps = 1e-12
    summary["log_loss"] = -sum(math.log(max(p, eps)) if y else math.log(max(1.0 - p, eps))
                               for p, y in zip(probabilities, labels)) / len(labels)
    by_bucket: Dict[str, Dict[str, float]] = {}
    for example, p, y in zip(examples, probabilities, labels):
        row = by_bucket.setdefault(feature_bucket(example.features), {"pairs": 0.0, "matches": 0.0, "probability": 0.0})
        row["pairs"] += 1
        row["matches"] += 1.0 if y else 0.0
        row["probability"] += p
    buckets = {name: {"pairs": int(row["pairs"]), "match_rate": row["matches"] / row["pairs"],
                      "mean_probability": row["probability"] / row["pairs"]} for name, row in sorted(by_bucket.items())}
    return {"held_out": summary,
            "reliability": [{"low": b.low, "high": b.high, "count": b.count, "mean_probability": b.mean_probability,
                             "accuracy": b.accuracy} for b in reliability(probabilities, labels, bins)],
            "by_bucket": buckets}


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _newton(x: np.ndarray, y: np.ndarray, l2: float, iterations: int = 100) -> Tuple[np.ndarray, float, int]:
    """L2-penalised logistic regression by Newton's method with a backtracking line search.

    The objective, sum of log-losses + l2/2 ||w||^2 (intercept unpenalised), is convex, and
    strictly so in w when l2 > 0, so the steps are deterministic and converge; the line
    search keeps a step on well separated data from overshooting. A tiny ridge on the
    intercept keeps the Hessian invertible when l2 = 0 and the data are separable.
    """
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    penalty = np.full(d + 1, float(l2))
    penalty[-1] = 0.0
    theta = np.zeros(d + 1)
    base = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
    theta[-1] = math.log(base / (1 - base))

    def objective(t: np.ndarray) -> float:
        z = design @ t
        # log(1 + e^z) - y z, written so it never overflows.
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(penalty * t * t))

    current = objective(theta)
    done = 0
    for done in range(1, iterations + 1):
        p = 1.0 / (1.0 + np.exp(-(design @ theta)))
        gradient = design.T @ (p - y) + penalty * theta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty + 1e-9)
        step = -np.linalg.solve(hessian, gradient)
        slope = float(gradient @ step)
        if -slope < 1e-12:
            break
        size = 1.0
        while size > 1e-10:
            candidate = objective(theta + size * step)
            if candidate <= current + 1e-4 * size * slope:
                break
            size /= 2.0
        else:
            break
        theta, current = theta + size * step, candidate
    return theta[:-1], float(theta[-1]), done
