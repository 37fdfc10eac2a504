"""Inter-rater agreement: Fleiss' kappa (Fleiss 1971), as used in the paper's §5.2.

N subjects (here: one prediction of one file), each rated by the same number n of raters
into one of k categories (CC, TG, OR, CI, IDK). With ``n_ij`` the raters who put subject i
in category j::

    P_i  = (Σ_j n_ij² − n) / (n (n − 1))     agreement on subject i
    P̄    = mean of P_i                       observed agreement
    p_j  = Σ_i n_ij / (N n)                  share of all ratings in category j
    P̄_e  = Σ_j p_j²                          agreement expected by chance
    κ    = (P̄ − P̄_e) / (1 − P̄_e)

Worked example (Fleiss 1971 as reproduced on Wikipedia; ``tests/test_agreement.py``): 10
subjects, 14 raters, 5 categories give P̄ = 0.378, P̄_e = 0.213, κ ≈ 0.210.

When every rating falls in one category, P̄_e = 1 and κ is undefined: the result is NaN
(``math.isnan``), which callers show as "n/a" rather than as perfect agreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Tuple


@dataclass(frozen=True)
class Agreement:
    """Fleiss' kappa with its parts.

    :param kappa: κ, NaN when undefined (all ratings in one category).
    :param observed: P̄, the mean agreement per subject.
    :param expected: P̄_e, the agreement expected by chance.
    :param subjects: N.
    :param raters: n, raters per subject.
    :param proportions: p_j per category, in the order of the columns.
    """

    kappa: float
    observed: float
    expected: float
    subjects: int
    raters: int
    proportions: Tuple[float, ...]


def fleiss(counts: Sequence[Sequence[int]]) -> Agreement:
    """Fleiss' kappa of a subjects × categories table of rating counts.

    :param counts: ``counts[i][j]`` = raters who put subject ``i`` in category ``j``; every
        row must have the same length and the same sum n ≥ 2.
    :raises ValueError: for an empty table, ragged rows, negative counts, fewer than two
        raters, or rows with different numbers of raters.
    """
    if not counts:
        raise ValueError("no subjects to compute agreement on")
    width = len(counts[0])
    if width == 0:
        raise ValueError("no categories")
    raters = sum(counts[0])
    if raters < 2:
        raise ValueError(f"Fleiss' kappa needs at least two raters per subject, not {raters}")
    totals = [0] * width
    agreement_sum = 0.0
    for index, row in enumerate(counts):
        if len(row) != width:
            raise ValueError(f"subject {index}: {len(row)} categories, expected {width}")
        if any(c < 0 for c in row):
            raise ValueError(f"subject {index}: negative count")
        if sum(row) != raters:
            raise ValueError(f"subject {index}: {sum(row)} ratings, expected {raters} like the first subject")
        agreement_sum += (sum(c * c for c in row) - raters) / (raters * (raters - 1))
        for j, c in enumerate(row):
            totals[j] += c
    subjects = len(counts)
    observed = agreement_sum / subjects
    proportions = tuple(t / (subjects * raters) for t in totals)
    expected = sum(p * p for p in proportions)
    # Compare with slack: a single-category table gives 1 - 1e-16 rather than exactly 1.
    kappa = math.nan if abs(1.0 - expected) < 1e-12 else (observed - expected) / (1.0 - expected)
    return Agreement(kappa, observed, expected, subjects, raters, proportions)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """κ alone; see :func:`fleiss` for the parameters and errors."""
    return fleiss(counts).kappa


def count_table(ratings: Iterable[Sequence[str]], categories: Sequence[str]) -> List[List[int]]:
    """Turn each subject's list of ratings into a row of counts per category.

    :param ratings: per subject, one rating per rater (e.g. ``["CC", "CC", "OR"]``).
    :param categories: the column order (e.g. ``("CC", "TG", "OR", "CI", "IDK")``).
    :raises ValueError: for a rating that is not one of ``categories``.
    """
    column: Dict[str, int] = {name: j for j, name in enumerate(categories)}
    table: List[List[int]] = []
    for index, subject in enumerate(ratings):
        row = [0] * len(categories)
        for rating in subject:
            if rating not in column:
                raise ValueError(f"subject {index}: unknown category {rating!r}")
            row[column[rating]] += 1
        table.append(row)
    return table
