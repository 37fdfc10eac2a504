"""Means and 95 % intervals over seeds, and orders between rows that the seeds support.

One training run on one synthetic draw is one sample: on the Table-4 reproduction, CLIP
Fusion's R@1 moved from 12.8 to 24.8 between training seeds alone, so a table of one seed
orders nothing. Each figure is therefore a mean over runs keyed by ``(data seed, training
seed)``, with a 95 % Student-t interval, and an order between two rows is claimed only when
the **paired** interval — the difference taken run by run, on the same seeds and therefore the
same test files — excludes 0.

Why the interval is taken over data seeds: training seeds are nested in data seeds (training
seed 3 on data seed 0 has nothing in common with training seed 3 on data seed 1), and runs on
one data draw share its test files, so they are not independent samples. For a balanced
nested design the only unbiased estimate of the grand mean's variance is the spread of the
per-data-seed means divided by their number, with (data seeds − 1) degrees of freedom. With
3 data seeds that is t = 4.30: wide, and honest. With one data seed the units are the training
seeds and the interval is conditional on that one draw (the result says which); no order is
claimed from it. With one run there is no interval and no order is claimed.

Standard library only: the numbers are plain floats, any bench can use it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

SeedKey = Tuple[int, int]  # (data seed, training seed)

# Two-sided 95 % critical values of Student's t (the 0.975 quantile), df 1-30.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
_Z975 = 1.959964


def t95(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (a table to df 30,
    then the Cornish-Fisher expansion, good to 1e-4 there).

    :raises ValueError: ``df`` < 1.
    """
    if df < 1:
        raise ValueError(f"a t interval needs at least 1 degree of freedom, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


@dataclass(frozen=True)
class Interval:
    """A mean over runs with its 95 % interval (``low``/``high`` None: one unit, no interval).

    :param mean: mean of the unit means (equal weight per data seed).
    :param runs: runs behind it. :param units: independent units the interval is taken over.
    :param unit: ``"data seed"`` or ``"training seed"`` (one data seed: conditional on it).
    """

    mean: float
    low: Optional[float]
    high: Optional[float]
    runs: int
    units: int
    unit: str

    @property
    def half_width(self) -> Optional[float]:
        """The ± of ``mean ± half_width`` (None without an interval)."""
        return None if self.high is None else self.high - self.mean

    def to_dict(self) -> Dict[str, object]:
        """Plain data for JSON."""
        return {"mean": self.mean, "low": self.low, "high": self.high, "runs": self.runs, "units": self.units,
                "unit": self.unit}


def seed_interval(values: Mapping[SeedKey, float]) -> Interval:
    """Mean and 95 % t interval of one figure over runs keyed ``(data seed, training seed)``.

    :raises ValueError: no runs.
    """
    if not values:
        raise ValueError("no runs to summarize")
    by_data: Dict[int, List[float]] = {}
    for (data_seed, _train_seed), value in sorted(values.items()):
        by_data.setdefault(data_seed, []).append(float(value))
    if len(by_data) >= 2:
        units = [statistics.fmean(v) for v in by_data.values()]
        unit = "data seed"
    else:
        units = next(iter(by_data.values()))
        unit = "training seed"
    mean = statistics.fmean(units)
    if len(units) < 2:
        return Interval(mean, None, None, len(values), len(units), unit)
    half = t95(len(units) - 1) * statistics.stdev(units) / math.sqrt(len(units))
    return Interval(mean, mean - half, mean + half, len(values), len(units), unit)


def paired_interval(first: Mapping[SeedKey, float], second: Mapping[SeedKey, float]) -> Interval:
    """The interval of ``first − second``, the difference taken run by run (same seeds).

    :raises ValueError: the two rows were not measured on the same seeds (naming them).
    """
    if set(first) != set(second):
        odd = sorted(set(first) ^ set(second))
        raise ValueError(f"a paired difference needs the same seeds in both rows; only in one: {odd}")
    return seed_interval({key: first[key] - second[key] for key in first})


@dataclass(frozen=True)
class Order:
    """What the seeds say about two rows at one metric: ``verdict`` is ``"above"`` (first
    above second), ``"below"`` or ``"none"``; ``reason`` says why in words."""

    first: str
    second: str
    metric: str
    difference: Interval
    verdict: str
    reason: str

    def to_dict(self) -> Dict[str, object]:
        """Plain data for JSON."""
        return {"first": self.first, "second": self.second, "metric": self.metric, "verdict": self.verdict,
                "reason": self.reason, "difference": self.difference.to_dict()}


def order_between(first: str, second: str, metric: str, a: Mapping[SeedKey, float],
                  b: Mapping[SeedKey, float]) -> Order:
    """Claim ``first`` above (or below) ``second`` only when the paired 95 % interval of the
    difference, taken over data seeds, excludes 0. One run, one data seed (rows that do not
    depend on the training seed then differ by the same amount on every run: a zero-width
    interval about one draw of test files) or an interval holding 0 claims nothing."""
    diff = paired_interval(a, b)
    if diff.low is None or diff.high is None:
        return Order(first, second, metric, diff, "none", f"{diff.runs} run, no interval: no order claimed")
    if diff.unit != "data seed":
        return Order(first, second, metric, diff, "none",
                     "one data seed: the interval holds for this one draw of test files only; no order claimed")
    if diff.low > 0:
        return Order(first, second, metric, diff, "above", "paired 95 % interval above 0")
    if diff.high < 0:
        return Order(first, second, metric, diff, "below", "paired 95 % interval below 0")
    return Order(first, second, metric, diff, "none", "paired 95 % interval holds 0: no order claimed")


def all_orders(rows: Mapping[str, Mapping[str, Mapping[SeedKey, float]]], metrics: Sequence[str],
               names: Optional[Sequence[str]] = None) -> List[Order]:
    """Every pair of rows (in ``names`` order, default the mapping's) at each metric.

    :param rows: row name -> metric -> {(data seed, training seed): value}.
    """
    names = list(names if names is not None else rows)
    return [order_between(a, b, metric, rows[a][metric], rows[b][metric])
            for metric in metrics for i, a in enumerate(names) for b in names[i + 1:]]
