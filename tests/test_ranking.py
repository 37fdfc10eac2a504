"""The hierarchy-aware ranking rules (core/ranking.py) on a fixture label set."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.linker_support import animals_label_set
from wikivel_bot.core.ranking import RankingRules, depicted_exclusions, rank_candidates

LABELS = animals_label_set()


def qids(ranking):
    return [item.qid for item in ranking.items]


def test_orders_by_score_and_numbers_ranks_from_one():
    ranking = rank_candidates([("Q89", 0.2), ("Q22698", 0.5), ("Q8502", 0.3)], LABELS)
    assert qids(ranking) == ["Q22698", "Q8502", "Q89"]
    assert [i.rank for i in ranking.items] == [1, 2, 3]
    park = ranking.items[0]
    assert (park.label, park.description) == ("park", "area of open space for recreational use")


def test_already_depicted_item_and_its_ancestors_are_never_proposed():
    scored = [("Q146", 0.9), ("Q622852", 0.8), ("Q729", 0.7), ("Q144", 0.6), ("Q22698", 0.5)]
    ranking = rank_candidates(scored, LABELS, depicted=["Q146"])
    # cat itself, domestic animal (1 hop) and animal (2 hops) are gone; dog is a sibling.
    assert qids(ranking) == ["Q144", "Q22698"]
    assert ranking.dropped_reason("Q146") == "already depicted"
    assert ranking.dropped_reason("Q622852") == "ancestor of depicted Q146 (house cat)"
    assert ranking.dropped_reason("Q729") == "ancestor of depicted Q146 (house cat)"


def test_depicted_exclusions_respect_max_hops():
    assert set(depicted_exclusions(["Q146"], LABELS, max_hops=1)) == {"Q146", "Q622852"}
    assert set(depicted_exclusions(["Q146"], LABELS, max_hops=3)) == {"Q146", "Q622852", "Q729"}


def test_rejected_pairs_and_blocklist_are_dropped_with_reasons():
    rules = RankingRules(blocklist=frozenset({"Q5"}))
    ranking = rank_candidates([("Q5", 0.9), ("Q89", 0.8), ("Q22698", 0.7)], LABELS, rejected={"Q89"}, rules=rules)
    assert qids(ranking) == ["Q22698"]
    assert "blocklist" in ranking.dropped_reason("Q5")
    assert "rejected" in ranking.dropped_reason("Q89")


def test_global_and_per_item_thresholds():
    rules = RankingRules(min_score=0.3, item_min_score={"Q22698": 0.6, "Q89": 0.1})
    ranking = rank_candidates([("Q22698", 0.5), ("Q89", 0.2), ("Q8502", 0.25), ("Q3947", 0.35)], LABELS, rules=rules)
    # park is above the global threshold but below its own; apple below global but above its own.
    assert qids(ranking) == ["Q3947", "Q89"]
    assert "item's threshold" in ranking.dropped_reason("Q22698")
    assert "below the threshold 0.300" in ranking.dropped_reason("Q8502")


def test_specific_item_wins_over_a_close_ancestor():
    ranking = rank_candidates([("Q8502", 0.52), ("Q8072", 0.50)], LABELS, rules=RankingRules(ancestor_margin=0.05))
    assert qids(ranking) == ["Q8072"]
    assert ranking.items[0].notes == ("ancestor Q8502 (mountain) suppressed",)
    assert ranking.dropped_reason("Q8502") == "ancestor of Q8072 (volcano), which is more specific"


def test_ancestor_that_scores_clearly_higher_wins():
    ranking = rank_candidates([("Q8502", 0.60), ("Q8072", 0.50)], LABELS, rules=RankingRules(ancestor_margin=0.05))
    assert qids(ranking) == ["Q8502"]
    assert ranking.items[0].notes == ("kept over more specific Q8072 (volcano)",)
    assert "scores clearly higher" in ranking.dropped_reason("Q8072")


def test_lower_scoring_ancestor_is_suppressed_and_chain_collapses_to_the_specific_item():
    scored = [("Q146", 0.50), ("Q622852", 0.49), ("Q729", 0.48), ("Q144", 0.30)]
    ranking = rank_candidates(scored, LABELS)
    assert qids(ranking) == ["Q146", "Q144"]
    notes = ranking.items[0].notes
    assert "ancestor Q622852 (domestic animal) suppressed" in notes
    assert "ancestor Q729 (animal) suppressed" in notes


def test_specific_item_arriving_later_removes_a_kept_ancestor_and_inherits_its_notes():
    # animal is first; domestic animal (close) replaces it; house cat (close) replaces that.
    scored = [("Q729", 0.50), ("Q622852", 0.48), ("Q146", 0.47)]
    ranking = rank_candidates(scored, LABELS, rules=RankingRules(ancestor_margin=0.05))
    assert qids(ranking) == ["Q146"]
    assert set(ranking.items[0].notes) == {
        "ancestor Q622852 (domestic animal) suppressed", "ancestor Q729 (animal) suppressed",
    }


def test_top_k_truncates_after_the_rules():
    scored = [(q, 1.0 - i / 10) for i, q in enumerate(["Q22698", "Q89", "Q5", "Q3947", "Q8502"])]
    ranking = rank_candidates(scored, LABELS, rejected={"Q22698"}, rules=RankingRules(top_k=2))
    assert qids(ranking) == ["Q89", "Q5"]


def test_duplicates_keep_the_best_score_and_unknown_items_have_empty_labels():
    ranking = rank_candidates([("Q89", 0.1), ("Q89", 0.4), ("Q999999", 0.3)], LABELS)
    assert [(i.qid, i.score) for i in ranking.items] == [("Q89", 0.4), ("Q999999", 0.3)]
    assert ranking.items[1].label == ""


@pytest.mark.parametrize("margin", [0.0, 0.05, 0.2])
def test_no_kept_item_is_an_ancestor_of_another(margin):
    scored = [("Q729", 0.5), ("Q622852", 0.45), ("Q146", 0.44), ("Q144", 0.2), ("Q5", 0.41), ("Q7368", 0.46)]
    ranking = rank_candidates(scored, LABELS, rules=RankingRules(ancestor_margin=margin))
    kept = qids(ranking)
    for a in kept:
        assert not set(LABELS.ancestors(a)) & set(kept)


def test_core_ranking_imports_only_stdlib_and_core():
    tree = ast.parse((Path(__file__).parents[1] / "wikivel_bot/core/ranking.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    allowed_prefixes = ("wikivel_bot.core", "wikivel_bot.types", "__future__", "dataclasses", "typing")
    assert all(m.startswith(allowed_prefixes) for m in modules), modules
