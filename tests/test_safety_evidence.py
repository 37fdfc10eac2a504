"""Safety on Commons' own evidence, not substrings.

A named person (and a sensitive item) is suggested only when the file's own evidence ties the
file to *that item* (``core.evidence.ties_file_to``: a linked category, a description link,
an identifier); a word of its label or alias in the file name, the description or a category
no longer does. The files below all name a person by a word — the singer Seal on a harbor
seal, Madonna on a Madonna and Child, Prince on Prince William, Barack Obama on Michelle
Obama and on "Photographs by Barack Obama" — and each must stay withheld, through the ranking
rules, ``link_files`` with a real (tiny, random-weight) linker, the review's re-check and the
writer's re-check, which read the evidence stored on the candidate row.
"""

from __future__ import annotations

from typing import Sequence

import pytest

from wikivel_bot.core.evidence import Evidence, category_target
from wikivel_bot.core.ranking import RankingRules, rank_candidates
from wikivel_bot.core.review_rules import ReviewCandidate, ReviewFile, without_withheld
from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.core.safety import PEOPLE, TIED, SafetyRules, item_check
from wikivel_bot.labels import label_set_from_records
from wikivel_bot.types import CandidateState

# People whose names are also common words or other people's names (ids for these tests).
RECORDS = [
    {"qid": "Q5", "label": "human", "description": "any member of Homo sapiens"},
    {"qid": "Q729", "label": "animal", "description": "kingdom of multicellular organisms"},
    {"qid": "Q701001", "label": "Seal", "description": "British singer-songwriter", "p31": ["Q5"]},
    {"qid": "Q701002", "label": "harbor seal", "description": "species of seal", "p279": ["Q729"],
     "aliases": ["common seal"]},
    {"qid": "Q1744", "label": "Madonna", "description": "American singer", "p31": ["Q5"]},
    {"qid": "Q701003", "label": "Madonna and Child", "description": "painting by Giovanni Bellini"},
    {"qid": "Q7542", "label": "Prince", "description": "American musician", "p31": ["Q5"]},
    {"qid": "Q36812", "label": "Prince William", "description": "heir apparent to the British throne",
     "p31": ["Q5"], "aliases": ["William"]},
    {"qid": "Q76", "label": "Barack Obama", "description": "44th president of the United States",
     "p31": ["Q5"], "aliases": ["Obama"]},
    {"qid": "Q13133", "label": "Michelle Obama", "description": "First Lady of the United States",
     "p31": ["Q5"], "aliases": ["Obama"]},
    {"qid": "Q3305213", "label": "painting", "description": "artwork"},
]
LABELS = label_set_from_records(RECORDS)
RULES = SafetyRules()
PEOPLE_QIDS = {"Q701001", "Q1744", "Q7542", "Q36812", "Q76", "Q13133"}

# (file title, description, categories, the file's resolved evidence, the person a word of
# it names but who must stay withheld)
CASES = [
    ("File:Harbor seal on the rocks.jpg", "A seal basking", ("Harbor seals",),
     (Evidence("category", "Category:Harbor seals", "Q701002"),), "Q701001"),
    ("File:Madonna and Child (Bellini).jpg", "Madonna and Child by Bellini", ("Madonna and Child by Giovanni Bellini",),
     (Evidence("link", "[[w:en:Madonna and Child (Bellini)]]", "Q701003"),), "Q1744"),
    ("File:Prince William at Wimbledon.jpg", "Prince William watching tennis", ("Prince William",),
     (Evidence("category", "Category:Prince William", "Q36812"),), "Q7542"),
    ("File:Michelle Obama in 2013.jpg", "Michelle Obama, official portrait", ("Michelle Obama",),
     (Evidence("category", "Category:Michelle Obama", "Q13133"),), "Q76"),
    # Its category item is a Wikimedia category whose main topic is not Obama (here: none),
    # so the resolver names no item for it (category_target); the file's name and the
    # category's words name him, which is not evidence.
    ("File:Chicago skyline from the plane.jpg", "Barack Obama's view of Chicago", ("Photographs by Barack Obama",),
     (), "Q76"),
]


def rank(evidence: Sequence[Evidence]):
    """Every item of the set scored (the scores do not matter: only the rules keep people out)."""
    scored = [(qid, 0.5 - 0.01 * n) for n, qid in enumerate(LABELS.qids)]
    rules = RankingRules(top_k=len(LABELS.qids), ancestor_margin=1.0, safety=RULES)
    return rank_candidates(scored, LABELS, rules=rules, evidence=evidence)


def test_photographs_by_a_person_resolve_to_no_item_when_their_category_item_has_no_topic():
    # What the resolver does with "Category:Photographs by Barack Obama" linked to a category
    # item without P301: nothing to follow, no evidence (so the CASES above hold no evidence).
    assert category_target("Q990002", ["Q4167836"], []) is None


