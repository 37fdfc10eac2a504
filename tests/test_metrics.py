"""The §4.4 metrics on hand-computed multi-label rankings, with and without hop credit."""

from __future__ import annotations

import itertools
import math
from typing import Dict, List, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikivel_bot.core.metrics import (
    RankingMatch,
    average_precision_at_k,
    diversity_recall_at_k,
    hits,
    hits_at_k,
    mean,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

# The module docstring's hierarchy: house cat and dog are mammals (1 hop), animals (2 hops).
HIERARCHY: Dict[str, Dict[str, int]] = {
    "Q146": {"Q7377": 1, "Q729": 2},  # house cat -> mammal -> animal
    "Q144": {"Q7377": 1, "Q729": 2},  # dog -> mammal -> animal
    "Q76": {"Q5": 1},  # Barack Obama -> human
    "Q6279": {"Q5": 1},  # Joe Biden -> human
}


def ancestors_of(qid: str) -> Mapping[str, int]:
    return HIERARCHY.get(qid, {})


TRUTH = ["Q146", "Q144"]  # house cat, dog
RANKING = ["Q5", "Q729", "Q144", "Q7377", "Q146"]  # human, animal, dog, mammal, house cat


def test_worked_example_at_hop_0() -> None:
    # Exact matches only: dog at rank 3, house cat at rank 5.
    found = hits(RANKING, TRUTH)
    assert found.correct == (3, 5) and found.credited == (3, 5)
    # R@k: a hit in the top k at all.
    assert [found.recall(k) for k in (1, 2, 3, 5)] == [0.0, 0.0, 1.0, 1.0]
    # DivR@k = credited in top k / min(k, 2): k=1 0/1, k=3 1/2, k=5 2/2.
    assert [found.diversity_recall(k) for k in (1, 3, 5)] == [0.0, 0.5, 1.0]
    # AP@5 = (1/3 + 2/5) / min(5, 2) = 0.733333 / 2 = 0.366667.
    assert found.average_precision(5) == pytest.approx((1 / 3 + 2 / 5) / 2)
    # AP@3 = (1/3) / min(3, 2) = 0.166667.
    assert found.average_precision(3) == pytest.approx(1 / 6)
    # P@5 = 2 correct / 5 shown; P@3 = 1/3.
    assert found.precision(5) == pytest.approx(0.4)
    assert found.precision(3) == pytest.approx(1 / 3)
    # RR = 1 / 3 (first correct at rank 3).
    assert found.reciprocal_rank() == pytest.approx(1 / 3)
    # nDCG@5 = (1/log2 4 + 1/log2 6) / (1/log2 2 + 1/log2 3) = 0.886853 / 1.630930 = 0.543771.
    assert found.ndcg(5) == pytest.approx(0.543771, abs=1e-6)


def test_worked_example_at_hop_1() -> None:
    # mammal (rank 4) is 1 hop above both truth items; animal (2 hops) is not yet correct.
    found = hits(RANKING, TRUTH, ancestors_of, hops=1)
    assert found.correct == (3, 4, 5)
    # dog covers Q144, mammal covers Q146 too; house cat at rank 5 covers nothing new.
    assert found.credited == (3, 4)
    # §4.4: every prediction matching any relevant item counts, house cat included.
    # AP@5 = (1/3 + 2/4 + 3/5) / max(min(5, 2), 3) = 1.433333 / 3 = 0.477778
    assert found.average_precision(5) == pytest.approx((1 / 3 + 2 / 4 + 3 / 5) / 3)
    assert found.average_precision(5) == pytest.approx(0.477778, abs=1e-6)
    # P@5 = 3/5; DivR@4 = 2/2.
    assert found.precision(5) == pytest.approx(0.6)
    assert found.diversity_recall(4) == 1.0
    assert found.diversity_recall(3) == 0.5


def test_worked_example_at_hop_2() -> None:
    # animal (rank 2) is 2 hops above both truth items and now correct.
    found = hits(RANKING, TRUTH, ancestors_of, hops=2)
    assert found.correct == (2, 3, 4, 5)
    # animal stands for both truth items at once; dog, mammal and cat are correct as well.
    assert found.credited == (2, 2)
    assert found.recall(1) == 0.0 and found.recall(2) == 1.0
    assert found.diversity_recall(2) == 1.0
    # AP@5 = (1/2 + 2/3 + 3/4 + 4/5) / max(2, 4) = 2.716667 / 4 = 0.679167
    assert found.average_precision(5) == pytest.approx(0.679167, abs=1e-6)
    # P@5 = 4/5; RR = 1/2.
    assert found.precision(5) == pytest.approx(0.8)
    assert found.reciprocal_rank() == 0.5
    # nDCG@5 = (1/log2 3 + 1/log2 4 + 1/log2 5 + 1/log2 6) / (1 + 1/log2 3 + 1/log2 4 + 1/log2 5)
    #        = 1.948459 / 2.561606 = 0.760639.
    assert found.ndcg(5) == pytest.approx(0.760639, abs=1e-6)


def test_function_forms_agree_with_the_hits_object() -> None:
    assert recall_at_k(RANKING, TRUTH, 2, ancestors_of, hops=2) == 1.0
    assert hits_at_k(RANKING, TRUTH, 2, ancestors_of, hops=1) == 0.0
    assert diversity_recall_at_k(RANKING, TRUTH, 3) == 0.5
    assert average_precision_at_k(RANKING, TRUTH, 5) == pytest.approx(0.366667, abs=1e-6)
    assert precision_at_k(RANKING, TRUTH, 5, ancestors_of, hops=2) == pytest.approx(0.8)
    assert reciprocal_rank(RANKING, TRUTH, ancestors_of, hops=2) == 0.5
    assert ndcg_at_k(RANKING, TRUTH) == pytest.approx(0.543771, abs=1e-6)


def test_a_descendant_is_never_credited() -> None:
    # Truth "mammal"; predicting "house cat" is more specific than known: wrong at any hop.
    assert recall_at_k(["Q146"], ["Q7377"], 1, ancestors_of, hops=3) == 0.0
    # ...while the reverse (truth house cat, prediction mammal) is right from hop 1.
    assert recall_at_k(["Q7377"], ["Q146"], 1, ancestors_of, hops=1) == 1.0
    assert recall_at_k(["Q7377"], ["Q146"], 1, ancestors_of, hops=0) == 0.0


def test_one_generic_item_is_one_correct_prediction_covering_both_people() -> None:
    # Two people in the picture; "human" matches each (1 hop): it covers both relevant
    # items but is one correct prediction. Ranking: human, cat, dog, mammal, animal.
    ranking = ["Q5", "Q146", "Q144", "Q7377", "Q729"]
    found = hits(ranking, ["Q76", "Q6279"], ancestors_of, hops=1)
    assert found.correct == (1,) and found.credited == (1, 1)
    # R@1 = 1; DivR@1 = min(2, 1)/1 = 1; DivR@5 = 2/2; AP@5 = (1/1) / max(2, 1) = 0.5; P@5 = 1/5.
    assert found.recall(1) == 1.0
    assert found.diversity_recall(1) == 1.0
    assert found.diversity_recall(5) == 1.0
    assert found.average_precision(5) == 0.5
    assert found.precision(5) == pytest.approx(0.2)


def test_a_specific_item_after_a_generic_one_still_counts() -> None:
    # human covers both people; Biden at rank 2 covers nothing new but is a correct
    # prediction all the same (§4.4: it matches a relevant item). AP@2 = (1/1 + 2/2) / 2 = 1.
    found = hits(["Q5", "Q6279"], ["Q76", "Q6279"], ancestors_of, hops=1)
    assert found.correct == (1, 2) and found.credited == (1, 1)
    assert found.average_precision(2) == 1.0
    assert found.diversity_recall(2) == 1.0


def test_repeated_predictions_score_once() -> None:
    # [cat, cat, dog] vs {cat, dog}: the repeat is wrong. P@2 = 1/2, DivR@2 = 1/2,
    # AP@3 = (1/1 + 2/3) / 2 = 0.833333.
    found = hits(["Q146", "Q146", "Q144"], TRUTH)
    assert found.correct == (1, 3)
    assert found.precision(2) == 0.5
    assert found.diversity_recall(2) == 0.5
    assert found.average_precision(3) == pytest.approx(0.833333, abs=1e-6)


def test_short_rankings_and_empty_ones() -> None:
    # Two predictions, k = 5: precision is over the two given (1/2), recall needs no more.
    found = hits(["Q146", "Q1"], TRUTH)
    assert found.precision(5) == 0.5
    assert found.diversity_recall(5) == 0.5  # 1 / min(5, 2)
    empty = hits([], TRUTH)
    assert (empty.recall(10), empty.precision(10), empty.reciprocal_rank(), empty.ndcg(5)) == (0, 0, 0, 0)


def test_truth_order_and_repeats_do_not_matter() -> None:
    a = hits(RANKING, ["Q146", "Q144"], ancestors_of, hops=2)
    b = hits(RANKING, ["Q144", "Q146", "Q144"], ancestors_of, hops=2)
    assert a == b


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no ground-truth"):
        hits(RANKING, [])
    with pytest.raises(ValueError, match="ancestors_of"):
        hits(RANKING, TRUTH, None, hops=1)


def test_limit_cuts_the_ranking_and_mean_averages() -> None:
    match = RankingMatch(RANKING, TRUTH, limit=3)
    assert match.at(0).correct == (3,) and match.n_predictions == 3
    assert mean([1.0, 0.0, 0.5]) == 0.5 and mean([]) == 0.0


# -- properties over random rankings on a small hierarchy -----------------------------------

SMALL: Dict[str, Dict[str, int]] = {
    "Q1": {"Q2": 1, "Q3": 2, "Q4": 3},
    "Q5": {"Q2": 1, "Q3": 2, "Q4": 3},
    "Q6": {"Q3": 1, "Q4": 2},
    "Q7": {"Q8": 1},
}
ITEMS = [f"Q{i}" for i in range(1, 9)]


def _small(qid: str) -> Mapping[str, int]:
    return SMALL.get(qid, {})


def _covered(ranking: Sequence[str], truth: Sequence[str], hops: int) -> int:
    """Brute force: truth items matched by any prediction within ``hops``."""
    return sum(1 for t in set(truth) if any(p == t or SMALL.get(t, {}).get(p, 99) <= hops for p in ranking))


def _max_matching(ranking: Sequence[str], truth: Sequence[str], hops: int) -> int:
    """Brute force: the largest set of (prediction, truth) pairs using each side once."""
    targets = sorted(set(truth))
    seen: List[str] = []
    for item in ranking:
        if item not in seen:
            seen.append(item)
    best = 0
    for size in range(1, min(len(seen), len(targets)) + 1):
        for chosen in itertools.permutations(targets, size):
            for picks in itertools.combinations(seen, size):
                if all(p == t or SMALL.get(t, {}).get(p, 99) <= hops for p, t in zip(picks, chosen)):
                    best = size
    return best


@settings(max_examples=300, deadline=None)
@given(
    ranking=st.lists(st.sampled_from(ITEMS), max_size=6),
    truth=st.lists(st.sampled_from(ITEMS), min_size=1, max_size=3),
    hops=st.integers(min_value=0, max_value=3),
    k=st.integers(min_value=1, max_value=7),
)
def test_properties(ranking: List[str], truth: List[str], hops: int, k: int) -> None:
    found = hits(ranking, truth, _small, hops)
    # The Table 4 identity: at k = 1 recall, diversity recall and AP coincide.
    assert found.recall(1) == found.diversity_recall(1) == found.average_precision(1)
    # Diversity recall counts the truth items matched by any top-k prediction (capped at
    # min(k, |truth|)); at hop 0 that is the one-to-one matching of before, unchanged.
    n_truth = len(set(truth))
    size = min(k, n_truth)
    assert found.diversity_recall(k) * size == pytest.approx(min(size, _covered(ranking[:k], truth, hops)))
    if hops == 0:
        assert found.diversity_recall(k) * size == pytest.approx(_max_matching(ranking[:k], truth, 0))
    for value in (found.recall(k), found.diversity_recall(k), found.average_precision(k),
                  found.precision(k), found.ndcg(k), found.reciprocal_rank()):
        assert 0.0 <= value <= 1.0 + 1e-12 and not math.isnan(value)
    # More hop credit never lowers a metric that counts correct predictions.
    if hops < 3:
        more = hits(ranking, truth, _small, hops + 1)
        assert more.recall(k) >= found.recall(k)
        assert more.diversity_recall(k) >= found.diversity_recall(k)
        assert more.precision(k) >= found.precision(k)


@settings(max_examples=150, deadline=None)
@given(
    ranking=st.lists(st.sampled_from(ITEMS), max_size=8),
    truth=st.lists(st.sampled_from(ITEMS), min_size=1, max_size=3),
    hops=st.integers(min_value=0, max_value=3),
    ks=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=4, unique=True),
)
def test_one_pass_values_equal_the_single_metrics(ranking: List[str], truth: List[str], hops: int,
                                                  ks: List[int]) -> None:
    # The scorer uses Hits.values() for speed; it must agree with the documented methods.
    found = hits(ranking, truth, _small, hops)
    ks = sorted(ks)
    expected = [found.recall(k) for k in ks] + [found.diversity_recall(k) for k in ks]
    expected += [found.average_precision(k) for k in ks] + [found.precision(k) for k in ks]
    expected += [found.ndcg(k) for k in ks] + [found.reciprocal_rank()]
    assert found.values(ks) == pytest.approx(expected)
