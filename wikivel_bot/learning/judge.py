"""The champion/challenger rule: a new checkpoint runs only when it measurably wins.

On the evaluation files (later uploads than anything either model was fitted on), both
models' calibrated probabilities are compared at the operating threshold
(``learning.threshold``). The challenger is promoted only if

* its precision gain is beyond the confidence interval: the lower end of the paired
  bootstrap's 95 % interval of (challenger − champion) precision is above ``margin``;
* it loses no recall at that threshold and no nDCG@5 (point estimates, challenger ≥ champion).

Anything else keeps the champion, and the challenger stays on disk with this verdict in its
report. The bootstrap is seeded (``learning.seed``), so a verdict can be reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

from wikivel_bot.learning.metrics import FileScores, bootstrap_deltas, file_counts, metrics_of


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

    def as_json(self) -> Dict[str, Any]:
        return {"outcome": self.outcome, "reasons": self.reasons, "champion": self.champion,
                "challenger": self.challenger, "deltas": self.deltas, "files": self.files,
                "threshold": self.threshold, "settings": self.settings}


def judge(champion: Sequence[FileScores], challenger: Sequence[FileScores], *, threshold: float,
          resamples: int = 1000, seed: int = 0, margin: float = 0.0, min_files: int = 20) -> Verdict:
    """Apply the rule of the module docstring.

    :param champion, challenger: the same evaluation files, in the same order.
    :param min_files: fewer evaluation files than this never promote (too little evidence).
    """
    if [f.page_id for f in champion] != [f.page_id for f in challenger]:
        raise ValueError("champion and challenger must be scored on the same files")
    a, b = file_counts(champion, threshold), file_counts(challenger, threshold)
    deltas = bootstrap_deltas(a, b, resamples=resamples, seed=seed)
    reasons: List[str] = []
    if len(champion) < min_files:
        reasons.append(f"only {len(champion)} evaluation files (at least {min_files} needed)")
    precision = deltas["precision"]
    if not precision["low"] > margin:  # NaN (nothing selected) fails too
        reasons.append(f"precision gain {_fmt(precision['delta'])} is not beyond its 95% interval "
                       f"[{_fmt(precision['low'])}, {_fmt(precision['high'])}]")
    for name in ("recall", "nDCG@5"):
        if not deltas[name]["delta"] >= 0:
            reasons.append(f"{name} drops by {_fmt(-deltas[name]['delta'])}")
    return Verdict(
        outcome="keep" if reasons else "promote",
        reasons=reasons or [f"precision +{_fmt(precision['delta'])} (95% interval "
                            f"[{_fmt(precision['low'])}, {_fmt(precision['high'])}]), recall and nDCG@5 held"],
        champion=metrics_of(a), challenger=metrics_of(b), deltas=deltas, files=len(champion), threshold=threshold,
        settings={"resamples": resamples, "seed": seed, "margin": margin, "min_files": min_files},
    )


def _fmt(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"
