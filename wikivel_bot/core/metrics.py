"""Ranking metrics of the Wiki-VEL paper (§4.4), with hop credit through the item hierarchy.

One file has a ranked list of predicted items and a *set* of ground-truth items (multi-label:
about two per image in the paper's data). With ``hops = n``, a prediction ``p`` is correct for
a truth item ``g`` when ``p == g`` or ``p`` is an ancestor of ``g`` within ``n`` hops over
P31 ∪ P279 (``ancestors_of(g)[p] <= n``): predicting *mammal* for a photo of a *house cat* is
correct at hop 2. Only ancestors earn credit, never descendants: a guess more specific than
the truth is not known to be right.

What counts, in the paper's words (§4.4: "the percentage of predictions matching *any*
relevant item"): a prediction is **correct** when it matches any truth item within the hop
limit. Every metric counts correct predictions; none asks for a one-to-one matching, so a
generic item (*human*) is correct once, at its rank, and **covers** every person of the
picture it stands for. Diversity Recall counts the truth items covered.

A repeated item in a ranking is never correct at its later positions.

Worked example, used throughout (and checked in ``tests/test_metrics.py``)::

    truth       {Q146 house cat, Q144 dog}
    ranking     1 Q5 human, 2 Q729 animal, 3 Q144 dog, 4 Q7377 mammal, 5 Q146 house cat
    hierarchy   Q146 -> Q7377 (1 hop) -> Q729 (2 hops); Q144 -> Q7377 (1) -> Q729 (2)

    hops 0: correct ranks {3, 5}; truth items first covered at ranks 3, 5
    hops 2: correct ranks {2, 3, 4, 5}; truth items first covered at ranks 2, 2
            (animal at rank 2 stands for both; the rest are correct but cover nothing new)

Definitions, at cut-off k, for one file (means over files are taken by the caller). The
paper states them in one sentence each; the readings below are the ones its Table 4 allows:
there R@1 = DivR@1 = mAP@1 for every model while R@k > DivR@k for k > 1, so Recall is a
hit rate and Diversity Recall divides by min(k, |truth|).

* ``Recall@k`` = 1 if some prediction in the top k is correct, else 0 (the paper's "proportion
  of relevant items retrieved within the top-k"; equal to ``Hits@k`` of seed 003).
  Example: R@1 = 0, R@3 = 1 at hop 0; R@2 = 1 at hop 2.
* ``DivR@k`` = truth items covered by the top k / min(k, |truth|), at most 1 ("percentage of
  the relevant items matched"; the min() makes DivR@1 = R@1, as in the paper's Table 4).
  Example hop 0: DivR@1 = 0/1 = 0, DivR@3 = 1/2 = 0.5, DivR@5 = 2/2 = 1; hop 2: DivR@2 = 1.
* ``AP@k`` = Σ over correct ranks r ≤ k of (correct up to r) / r, divided by
  max(min(k, |truth|), correct in the top k). At hop 0 the correct predictions are distinct
  truth items, so the divisor is min(k, |truth|) as usual; with hop credit more predictions
  than truth items can be correct and the larger divisor keeps AP in [0, 1].
  Example hop 0: AP@5 = (1/3 + 2/5) / 2 = 0.36667; hop 2: AP@5 = (1/2 + 2/3 + 3/4 + 4/5) / 4
  = 0.67917. mAP@k is its mean over files.
* ``P@k`` = correct predictions in the top k / number of predictions in the top k (the
  predictions given, when fewer than k). Example hop 0: P@5 = 2/5; hop 2: P@5 = 4/5.
* ``RR`` = 1 / rank of the first correct prediction in the whole ranking, 0 when none (MRR is
  its mean). Example: 1/3 at hop 0, 1/2 at hop 2.
* ``nDCG@k`` = DCG@k / IDCG@k with binary gains on correct ranks, DCG = Σ 1/log2(r + 1)
  (seed 004's (2^rel − 1)/log2(i + 1) with rel ∈ {0, 1}); the ideal ranking puts
  max(min(k, |truth|), correct in the top k) correct items first (the divisor of AP). Example hop 0, k = 5:
  (1/log2 4 + 1/log2 6) / (1/log2 2 + 1/log2 3) = (0.5 + 0.38685) / (1 + 0.63093) = 0.54378.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

AncestorsOf = Callable[[str], Mapping[str, int]]
"""``ancestors_of(qid) -> {ancestor qid: hops}`` (the item itself not included)."""

MAX_HOPS = 3


@dataclass(frozen=True)
class Hits:
    """Where the correct predictions of one ranking sit, at one hop level.

    :param correct: 1-based ranks of predictions matching any truth item, ascending.
    :param credited: for each truth item covered, the rank that covers it first, ascending
        (a rank appears once per truth item it covers first: *human* covering two people
        at rank 1 gives ``(1, 1)``).
    :param n_truth: number of distinct truth items (at least 1).
    :param n_predictions: length of the ranking.
    """

    correct: Tuple[int, ...]
    credited: Tuple[int, ...]
    n_truth: int
    n_predictions: int

    def _covered_within(self, k: int) -> int:
        return bisect_right(self.credited, k)

    def recall(self, k: int) -> float:
        """Recall@k (= Hits@k): 1.0 when a correct prediction is in the top ``k``."""
        return 1.0 if self.correct and self.correct[0] <= k else 0.0

    def diversity_recall(self, k: int) -> float:
        """Diversity Recall@k: truth items covered in the top ``k`` / min(k, |truth|), at most 1."""
        size = min(k, self.n_truth)
        return min(self._covered_within(k), size) / size

    def average_precision(self, k: int) -> float:
        """AP@k: precision at each correct rank up to ``k``, summed, / max(min(k, |truth|), correct)."""
        total = 0.0
        found = 0
        for found, rank in enumerate(self.correct, start=1):
            if rank > k:
                found -= 1
                break
            total += found / rank
        return total / max(min(k, self.n_truth), found)

    def precision(self, k: int) -> float:
        """P@k: correct predictions among the top ``k`` given (0.0 for an empty ranking)."""
        shown = min(k, self.n_predictions)
        return bisect_right(self.correct, k) / shown if shown else 0.0

    def reciprocal_rank(self) -> float:
        """1 / rank of the first correct prediction (0.0 when there is none)."""
        return 1.0 / self.correct[0] if self.correct else 0.0

    def ndcg(self, k: int) -> float:
        """nDCG@k with binary gains on correct ranks."""
        dcg = 0.0
        found = 0
        for rank in self.correct:
            if rank > k:
                break
            found += 1
            dcg += _discount(rank)
        return dcg / _ideal_dcg(max(min(k, self.n_truth), found))

    def values(self, ks: Sequence[int]) -> List[float]:
        """All of the above in one pass, for scoring many files fast.

        :param ks: cut-offs in ascending order.
        :returns: R@k for each k, then DivR@k, AP@k, P@k and nDCG@k likewise, then RR
            (``5 * len(ks) + 1`` numbers).
        """
        if not self.correct:
            return [0.0] * (5 * len(ks) + 1)
        first = self.correct[0]
        recall: List[float] = []
        diverse: List[float] = []
        average: List[float] = []
        precise: List[float] = []
        gain: List[float] = []
        correct = self.correct
        next_correct = 0
        ap_sum = dcg = 0.0
        for k in ks:
            while next_correct < len(correct) and correct[next_correct] <= k:
                rank = correct[next_correct]
                next_correct += 1
                ap_sum += next_correct / rank
                dcg += _discount(rank)
            size = min(k, self.n_truth)
            divisor = max(size, next_correct)
            shown = min(k, self.n_predictions)
            recall.append(1.0 if first <= k else 0.0)
            diverse.append(min(self._covered_within(k), size) / size)
            average.append(ap_sum / divisor)
            precise.append(next_correct / shown)  # shown >= first >= 1 here
            gain.append(dcg / _ideal_dcg(divisor))
        return recall + diverse + average + precise + gain + [1.0 / first]


# 1 / log2(rank + 1) and its running sums, grown on demand: nDCG is asked for per file,
# per k and per hop level, and the logarithms are the same every time.
_DISCOUNTS: List[float] = [0.0]
_IDEAL: List[float] = [0.0]


def _discount(rank: int) -> float:
    while len(_DISCOUNTS) <= rank:
        _DISCOUNTS.append(1.0 / math.log2(len(_DISCOUNTS) + 1))
        _IDEAL.append(_IDEAL[-1] + _DISCOUNTS[-1])
    return _DISCOUNTS[rank]


def _ideal_dcg(count: int) -> float:
    _discount(count)
    return _IDEAL[count]


class RankingMatch:
    """Which truth items each prediction of one ranking can stand for, and at how many hops.

    Built once per file; :meth:`at` then answers for any hop level without calling
    ``ancestors_of`` again, so scoring hops 0..3 costs one pass over the ranking.

    :param predictions: ranked item ids, best first.
    :param truth: ground-truth item ids (order and repeats do not matter; must not be empty).
    :param ancestors_of: ``qid -> {ancestor: hops}``; None means exact matches only.
    :param max_hops: the largest hop level that will be asked for.
    :param limit: only the first ``limit`` predictions are looked at (None: all).
    :raises ValueError: when ``truth`` is empty (recall is undefined).
    """

    def __init__(
        self,
        predictions: Sequence[str],
        truth: Iterable[str],
        ancestors_of: Optional[AncestorsOf] = None,
        max_hops: int = 0,
        limit: Optional[int] = None,
    ) -> None:
        targets = sorted(set(truth))
        if not targets:
            raise ValueError("no ground-truth items: recall is undefined")
        # qid -> {truth position: hops}; a qid equal to one truth item and an ancestor of
        # another stands for both.
        credit: Dict[str, Dict[int, int]] = {}
        for position, item in enumerate(targets):
            credit.setdefault(item, {})[position] = 0
            if ancestors_of is not None and max_hops > 0:
                for ancestor, hops in ancestors_of(item).items():
                    if 0 < hops <= max_hops:
                        slot = credit.setdefault(ancestor, {})
                        known = slot.get(position)
                        if known is None or hops < known:
                            slot[position] = hops
        ranking = list(predictions if limit is None else predictions[:limit])
        # (rank, {truth position: hops}) for predictions that match something. Most of a
        # ranking matches nothing, so intersect first (in C) and look up only the few hits;
        # index() finds an item's first position, which is how repeats are skipped.
        self._edges: List[Tuple[int, Dict[int, int]]] = sorted(
            (ranking.index(item) + 1, credit[item]) for item in credit.keys() & set(ranking)
        )
        self.n_truth = len(targets)
        self.n_predictions = len(ranking)

    def at(self, hops: int) -> Hits:
        """The :class:`Hits` of this ranking when credit reaches ``hops`` hops."""
        correct: List[int] = []
        credited: List[int] = []
        seen: Set[int] = set()
        for rank, matches in self._edges:
            reachable = [p for p, h in matches.items() if h <= hops]
            if not reachable:
                continue
            correct.append(rank)
            before = len(seen)
            seen.update(reachable)
            credited.extend([rank] * (len(seen) - before))
        return Hits(tuple(correct), tuple(credited), self.n_truth, self.n_predictions)


def hits(
    predictions: Sequence[str],
    truth: Iterable[str],
    ancestors_of: Optional[AncestorsOf] = None,
    hops: int = 0,
) -> Hits:
    """The :class:`Hits` of one ranking at one hop level (see the module docstring).

    :param predictions: ranked item ids, best first.
    :param truth: ground-truth item ids (not empty).
    :param ancestors_of: ``qid -> {ancestor: hops}``; required when ``hops > 0``.
    :param hops: how far up the hierarchy a prediction may be and still count (0..3).
    """
    if hops > 0 and ancestors_of is None:
        raise ValueError("hop credit needs ancestors_of")
    return RankingMatch(predictions, truth, ancestors_of, max_hops=hops).at(hops)


def recall_at_k(predictions: Sequence[str], truth: Iterable[str], k: int,
                ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """Recall@k: 1.0 if any of the top ``k`` predictions is correct (see module docstring).

    :param predictions: ranked item ids; :param truth: truth item ids; :param k: cut-off;
    :param ancestors_of: hierarchy lookup for hop credit; :param hops: hop level (0..3).
    """
    return hits(predictions, truth, ancestors_of, hops).recall(k)


def hits_at_k(predictions: Sequence[str], truth: Iterable[str], k: int,
              ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """Hits@k of seed 003: a correct answer in the top ``k``; identical to :func:`recall_at_k`."""
    return recall_at_k(predictions, truth, k, ancestors_of, hops)


def diversity_recall_at_k(predictions: Sequence[str], truth: Iterable[str], k: int,
                          ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """Diversity Recall@k: truth items credited in the top ``k`` / min(k, |truth|).

    Parameters as for :func:`recall_at_k`.
    """
    return hits(predictions, truth, ancestors_of, hops).diversity_recall(k)


def average_precision_at_k(predictions: Sequence[str], truth: Iterable[str], k: int,
                           ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """AP@k of one ranking (mAP@k is the mean over files). Parameters as for :func:`recall_at_k`."""
    return hits(predictions, truth, ancestors_of, hops).average_precision(k)


def precision_at_k(predictions: Sequence[str], truth: Iterable[str], k: int,
                   ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """P@k: share of the top ``k`` predictions that are correct. Parameters as for :func:`recall_at_k`."""
    return hits(predictions, truth, ancestors_of, hops).precision(k)


def reciprocal_rank(predictions: Sequence[str], truth: Iterable[str],
                    ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """1 / rank of the first correct prediction, 0.0 when none (MRR is the mean over files).

    Parameters as for :func:`recall_at_k`, without a cut-off: the whole ranking counts.
    """
    return hits(predictions, truth, ancestors_of, hops).reciprocal_rank()


def ndcg_at_k(predictions: Sequence[str], truth: Iterable[str], k: int = 5,
              ancestors_of: Optional[AncestorsOf] = None, hops: int = 0) -> float:
    """nDCG@k (seed 004 reports k = 5) with binary gains. Parameters as for :func:`recall_at_k`."""
    return hits(predictions, truth, ancestors_of, hops).ndcg(k)


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean (0.0 for no values), for averaging per-file scores."""
    total = 0.0
    count = 0
    for value in values:
        total += value
        count += 1
    return total / count if count else 0.0
