"""The evidence bench's image-free baselines: what the evidence's kinds say without any picture.

The first synthetic evidence set had the answer built in (only a lone linked category was
ever wrong), so a rule with no image reached 100 % precision; a benchmark of the image's worth
must beat these, not only "every evidence item":

* **evidence alone** — every item the evidence names, ranked by how many kinds name it, then
  by its strongest kind (:data:`KIND_ORDER`);
* **kinds only: rule** — the same without the items named by one linked category and nothing
  else;
* **kinds only: model** — the evidence model's fit on kind features alone (no image score:
  ``candidate_features(0, 0, None, kinds, True)``), fitted on the training split's evidence
  items, ranked and thresholded by its probability.

Each is an ``evidence_measures.Outcome`` on a set's test split, measured like the linkers' rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.evidence import KIND_CATEGORY, KIND_CATEGORY_LABEL, KIND_ID, KIND_LINK
from wikivel_bot.evaluation.runs.evidence_measures import Outcome, Truth
from wikivel_bot.train.synthetic.evidence import SyntheticEvidence

EVIDENCE_ALONE = "evidence alone"
KINDS_RULE = "kinds only: rule"
KINDS_MODEL = "kinds only: model"
BASELINES = (EVIDENCE_ALONE, KINDS_RULE, KINDS_MODEL)
# Evidence alone ranks an item by how many kinds name it, then by its strongest kind: an
# identifier or a description link names what the file shows; a category may name its
# photographer; an unlinked category only shares a name.
KIND_ORDER = (KIND_ID, KIND_LINK, KIND_CATEGORY, KIND_CATEGORY_LABEL)


@dataclass
class SetSplits:
    """One set's evidence and the (file, bytes) of its splits."""

    evidence: SyntheticEvidence
    files: Dict[str, List[Any]]
    realised: Mapping[str, Any]

    def truth(self, split: str) -> Truth:
        ids = [m.page_id for m, _ in self.files[split]]
        wrong = {(p, ev.qid) for p in ids for ev in self.evidence.sources.get(p, ())
                 if ev.qid not in self.evidence.depicts[p]}
        return Truth({p: self.evidence.depicts[p] for p in ids}, wrong, set(self.evidence.label_qids))


def _items(split: SetSplits, page_id: int) -> Dict[str, Tuple[str, ...]]:
    """{item: the kinds of each piece of evidence naming it} for one file."""
    kinds: Dict[str, List[str]] = {}
    for ev in split.evidence.sources.get(page_id, ()):
        kinds.setdefault(ev.qid, []).append(ev.kind)
    return {q: tuple(k) for q, k in kinds.items()}


def _kind_rank(kinds: Sequence[str]) -> Tuple[int, int]:
    return -len(set(kinds)), min(KIND_ORDER.index(k) for k in kinds)


def kind_rows(split: SetSplits, name: str) -> List[Tuple[List[float], bool, int, Tuple[str, ...]]]:
    """(kinds-only features, depicted?, page id, kinds) of every evidence item of a split."""
    from wikivel_bot.linker.evidence_model import candidate_features

    return [(candidate_features(0.0, 0.0, None, kinds, True), q in split.evidence.depicts[m.page_id], m.page_id, kinds)
            for m, _ in split.files[name] for q, kinds in _items(split, m.page_id).items()]


def fit_kinds(examples: Sequence[Any], l2: float, seed: int) -> Any:
    """The evidence model fitted on kind features alone; where the training split's evidence
    is all right (or all wrong) nothing separates, and the model is that constant rate."""
    from wikivel_bot.linker.evidence_model import FEATURES, EvidenceModel, fit

    if len({bool(e.label) for e in examples}) == 2:
        return fit(examples, l2=l2, held_out=0.0, seed=seed,
                   data={"synthetic": True, "source": "bench/evidence.py", "features": "kinds only"})
    rate = min(max(sum(1 for e in examples if e.label) / max(1, len(examples)), 1e-3), 1 - 1e-3)
    n = len(FEATURES)
    return EvidenceModel(weights=(0.0,) * n, intercept=math.log(rate / (1 - rate)), mean=(0.0,) * n, scale=(1.0,) * n)


def kind_examples(split: SetSplits, name: str) -> List[Any]:
    from wikivel_bot.linker.evidence_model import Example

    return [Example(str(p), x, y) for x, y, p, _ in kind_rows(split, name)]


def _baseline(mode: str, split: SetSplits, keep: Any, order: Any, threshold: Tuple[Optional[float], Optional[bool]] =
              (None, None), served: Any = None) -> Outcome:
    files = tuple(m.page_id for m, _ in split.files["test"])
    rankings, accepted = {}, {}
    for p in files:
        items = _items(split, p)
        rankings[p] = sorted((q for q in items if keep(items[q])), key=lambda q: (order(items[q]), q))
        accepted[p] = [q for q in rankings[p] if threshold[0] is None or -order(items[q])[0] >= threshold[0]]
    return Outcome("evidence", mode, files, rankings, accepted, threshold[0], "P" if served else "", threshold[1],
                   served or [])


def evidence_alone(split: SetSplits) -> Outcome:
    """Every evidence item proposed, ranked by kind (:data:`KIND_ORDER`), no image."""
    return _baseline(EVIDENCE_ALONE, split, lambda kinds: True, _kind_rank)


def kinds_rule(split: SetSplits) -> Outcome:
    """Evidence alone without the items named by one linked category and nothing else."""
    return _baseline(KINDS_RULE, split, lambda kinds: tuple(kinds) != (KIND_CATEGORY,), _kind_rank)


def kinds_model(split: SetSplits, model: Any, threshold: Tuple[Optional[float], Optional[bool]]) -> Outcome:
    """Evidence items ranked and thresholded by the kinds-only model's probability."""
    from wikivel_bot.linker.evidence_model import candidate_features

    def probability(kinds: Sequence[str]) -> float:
        return model.probability(candidate_features(0.0, 0.0, None, kinds, True))

    served = [(p, probability(kinds), y, kinds) for _, y, p, kinds in kind_rows(split, "test")]
    return _baseline(KINDS_MODEL, split, lambda kinds: True, lambda kinds: (-probability(kinds), *_kind_rank(kinds)),
                     threshold, served)
