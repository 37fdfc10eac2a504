"""A model calibrated and judged on what it would itself suggest (docs/learning.md).

Reviewers decide only the running model's top suggestions, so the decided pairs are a
biased sample of pairs: the ones the *champion* proposed. A challenger trained on them
learns to score the champion's mistakes low, yet on new files it proposes pairs of its own
(near neighbours of the right item) that nobody decided. A probability fitted, or a model
judged, on the champion's pairs then over-states the challenger: promoted, it selected far
more at lower precision (the first SYNTHETIC measurement, docs/benchmarks.md).

So each model is calibrated and judged on its **own** top-k suggestions of every held-out
file, ranked over every item the decisions name (the label universe the data knows):

* a suggestion a reviewer approved is correct, one a reviewer rejected is wrong;
* one nobody decided counts as **not approved**: the precision is a lower bound (it is what
  a reviewer could confirm), never an approval — the learner never takes its own
  unreviewed suggestions as positives. This favours the champion (its suggestions on the
  latest files are the decided ones), so a challenger is promoted only when it wins even so.

From the calibration files: the Platt fit of the model's cosine on its own suggestions and
its **operating threshold** (the cosine where the probability reaches ``learning.threshold``),
stored in the checkpoint so every path that suggests applies it (``linker.factory``).

The judge (:func:`judged_files`) then compares both models on the same decided pairs of the
evaluation files, each with its own probability, where a model can select only the pairs it
would itself suggest (its top-k); its undecided suggestions there are unknown and left out,
so neither model is credited or blamed for pairs no reviewer saw. Recall counts every
approval of a file; R@1 and nDCG@5 rank the decided items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from wikivel_bot.train.decisions.heads import DecisionTensors, Platt, fit_probability


@dataclass(frozen=True)
class OwnSuggestions:
    """One split's files under one model: per file its top-k (cosines, labels) and approvals."""

    page_ids: List[int]
    cosines: List[List[float]]
    labels: List[List[bool]]
    approved: List[int]

    def flat(self) -> Tuple[torch.Tensor, torch.Tensor]:
        xs = [c for row in self.cosines for c in row]
        ys = [float(y) for row in self.labels for y in row]
        return torch.tensor(xs, dtype=torch.float64), torch.tensor(ys, dtype=torch.float64)


def own_suggestions(heads: Any, data: DecisionTensors, split: str, top_k: int) -> OwnSuggestions:
    """The model's top ``top_k`` items (over ``data.items``) for each file of ``split``,
    labelled by the decisions (undecided: not approved)."""
    index = data.select(split)
    decided: Dict[int, Dict[int, bool]] = {}
    for i in index.tolist():
        decided.setdefault(int(data.pair_file[i]), {})[int(data.pair_item[i])] = bool(data.label[i] > 0.5)
    rows = sorted(decided, key=lambda r: data.page_ids[r])
    if not rows or data.items.shape[0] == 0:
        return OwnSuggestions([], [], [], [])
    heads.eval()
    with torch.no_grad():
        q = F.normalize(heads.image_head(data.files[torch.tensor(rows)]), dim=-1)
        e = F.normalize(heads.text_head(data.items), dim=-1)
        top = (q @ e.T).topk(min(top_k, e.shape[0]), dim=1)
    cosines, labels = top.values.tolist(), []
    for r, items in zip(rows, top.indices.tolist()):
        labels.append([decided[r].get(int(i), False) for i in items])
    return OwnSuggestions([data.page_ids[r] for r in rows], cosines, labels,
                          [sum(decided[r].values()) for r in rows])


def calibrate_own(heads: Any, data: DecisionTensors, top_k: int) -> Optional[Platt]:
    """Platt on the model's own suggestions of the ``calibration`` files; None when they are
    all of one kind (``heads.fit_probability``: the model keeps the threshold it had)."""
    x, y = own_suggestions(heads, data, "calibration", top_k).flat()
    return fit_probability(x, y)


def operating_score(platt: Platt, probability: float) -> Optional[float]:
    """The cosine at which ``platt`` reaches ``probability``; None when the fitted slope is
    not positive (no cosine is more likely right than another: suggest nothing)."""
    p = min(max(probability, 1e-6), 1 - 1e-6)
    return (math.log(p / (1 - p)) - platt.b) / platt.a if platt.a > 0 else None


def judged_files(heads: Any, data: DecisionTensors, platt: Platt, top_k: int,
                 split: str = "evaluation") -> List[Tuple[int, List[float], List[bool], List[bool]]]:
    """Per file of ``split``: (page id, probabilities, labels, suggested) of its decided pairs
    under the model, for ``learning.metrics.FileScores``. ``suggested``: the pair is among the
    model's own top-k, so only those can be selected at the threshold."""
    index = data.select(split)
    if index.numel() == 0:
        return []
    heads.eval()
    with torch.no_grad():
        q = F.normalize(heads.image_head(data.files), dim=-1)
        e = F.normalize(heads.text_head(data.items), dim=-1)
    rows = sorted({int(data.pair_file[i]) for i in index.tolist()})
    sims = q[torch.tensor(rows)] @ e.T
    tops = sims.topk(min(top_k, e.shape[0]), dim=1).indices.tolist()
    own = {r: set(t) for r, t in zip(rows, tops)}
    where = {r: k for k, r in enumerate(rows)}
    grouped: Dict[int, Tuple[List[float], List[bool], List[bool]]] = {}
    for i in index.tolist():
        r, item = int(data.pair_file[i]), int(data.pair_item[i])
        cos = float(sims[where[r], item])
        entry = grouped.setdefault(r, ([], [], []))
        entry[0].append(float(platt(torch.tensor(cos, dtype=torch.float64))))
        entry[1].append(bool(data.label[i] > 0.5))
        entry[2].append(item in own[r])
    return [(data.page_ids[r], *grouped[r]) for r in sorted(grouped, key=lambda r: data.page_ids[r])]
