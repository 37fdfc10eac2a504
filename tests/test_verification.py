"""Verifier calibration and metrics (core/verification.py)."""

from __future__ import annotations

import math
import random

import pytest

from wikivel_bot.core.verification import (
    Calibration,
    expected_calibration_error,
    fit_calibration,
    reliability,
    roc_auc,
    verification_metrics,
)
from wikivel_bot.errors import UsageError


def _pairs(n: int = 4000, seed: int = 0, slope: float = 1.7, bias: float = -2.0):
    """Logits whose true match probability is sigmoid(slope * z + bias): a known answer."""
    rng = random.Random(seed)
    logits, labels = [], []
    for _ in range(n):
        z = rng.uniform(-3.0, 5.0)
        p = 1.0 / (1.0 + math.exp(-(slope * z + bias)))
        logits.append(z)
        labels.append(rng.random() < p)
    return logits, labels


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_calibrated_probability_is_monotone_in_the_score(method):
    logits, labels = _pairs()
    calibration = fit_calibration(logits, labels, method)
    grid = [x / 10 for x in range(-60, 80)]
    probabilities = [calibration.probability(z) for z in grid]
    assert all(b >= a for a, b in zip(probabilities, probabilities[1:]))
    assert probabilities[0] < 0.1 and probabilities[-1] > 0.9
    assert all(0.0 <= p <= 1.0 for p in probabilities)


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_calibration_is_accurate_on_held_out_pairs(method):
    fit_logits, fit_labels = _pairs(seed=1)
    calibration = fit_calibration(fit_logits, fit_labels, method)
    held_logits, held_labels = _pairs(seed=2)
    probabilities = [calibration.probability(z) for z in held_logits]
    assert expected_calibration_error(probabilities, held_labels) < 0.03
    # The raw logits squashed by a plain sigmoid are badly calibrated (slope and bias wrong).
    raw = [1.0 / (1.0 + math.exp(-z)) for z in held_logits]
    assert expected_calibration_error(raw, held_labels) > 0.1


def test_platt_recovers_slope_and_bias():
    logits, labels = _pairs(n=20000, seed=3)
    calibration = fit_calibration(logits, labels, "platt")
    assert calibration.a == pytest.approx(1.7, abs=0.15) and calibration.b == pytest.approx(-2.0, abs=0.2)


def test_round_trip_through_plain_data():
    logits, labels = _pairs(n=500)
    for method in ("platt", "isotonic"):
        calibration = fit_calibration(logits, labels, method)
        again = Calibration.from_dict(calibration.as_dict())
        assert [again.probability(z) for z in (-1.0, 0.5, 2.0)] == [calibration.probability(z) for z in (-1.0, 0.5, 2.0)]


def test_metrics_by_hand():
    probabilities = [0.9, 0.8, 0.7, 0.3, 0.2, 0.6]
    labels = [True, True, False, True, False, False]
    m = verification_metrics(probabilities, labels, threshold=0.5)
    # Predicted positive: 0.9 0.8 0.7 0.6 -> tp 2, fp 2; negatives 0.3 (fn) 0.2 (tn).
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["precision"] == pytest.approx(0.5) and m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    # AUC: pairs (pos, neg) where pos > neg: 0.9>all 3, 0.8>all 3, 0.3>0.2 only -> 7/9.
    assert roc_auc(probabilities, labels) == pytest.approx(7 / 9)
    assert roc_auc([0.5, 0.5], [True, False]) == pytest.approx(0.5)


def test_reliability_bins_and_ece():
    bins = reliability([0.05, 0.15, 0.95, 0.95], [False, True, True, True], bins=10)
    assert [b.count for b in bins if b.count] == [1, 1, 2]
    assert bins[9].accuracy == 1.0 and bins[9].mean_probability == pytest.approx(0.95)
    # |0 - 0.05| + |1 - 0.15| + 2 * |1 - 0.95|, over 4.
    assert expected_calibration_error([0.05, 0.15, 0.95, 0.95], [False, True, True, True]) == pytest.approx(
        (0.05 + 0.85 + 0.1) / 4)


def test_one_class_or_unknown_method_is_refused():
    with pytest.raises(UsageError, match="need both kinds"):
        fit_calibration([0.1, 0.2], [True, True])
    with pytest.raises(UsageError, match="platt, isotonic"):
        fit_calibration([0.1, 0.2], [True, False], "beta")