@pytest.mark.parametrize("title, description, categories, evidence, person", CASES,
                         ids=[case[0] for case in CASES])
def test_a_word_of_a_name_does_not_unlock_a_person(title, description, categories, evidence, person):
    ranking = rank(evidence)
    suggested = {item.qid for item in ranking.items}
    held = {w.qid: w for w in ranking.withheld}
    assert person not in suggested and held[person].rule == PEOPLE
    assert "no category, link or identifier of the file names it" in held[person].reason
    # Only the person the evidence names (Prince William, Michelle Obama) is suggested.
    tied = {ev.qid for ev in evidence} & PEOPLE_QIDS
    assert suggested & PEOPLE_QIDS == tied
    for item in ranking.items:
        if item.qid in tied:
            assert item.notes[0].startswith(f"{TIED}: Category:")


def test_obama_is_suggested_when_his_category_ties_the_file_to_him():
    ranking = rank([Evidence("category", "Category:Barack Obama", "Q76")])
    (obama,) = [item for item in ranking.items if item.qid == "Q76"]
    assert obama.notes[0] == f"{TIED}: Category:Barack Obama → Q76 ({PEOPLE}, instance of Q5 (human))"
    # Michelle shares the alias "Obama": still withheld.
    assert "Q13133" in {w.qid for w in ranking.withheld}


def test_a_category_merely_named_like_obama_does_not_tie_him():
    ranking = rank([Evidence("category label", "Category:Barack Obama", "Q76")])
    assert "Q76" not in {item.qid for item in ranking.items}
    assert "merely named like it" in {w.qid: w for w in ranking.withheld}["Q76"].reason


def review_file(sources: Sequence[Evidence]) -> ReviewFile:
    """A queued file whose candidate rows stored ``sources`` (each row: those naming its item)."""
    def candidate(n: int, qid: str) -> ReviewCandidate:
        stored = {"sources": [ev.as_dict() for ev in sources if ev.qid == qid]}
        return ReviewCandidate(candidate_id=n, qid=qid, score=0.5, rank=n, linker="zero-shot",
                               state=CandidateState.APPROVED, evidence=shown_evidence(stored))

    return ReviewFile(file_id=1, page_id=1, title="File:Michelle Obama in 2013.jpg",
                      description="Barack and Michelle Obama", categories=("Michelle Obama", "Barack Obama"),
                      candidates=(candidate(1, "Q76"), candidate(2, "Q13133"), candidate(3, "Q5")))


def test_the_review_and_the_writer_recheck_with_the_evidence_stored_on_the_row():
    check = item_check(RULES, LABELS)
    # The writer's re-check: the approved pair's stored sources (ApprovedEdit.evidence).
    assert check("Q76", []).withheld
    assert check("Q76", [Evidence("category label", "Category:Barack Obama", "Q76").as_dict()]).withheld
    assert not check("Q76", [Evidence("link", "[[w:en:Barack Obama]]", "Q76").as_dict()]).withheld
    # Evidence for another item never unlocks this one.
    assert check("Q76", [Evidence("category", "Category:Michelle Obama", "Q13133").as_dict()]).withheld
    # The review's re-check: Michelle's row stored her category; Barack's row stored nothing
    # (the file's text names him, which is not evidence); human is no person.
    kept = without_withheld(review_file([Evidence("category", "Category:Michelle Obama", "Q13133")]), check)
    assert [c.qid for c in kept.candidates] == ["Q13133", "Q5"]


def test_approved_pairs_carry_their_rows_evidence_to_the_writer(tmp_path):
    """``claim_approved`` fills ``ApprovedEdit.evidence`` from the candidate row, which the
    writer's re-check reads (the whole writer path against the test wiki:
    tests/test_safety_closure.py, where only the person whose row stored evidence is written)."""
    from tests.review_support import add_file
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.store import Store
    from wikivel_bot.types import DecisionAction

    engine = create_engine_for(f"sqlite:///{tmp_path / 'queue.sqlite'}")
    migrate.upgrade(engine)
    store = Store(engine)
    try:
        michelle = Evidence("category", "Category:Michelle Obama", "Q13133").as_dict()
        add_file(store, 7, [("Q76", 0.9, "Barack Obama", ""), ("Q13133", 0.8, "Michelle Obama", "")],
                 title="File:Michelle Obama in 2013.jpg", description="Barack and Michelle Obama",
                 categories=("Barack Obama", "Michelle Obama"), sources=[michelle])
        for qid in ("Q76", "Q13133"):
            store.record_decision(7, qid, DecisionAction.APPROVE, "Ann", "cli")
        edits = {e.qid: e for e in store.claim_approved(10, "writer")}
        assert edits["Q76"].evidence == () and edits["Q13133"].evidence == (michelle,)
        check = item_check(RULES, LABELS)
        assert check("Q76", edits["Q76"].evidence).withheld
        assert not check("Q13133", edits["Q13133"].evidence).withheld
    finally:
        store.close()
