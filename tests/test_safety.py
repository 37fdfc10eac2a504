"""Suggestion safety (core/safety.py) through the ranking, on real label sets.

The fixture set holds specific people (instances of human), human and two of its subclasses,
a painting, animals, a religion with items 1-4 hops under it, an ethnic group, and a blocked
class. Ranking sees every item (top-k larger than the set) with random scores, so nothing but
the rules keeps an item out.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.safety_support import LABELS, PEOPLE_QIDS
from wikivel_bot.core.evidence import Evidence
from wikivel_bot.core.ranking import RankingRules, rank_candidates
from wikivel_bot.core.safety import (
    BLOCKED_CLASS,
    PEOPLE,
    SENSITIVE,
    TIED,
    SafetyRules,
    check_item,
    coverage_note,
)
from wikivel_bot.labels import load_label_set, write_label_set

DEFAULT = SafetyRules(blocked_classes=frozenset({"Q800001"}))


def random_scores(seed: int):
    rng = random.Random(seed)
    return [(qid, rng.random()) for qid in LABELS.qids]


def rank(evidence=(), safety=DEFAULT, seed: int = 0):
    # Margin 1.0: the specific item always wins over its ancestor (ancestors may be dropped).
    rules = RankingRules(top_k=len(LABELS.qids) + 5, ancestor_margin=1.0, safety=safety)
    return rank_candidates(random_scores(seed), LABELS, rules=rules, evidence=evidence)


def suggested(ranking):
    return {item.qid for item in ranking.items}


def withheld(ranking):
    return {item.qid: item for item in ranking.withheld}


@pytest.mark.parametrize("seed", range(8))
def test_no_person_is_suggested_from_the_image_alone(seed):
    ranking = rank(seed=seed)
    assert not suggested(ranking) & PEOPLE_QIDS
    held = withheld(ranking)
    assert PEOPLE_QIDS <= set(held)
    for qid in PEOPLE_QIDS:
        assert held[qid].rule == PEOPLE
        assert "instance of Q5 (human)" in held[qid].reason and "no category, link or identifier" in held[qid].reason
    # Human and its subclasses are classes, not people; the painting and the animals stay.
    all_ranked = suggested(ranking) | {d.qid for d in ranking.dropped if not d.rule}
    assert {"Q5", "Q467", "Q7569", "Q45585", "Q146", "Q144"} <= all_ranked
    assert ranking.withheld_by_rule()[PEOPLE] == 3


@pytest.mark.parametrize("seed", range(4))
def test_a_person_the_files_evidence_names_is_suggested_with_the_reason(seed):
    # Evidence for Obama; a category about someone else names no one else.
    evidence = [Evidence("category", "Category:Barack Obama", "Q76"),
                Evidence("category", "Category:Dogs", "Q144")]
    ranking = rank(evidence, seed=seed)
    by_qid = {item.qid: item for item in ranking.items}
    assert "Q76" in by_qid
    assert by_qid["Q76"].notes[0].startswith(f"{TIED}: Category:Barack Obama → Q76 (named person")
    # Only the named one: the others stay withheld.
    assert not {"Q5582", "Q7186"} & set(by_qid)
    assert {"Q5582", "Q7186"} <= set(withheld(ranking))


def test_links_and_identifiers_tie_a_person_but_a_category_label_does_not():
    for kind, source in (("link", "[[w:en:Vincent van Gogh]]"), ("identifier", "{{Artist id|42}}")):
        verdict = check_item(LABELS, "Q5582", [Evidence(kind, source, "Q5582")], DEFAULT)
        assert not verdict.withheld and verdict.reason.startswith(f"{TIED}: {source} → Q5582")
    # A category merely named like her is weaker evidence: it never unlocks a person.
    weak = check_item(LABELS, "Q7186", [Evidence("category label", "Category:Marie Curie", "Q7186")], DEFAULT)
    assert weak.withheld and weak.rule == PEOPLE and "merely named like it" in weak.reason
    # Stored dicts (a candidate row's sources) are read the same way.
    stored = [Evidence("category", "Category:Marie Curie", "Q7186").as_dict()]
    assert not check_item(LABELS, "Q7186", stored, DEFAULT).withheld


@pytest.mark.parametrize("qid, hops", [("Q5043", 1), ("Q1841", 2), ("Q9592", 3), ("Q900004", 4)])
def test_sensitive_classes_match_through_the_whole_closure(qid, hops):
    verdict = check_item(LABELS, qid, (), DEFAULT)
    assert verdict.withheld and verdict.rule == SENSITIVE
    assert f"under Q9174 (religion) ({hops} hop" in verdict.reason


def test_sensitive_class_rule_reach_and_exceptions():
    # The class itself stays suggestible (like human); what is under it is withheld at any depth.
    assert check_item(LABELS, "Q9174", (), DEFAULT).rule == ""
    # Ethnic groups are on the shipped list; tied to the file by evidence, the item is allowed,
    # named in its file name only, it is not.
    assert check_item(LABELS, "Q190168", (), DEFAULT).rule == SENSITIVE
    tied = check_item(LABELS, "Q190168", [Evidence("category", "Category:Yoruba people", "Q190168")], DEFAULT)
    assert not tied.withheld and tied.reason.startswith(TIED)
    # An empty list switches the rule off, and says so.
    off = SafetyRules(sensitive_classes=frozenset())
    assert check_item(LABELS, "Q5043", (), off) == check_item(LABELS, "Q146", (), off)
    assert any("sensitive_classes" in note for note in off.off_notes())


def test_blocked_classes_are_never_suggested_even_with_evidence():
    ranking = rank([Evidence("category", "Category:Blocked thing", "Q800001"),
                    Evidence("link", "[[w:en:Blocked child]]", "Q800002")])
    held = withheld(ranking)
    assert held["Q800001"].rule == BLOCKED_CLASS and held["Q800002"].rule == BLOCKED_CLASS
    assert "under Q800001 (blocked thing) (1 hop)" in held["Q800002"].reason


def test_an_operator_listed_class_makes_its_instances_people():
    rules = SafetyRules(person_classes=frozenset({"Q5", "Q3305213"}))
    verdict = check_item(LABELS, "Q45585", (), rules)
    assert verdict.withheld and verdict.rule == PEOPLE and "instance of Q3305213 (painting)" in verdict.reason


def test_switching_the_people_rule_off_suggests_people_and_says_so():
    off = SafetyRules(withhold_people=False)
    ranking = rank(safety=off)
    assert PEOPLE_QIDS <= suggested(ranking)
    assert off.off_notes() == ("safety.withhold_people = false: named people are suggested from the image alone",)
    assert DEFAULT.off_notes() == ()


def test_without_safety_rules_nothing_is_withheld():
    ranking = rank(safety=None)
    assert PEOPLE_QIDS <= suggested(ranking) and ranking.withheld == ()


def test_withheld_counts_only_what_would_have_been_suggested():
    scores = [("Q146", 0.9), ("Q76", 0.8), ("Q144", 0.7), ("Q7186", 0.1)]
    rules = RankingRules(top_k=2, safety=DEFAULT)
    ranking = rank_candidates(scores, LABELS, rules=rules)
    assert [i.qid for i in ranking.items] == ["Q146", "Q144"]
    # Obama outranked the dog: withheld. Curie scored below the last suggestion: only dropped.
    assert [w.qid for w in ranking.withheld] == ["Q76"]
    assert ranking.dropped_reason("Q7186").startswith(PEOPLE)


def test_a_person_dropped_for_another_reason_still_carries_the_safety_rule():
    """Below the threshold, rejected or blocklisted: a person's drop names the rule, so the
    outputs that list ordinary drops (`suggest --json`) never name a withheld person."""
    scores = [("Q146", 0.9), ("Q76", 0.8), ("Q7186", 0.01), ("Q144", 0.02)]
    rules = RankingRules(top_k=5, min_score=0.05, safety=DEFAULT)
    ranking = rank_candidates(scores, LABELS, rules=rules, rejected={"Q76"})
    assert [i.qid for i in ranking.items] == ["Q146"]
    drops = {d.qid: d for d in ranking.dropped}
    assert drops["Q7186"].rule == PEOPLE and drops["Q76"].rule == PEOPLE
    assert drops["Q7186"].reason.startswith("score 0.010 below the threshold 0.050; ") and PEOPLE in drops["Q7186"].reason
    assert drops["Q76"].reason.startswith("rejected by a reviewer for this file; ")
    # An animal below the threshold stays an ordinary drop; neither person counts as withheld.
    assert drops["Q144"].rule == "" and ranking.withheld == ()
    ordinary = [d.qid for d in ranking.dropped if not d.rule]   # what `suggest --json` lists
    assert ordinary == ["Q144"]


def test_a_withheld_person_does_not_suppress_its_ancestor():
    scores = [("Q76", 0.9), ("Q5", 0.85)]
    ranking = rank_candidates(scores, LABELS, rules=RankingRules(safety=DEFAULT))
    assert [i.qid for i in ranking.items] == ["Q5"] and ranking.items[0].notes == ()


def test_the_artifact_keeps_instance_of_and_old_sets_fall_back_with_a_note(tmp_path: Path):
    path = write_label_set(LABELS, tmp_path / "set")
    loaded = load_label_set(path, verify=True)
    assert loaded.has_instance_of and loaded.instance_of("Q76") == ["Q5"] and loaded.instance_of("Q467") == []
    assert loaded.aliases_of("Q5582") == ["Van Gogh"]
    assert coverage_note(loaded) == ""
    # A set written before instance-of data existed: the same files minus the two arrays.
    old = tmp_path / "old"
    shutil.copytree(path, old)
    (old / "instance_offsets.npy").unlink()
    (old / "instance_of.npy").unlink()
    legacy = load_label_set(old)
    assert not legacy.has_instance_of and legacy.instance_of("Q76") is None
    assert "no instance-of (P31) data" in coverage_note(legacy)
    # People are still withheld; subclasses of human are now withheld too (the safe side).
    assert check_item(legacy, "Q76", (), DEFAULT).withheld
    assert check_item(legacy, "Q467", (), DEFAULT).withheld
    assert not check_item(loaded, "Q467", (), DEFAULT).withheld


def test_a_set_built_from_the_dumps_stores_instance_of_and_info_says_so(tmp_path: Path):
    from click.testing import CliRunner

    from tests.fixtures.dumps import make_fixtures
    from wikivel_bot.cli import main
    from wikivel_bot.labels.build import build_from_dumps

    dumps = Path(__file__).parent / "fixtures" / "dumps"
    built = build_from_dumps(tmp_path / "set", wikidata_dump=dumps / f"{make_fixtures.WIKIDATA}.bz2",
                             mediainfo_dump=dumps / f"{make_fixtures.MEDIAINFO}.bz2", min_freq=0)
    labels = load_label_set(built.path, verify=True)
    assert labels.has_instance_of
    # Marie Curie's deprecated P31 (house cat) is skipped like every deprecated statement.
    assert labels.instance_of("Q7186") == ["Q5"] and labels.instance_of("Q937") == ["Q5"]
    assert labels.instance_of("Q5") == []  # human is a subclass (P279) of an ancestor, no P31 here
    assert check_item(labels, "Q937", (), DEFAULT).withheld
    assert not check_item(labels, "Q5", (), DEFAULT).withheld
    info = CliRunner().invoke(main, ["labels", "info", str(built.path)])
    assert "P31:       stored (instance of)" in info.output
