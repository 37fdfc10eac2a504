"""Fleiss' kappa against the textbook example and hand-checked corner cases."""

from __future__ import annotations

import math

import pytest

from wikivel_bot.core.agreement import count_table, fleiss, fleiss_kappa

# Fleiss (1971) as reproduced on Wikipedia: 10 subjects, 14 raters, 5 categories.
WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_textbook_example() -> None:
    result = fleiss(WIKIPEDIA)
    # p_j = column sums / 140: 20/140 = 0.143, 28/140 = 0.200, 39/140 = 0.279, ...
    assert result.proportions == pytest.approx((0.143, 0.200, 0.279, 0.150, 0.229), abs=1e-3)
    # P_1 = (14² − 14) / (14 · 13) = 1.000; P_2 = (4+36+16+4 − 14) / 182 = 0.253
    assert result.observed == pytest.approx(0.378, abs=1e-3)
    assert result.expected == pytest.approx(0.213, abs=1e-3)
    # κ = (0.378 − 0.213) / (1 − 0.213) = 0.210
    assert result.kappa == pytest.approx(0.210, abs=1e-3)
    assert (result.subjects, result.raters) == (10, 14)


def test_perfect_and_chance_agreement() -> None:
    # Every subject unanimous, two categories used equally: P̄ = 1, P̄_e = 0.5, κ = 1.
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0], [0, 3]]) == pytest.approx(1.0)
    # Two raters always disagreeing on two categories: P̄ = 0, P̄_e = 0.5, κ = −1.
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)
    # Everyone always says the same category: κ undefined.
    assert math.isnan(fleiss_kappa([[3, 0], [3, 0]]))


def test_count_table_and_bad_tables() -> None:
    assert count_table([["CC", "CC", "OR"], ["IDK", "CI", "CI"]], ("CC", "TG", "OR", "CI", "IDK")) == [
        [2, 0, 1, 0, 0],
        [0, 0, 0, 2, 1],
    ]
    with pytest.raises(ValueError, match="unknown category"):
        count_table([["XX"]], ("CC",))
    with pytest.raises(ValueError, match="expected 3"):
        fleiss([[3, 0], [2, 0]])
    with pytest.raises(ValueError, match="two raters"):
        fleiss([[1, 0]])
    with pytest.raises(ValueError):
        fleiss([])
