"""Thresholds that reach a target precision, on constructed score distributions."""

from __future__ import annotations

import random

import pytest

from wikivel_bot.core.calibration import (
    apply_threshold,
    calibrate,
    calibrate_groups,
    precision_curve,
    thresholds_table,
)

# The module docstring's example.
EXAMPLE = [(0.9, True), (0.8, True), (0.7, True), (0.6, False), (0.5, True), (0.4, False)]


def test_docstring_example() -> None:
    # >= 0.5 accepts 5 with 4 correct: precision 4/5 = 0.8, recall 4/4, coverage 5/6.
    point = calibrate(EXAMPLE, target=0.8)
    assert point.reached and point.threshold == 0.5
    assert (point.precision, point.recall) == (0.8, 1.0)
    assert point.coverage == pytest.approx(5 / 6)
    # 0.9: 0.5 gives 0.8 and 0.6 gives 3/4, so the lowest reaching it is 0.7 (3/3).
    point = calibrate(EXAMPLE, target=0.9)
    assert point.threshold == 0.7
    assert (point.accepted, point.correct, point.recall) == (3, 3, 0.75)


def test_input_order_does_not_matter() -> None:
    shuffled = list(EXAMPLE)
    random.Random(3).shuffle(shuffled)
    assert calibrate(shuffled, 0.9) == calibrate(EXAMPLE, 0.9)


def test_constructed_distribution_reaches_the_target_where_it_should() -> None:
    # 1000 distinct scores 0.000 .. 0.999: from 0.6 up nine in ten are correct (every tenth
    # is wrong), below 0.6 one in two.
    def draw(wrong_digit: int) -> list:
        pairs = []
        for i in range(1000):
            score = i / 1000
            correct = (i % 10 != wrong_digit) if score >= 0.6 else (i % 2 == 0)
            pairs.append((score, correct))
        return pairs

    point = calibrate(draw(0), target=0.9)
    # From 0.6 up the precision is 360/400 = 0.9 exactly; 0.599 adds a wrong pair (360/401)
    # and every lower band is half wrong, so 0.6 is the lowest threshold reaching 0.9.
    assert point.threshold == 0.6
    assert point.precision == pytest.approx(0.9)
    assert point.accepted == 400 and point.correct == 360
    # recall = 360 / (360 + 300 correct below 0.6); coverage = 400/1000.
    assert point.recall == pytest.approx(360 / 660)
    assert point.coverage == pytest.approx(0.4)
    # Held-out data of the same shape (other pairs wrong) keeps the precision.
    held_out = apply_threshold(draw(5), point.threshold, target=0.9)
    assert held_out.reached and held_out.precision == pytest.approx(0.9)
    assert not apply_threshold(draw(5), 0.3, target=0.9).reached


def test_unreachable_target_is_reported_clearly() -> None:
    pairs = [(0.9, True), (0.8, False), (0.7, True), (0.6, False)]
    point = calibrate(pairs, target=0.95, min_support=2)
    # min_support=2 rules out >= 0.9 alone (1/1); the best with two or more is 2/3 at 0.7.
    assert not point.reached and point.threshold is None
    assert (point.accepted, point.precision, point.coverage) == (0, 0.0, 0.0)
    assert point.best_threshold == 0.7 and point.best_precision == pytest.approx(2 / 3)
    assert "not reached" in thresholds_table({"all": point})[0][1]


def test_ties_are_accepted_together() -> None:
    # Three pairs share 0.5; a threshold cannot split them.
    pairs = [(0.9, True), (0.5, True), (0.5, False), (0.5, True)]
    points, total, total_correct = precision_curve(pairs)
    assert [(p.threshold, p.accepted, p.correct) for p in points] == [(0.9, 1, 1), (0.5, 4, 3)]
    assert (total, total_correct) == (4, 3)
    assert calibrate(pairs, 0.75).threshold == 0.5


def test_per_group_thresholds_differ() -> None:
    # Paintings are easy (correct from 0.3 up), humans need 0.8.
    rows = [("painting", s / 10, s >= 3) for s in range(10)] + [("human", s / 10, s >= 8) for s in range(10)]
    found = calibrate_groups(rows, target=1.0)
    assert list(found) == ["human", "painting"]
    assert found["painting"].threshold == 0.3 and found["human"].threshold == 0.8
    assert found["human"].recall == 1.0 and found["human"].coverage == pytest.approx(0.2)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        calibrate(EXAMPLE, target=0.0)
    with pytest.raises(ValueError):
        calibrate(EXAMPLE, min_support=0)
    with pytest.raises(ValueError, match="finite"):
        calibrate([(float("nan"), True)])
    assert calibrate([], 0.9).threshold is None
