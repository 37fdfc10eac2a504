"""The champion/challenger rule: a new checkpoint runs only when it measurably wins.

On the evaluation files (later uploads than anything either model was fitted on), each
model selects its own suggestions at its own calibrated operating threshold ``t``
(``learning.threshold``) and is scored by **one utility per file**: TP − λ·FP, with
λ = t / (1 − t) (``metrics.utility_weight``: the exchange rate of wrong statements for right
ones that precision ``t`` stands for). The challenger is promoted only if

* its mean utility gain per file is beyond the confidence interval: the lower end of the
  paired bootstrap's 95 % interval over files of (challenger − champion) is above 0;
* its precision is not worse by more than ``margin`` (non-inferiority): the lower end of the
  95 % interval of the precision change is above −``margin``. When the champion selects
  nothing it has no precision to compare with (a model that selects nothing is not scored
  "precision 0"), and the utility alone decides;
* it selects something, and there are at least ``min_files`` evaluation files.

Why one utility rather than "precision up, recall and nDCG held": a better model judged at
its own calibrated threshold shows its gain mostly as more right statements at the same
precision, which a precision-gain rule never counts; and precision alone rewards a model for
saying less. Recall, R@1 and nDCG@5 are still reported.

Anything else keeps the champion, and the challenger stays on disk with this verdict in its
report. The bootstrap is seeded (``learning.seed``), so a verdict can be reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Sequence

from wikivel_bot.learning.metrics import FileScores, bootstrap_deltas, file_counts, metrics_of, utility_weight

# How much worse the challenger's precision may be (lower end of its 95 % interval) and still win.
PRECISION_MARGIN = 0.02


@dataclass(frozen=True)
class Verdict:
    """The judgement: ``promote`` or ``keep``, why, and the numbers behind it."""

    outcome: str
    reasons: List[str]
    champion: Dict[str, float]
    challenger: Dict[str, float]
    deltas: Dict[str, Dict[str, float]]
    files: int
    threshold: float
    settings: Dict[str, Any] = field(default_factory=dict)

    @property
    def promote(self) -> bool:
        return self.outcome == "promote"

    def kept(self, reason: str) -> "Verdict":
        """This verdict turned into a keep for ``reason`` (a later check refused the win)."""
        return replace(self, outcome="keep", reasons=[reason] + (list(self.reasons) if not self.promote else []))

    def as_json(self) -> Dict[str, Any]:
        return {"outcome": self.outcome, "reasons": self.reasons, "champion": self.champion,
                "challenger": self.challenger, "deltas": self.deltas, "files": self.files,
                "threshold": self.threshold, "settings": self.settings}


def judge(champion: Sequence[FileScores], challenger: Sequence[FileScores], *, threshold: float,
          resamples: int = 1000, seed: int = 0, margin: float = PRECISION_MARGIN, min_files: int = 20) -> Verdict:
    """Apply the rule of the module docstring.

    :param champion, challenger: the same evaluation files, in the same order.
    :param threshold: the operating probability ``t``; λ = t / (1 − t).
    :param margin: the precision non-inferiority margin.
    :param min_files: fewer evaluation files than this never promote (too little evidence).
    """
    if [f.page_id for f in champion] != [f.page_id for f in challenger]:
        raise ValueError("champion and challenger must be scored on the same files")
    weight = utility_weight(threshold)
    a, b = file_counts(champion, threshold), file_counts(challenger, threshold)
    deltas = bootstrap_deltas(a, b, resamples=resamples, seed=seed, weight=weight)
    mine, theirs = metrics_of(a, weight), metrics_of(b, weight)
    reasons: List[str] = []
    if len(champion) < min_files:
        reasons.append(f"only {len(champion)} evaluation files (at least {min_files} needed)")
    if not theirs["selected"]:
        reasons.append(f"the challenger selects nothing on the {len(challenger)} evaluation files")
    utility = deltas["utility"]
    if not utility["low"] > 0:  # NaN (no files) fails too
        reasons.append(f"utility gain {_fmt(utility['delta'])} per file is not beyond its 95% interval "
                       f"[{_fmt(utility['low'])}, {_fmt(utility['high'])}]")
    precision = deltas["precision"]
    compared = bool(mine["selected"]) and bool(theirs["selected"])
    if compared and not precision["low"] > -margin:
        reasons.append(f"precision may fall by more than {margin:g}: change {_fmt(precision['delta'])}, 95% interval "
                       f"[{_fmt(precision['low'])}, {_fmt(precision['high'])}]")
    won = (f"utility +{_fmt(utility['delta'])} per file (TP - {weight:g}·FP; 95% interval "
           f"[{_fmt(utility['low'])}, {_fmt(utility['high'])}]), " +
           (f"precision change {_fmt(precision['delta'])} [{_fmt(precision['low'])}, {_fmt(precision['high'])}] "
            f"within the {margin:g} margin" if compared else "the running model selects nothing: no precision to compare"))
    return Verdict(
        outcome="keep" if reasons else "promote", reasons=reasons or [won],
        champion=mine, challenger=theirs, deltas=deltas, files=len(champion), threshold=threshold,
        settings={"resamples": resamples, "seed": seed, "margin": margin, "min_files": min_files,
                  "utility_weight": weight},
    )


def _fmt(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"
