"""The safety rules without a hop ceiling, people without P31, and the rules applied to what is
already queued.

* "Under a class" reaches the whole P31/P279 closure: a disease five hops below *disease* is
  withheld, from a label set built in memory, written, or written before the parents were
  stored (version 1), from any other view walked to the top, and from Wikidata (the local
  test wiki) for items the label set does not keep.
* An item without P31 that has a property only people have (P21, P569, P570, P106) is a person.
* A pair approved before a rule change is refused by the real writer against the local test
  wiki, with its reason in the audit trail, and hidden from the review queries and the API.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, Mapping, Sequence

import numpy as np
import pytest

from tests.review_support import add_file
from tests.safety_support import LABELS
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    TITLES,
    approve,
    clock,
    edit_rows,
    queue,
    site,
    states,
    wiki,
)
from wikivel_bot.config import SafetySettings, Settings
from wikivel_bot.core.classes import SafetyUnchecked, nearest_listed, walk_up
from wikivel_bot.core.evidence import Evidence
from wikivel_bot.core.item_view import FetchedItems
from wikivel_bot.core.ranking import RankingRules, rank_candidates
from wikivel_bot.core.review_rules import ReviewFilter
from wikivel_bot.core.safety import (
    BLOCKED_CLASS,
    PEOPLE,
    SENSITIVE,
    TIED,
    UNCHECKED,
    SafetyRules,
    check_item,
    item_check,
    rules_from,
)
from wikivel_bot.labels import label_set_from_records, load_label_set, write_label_set
from wikivel_bot.labels.artifact import MANIFEST, content_hash, read_artifact
from wikivel_bot.labels.closure import ClassReach, child_table
from wikivel_bot.labels.entities import extract_item, language_chain
from wikivel_bot.types import CandidateState, DecisionAction

DISEASE = "Q12136"
# disease ← infectious ← viral ← respiratory ← coronavirus disease ← (P31) one outbreak: the
# outbreak is five hops below disease, beyond the old ceiling of three. Q910006/Q910007 form a
# cycle (Wikidata has them) under disease. Q920001 is a new item of a person without P31.
DEEP = [
    {"qid": DISEASE, "label": "disease", "description": "abnormal condition"},
    {"qid": "Q910001", "label": "infectious disease", "p279": [DISEASE]},
    {"qid": "Q910002", "label": "viral infectious disease", "p279": ["Q910001"]},
    {"qid": "Q910003", "label": "respiratory viral disease", "p279": ["Q910002"]},
    {"qid": "Q910004", "label": "coronavirus disease", "p279": ["Q910003"]},
    {"qid": "Q910005", "label": "harbour flu outbreak", "p31": ["Q910004"]},
    {"qid": "Q910006", "label": "loop one", "p279": ["Q910007"]},
    {"qid": "Q910007", "label": "loop two", "p279": ["Q910006", DISEASE]},
    {"qid": "Q5", "label": "human"},
    {"qid": "Q920001", "label": "Ada Example", "description": "new item", "properties": ["P569", "P106"]},
    {"qid": "Q726", "label": "horse"},
    {"qid": "Q920002", "label": "Famous Racehorse", "p31": ["Q726"], "properties": ["P569", "P21"]},
    {"qid": "Q8502", "label": "mountain"},
]
DEEP_LABELS = label_set_from_records(DEEP)
DEFAULT = SafetyRules()


def held(labels, qid: str, rules: SafetyRules = DEFAULT, evidence=()):
    return check_item(labels, qid, evidence, rules)


# -- the whole closure ---------------------------------------------------------------------


def test_a_class_five_hops_deep_is_withheld():
    verdict = held(DEEP_LABELS, "Q910005")
    assert verdict.withheld and verdict.rule == SENSITIVE
    assert verdict.reason == f"{SENSITIVE}: under {DISEASE} (disease) (5 hops), and no category, link or identifier of the file names it"
    blocked = held(DEEP_LABELS, "Q910005", SafetyRules(blocked_classes=frozenset({DISEASE})))
    assert blocked.withheld and blocked.rule == BLOCKED_CLASS and "(5 hops)" in blocked.reason
    # The 3-hop table the ranking reads does not reach it; the safety rules do.
    assert DISEASE not in DEEP_LABELS.ancestors("Q910005")
    # Through the ranking: withheld, counted, never suggested; the mountain is.
    rules = RankingRules(top_k=10, min_score=-1.0, safety=DEFAULT)
    ranking = rank_candidates([("Q910005", 0.9), ("Q8502", 0.5)], DEEP_LABELS, rules=rules)
    assert [i.qid for i in ranking.items] == ["Q8502"]
    assert [(w.qid, w.rule) for w in ranking.withheld] == [("Q910005", SENSITIVE)]


def test_cycles_end_and_the_class_itself_stays_suggestible():
    assert DEEP_LABELS.nearest_class("Q910006", frozenset({DISEASE})) == (DISEASE, 2)
    assert DEEP_LABELS.nearest_class("Q910007", frozenset({DISEASE})) == (DISEASE, 1)
    assert not held(DEEP_LABELS, DISEASE).withheld
    assert not held(DEEP_LABELS, "Q8502").withheld


def test_the_reach_keeps_one_entry_per_item_under_the_classes():
    # 0 ← 1 ← 2 ← 3, 4 ← 3 (3 has two parents), 5 alone; a cycle 6 ↔ 7 under 0.
    parents = {1: [0], 2: [1], 3: [2, 4], 6: [7], 7: [6, 0]}
    n = 8
    counts = [len(parents.get(i, ())) for i in range(n)]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    flat = np.asarray([p for i in range(n) for p in sorted(parents.get(i, ()))], dtype=np.int32)
    reach = ClassReach.compute(*child_table(offsets, flat), np.asarray([0, 4]))
    # Not an all-pairs table: one row per node under the group, with its nearest class.
    assert len(reach) == 5
    assert reach.find(3) == (4, 1) and reach.find(2) == (0, 2) and reach.find(6) == (0, 2)
    assert reach.find(5) is None and reach.find(0) is None and reach.find(4) is None


def test_other_views_are_walked_to_the_top_with_a_visited_set():
    graph: Dict[str, Sequence[str]] = {"Qa": ["Qb"], "Qb": ["Qc"], "Qc": ["Qd", "Qa"], "Qd": ["Qe"], "Qe": ["Q9"]}

    class Parents:
        """A view that only knows direct parents (no nearest_class)."""

        labels: Sequence[str] = ()

        def index_of(self, qid: str):
            return None

        def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]:
            return {p: 1 for p in graph.get(qid, ())}

    assert nearest_listed(Parents(), "Qa", frozenset({"Q9"})) == ("Q9", 5)
    found, complete = walk_up(lambda batch: {q: graph.get(q, ()) for q in batch}, "Qa")
    assert complete and found == {"Qb": 1, "Qc": 2, "Qd": 3, "Qe": 4, "Q9": 5}
    cut, complete = walk_up(lambda batch: {q: graph.get(q, ()) for q in batch}, "Qa", limit=2)
    assert not complete and "Q9" not in cut


def test_written_sets_keep_the_parents_and_version_1_sets_still_load(tmp_path: Path):
    path = write_label_set(DEEP_LABELS, tmp_path / "v2")
    loaded = load_label_set(path, verify=True)
    assert loaded.manifest["format_version"] == 2 and loaded.has_parents and loaded.has_person_properties
    assert held(loaded, "Q910005").reason == held(DEEP_LABELS, "Q910005").reason
    assert held(loaded, "Q920001").rule == PEOPLE
    # A version-1 set: no parents, no person properties (its hash was made under version 1).
    old = tmp_path / "v1"
    shutil.copytree(path, old)
    for name in ("parent_offsets", "parents", "person_properties"):
        (old / f"{name}.npy").unlink()
    manifest = json.loads((old / MANIFEST).read_text())
    manifest["format_version"] = 1
    (old / MANIFEST).write_text(json.dumps(manifest))
    data = read_artifact(old)
    manifest["content_hash"] = content_hash(data)
    (old / MANIFEST).write_text(json.dumps(manifest))
    legacy = load_label_set(old, verify=True)
    assert not legacy.has_parents and not legacy.has_person_properties
    # The parents within its 3-hop closure are read instead: complete for a set of records.
    assert held(legacy, "Q910005").reason == held(DEEP_LABELS, "Q910005").reason
    # Person properties unknown: the rule cannot apply (nothing is made up).
    assert legacy.person_properties("Q920001") is None and not held(legacy, "Q920001").withheld


# -- people without P31 ------------------------------------------------------------------


def test_an_item_without_p31_but_with_a_date_of_birth_is_a_person():
    verdict = held(DEEP_LABELS, "Q920001")
    assert verdict.withheld and verdict.rule == PEOPLE
    assert "no instance-of (P31) statement, but P569 (date of birth), P106 (occupation)" in verdict.reason
    named = held(DEEP_LABELS, "Q920001", evidence=[Evidence("link", "[[w:en:Ada Example]]", "Q920001")])
    assert not named.withheld and named.reason.startswith(TIED)
    # With P31 the properties do not matter (animals have birth dates too); without any:
    # not a person; the rule is the people rule (off: suggested).
    assert not held(DEEP_LABELS, "Q920002").withheld
    assert DEEP_LABELS.person_properties("Q8502") == ()
    assert not held(DEEP_LABELS, "Q920001", SafetyRules(withhold_people=False)).withheld


def _claim(pid: str, rank: str = "normal", snaktype: str = "value") -> dict:
    snak = {"snaktype": snaktype, "property": pid}
    if snaktype == "value":
        snak["datavalue"] = {"value": {"time": "+1990-01-01T00:00:00Z"}, "type": "time"}
    return {"mainsnak": snak, "type": "statement", "rank": rank}


def test_the_dump_reader_keeps_the_person_properties_of_items_without_p31():
    chain = language_chain(["en"])
    base = {"type": "item", "id": "Q930001", "labels": {"en": {"language": "en", "value": "Bo"}}}
    born = extract_item({**base, "claims": {"P569": [_claim("P569")], "P570": [_claim("P570", snaktype="somevalue")]}},
                        chain)
    assert born is not None and born.person_properties == 0b0110  # P569 and P570 (date unknown)
    deprecated = extract_item({**base, "claims": {"P569": [_claim("P569", rank="deprecated")]}}, chain)
    assert deprecated is not None and deprecated.person_properties == 0
    typed = extract_item({**base, "claims": {"P569": [_claim("P569")], "P31": [
        {"mainsnak": {"snaktype": "value", "property": "P31",
                      "datavalue": {"value": {"entity-type": "item", "id": "Q726"}}}, "rank": "normal"}]}}, chain)
    assert typed is not None and typed.person_properties == 0
    labels = label_set_from_records([born, typed])
    assert labels.person_properties("Q930001") == ("P569", "P570")
    assert held(labels, "Q930001").rule == PEOPLE


# -- rules applied to what is already queued ------------------------------------------------


def _person_entity(qid: str, label: str) -> dict:
    """A Wikidata item of a person that has a date of birth and no P31 yet."""
    from tests.testwiki.make_fixtures import item_json, statement

    entity = item_json((qid, label, "person without instance-of", "", "", [], [], None))
    entity["claims"]["P569"] = [statement(qid, "P569", {"value": {"time": "+1990-01-01T00:00:00Z", "timezone": 0,
                                                                  "before": 0, "after": 0, "precision": 11,
                                                                  "calendarmodel": "http://www.wikidata.org/entity/Q1985727"},
                                                        "type": "time"}, datatype="time")]
    return entity


def test_a_pair_approved_before_a_rule_change_is_refused_by_the_writer(wiki, site, queue, clock) -> None:  # noqa: F811
    from wikivel_bot.commons.site import open_items
    from wikivel_bot.commons.writer.loop import write_approved
    from wikivel_bot.commons.writer.statement_writer import StatementWriter, safety_check
    from wikivel_bot.config import SiteSettings
    from wikivel_bot.queue.reviews import audit_events, iter_review_files

    wiki.store.add_entity(_person_entity("Q99900123", "Ada Example"))
    # Approved while the shipped rules let them through (a cat, a duck, a named scientist).
    approve(queue, 10004, "Q146", also=["Q144"])  # house cat: in the label set
    approve(queue, 10002, "Q3736439")  # duck: not in the label set, read from the wiki
    approve(queue, 10003, "Q99900123")  # a person without P31, not in the label set
    curie = add_file(queue, 10005, [("Q7186", 0.8, "Marie Curie", "physicist")], title=TITLES[10005],
                     description="Marie Curie in her laboratory",
                     sources=[Evidence("category", "Category:Marie Curie", "Q7186").as_dict()])
    queue.record_decision(10005, "Q7186", DecisionAction.APPROVE, REVIEWER, "cli")
    assert curie > 0
    queued = ReviewFilter(states=(CandidateState.PROPOSED, CandidateState.APPROVED),
                          safety=item_check(rules_from(SafetySettings()), LABELS))
    before = {f.page_id: {c.qid for c in f.candidates} for f in iter_review_files(queue, queued)}
    assert before[10004] == {"Q146", "Q144"}
    assert before[10005] == {"Q7186"}  # a person the file's evidence ties it to stays in review

    # The operator blocks animals. The check the writer gets is the rules as they are now.
    now = SafetySettings(blocked_classes=("Q729",))
    items = open_items(SiteSettings(), site)
    writer = StatementWriter(site, "b-20240502090000-abcd", lambda q: {}, tags=("wikivel-bot",),
                             safety=safety_check(now, LABELS, items))
    counters = write_approved(queue, writer, batch_size=5, worker="test", clock=clock)

    assert wiki.write_count() == 1  # only Marie Curie, whose category the candidate row stored
    assert states(queue)[(10005, "Q7186")] == "written"
    refused = {(r["page_id"], r["qid"]): r["error"] for r in edit_rows(queue) if r["outcome"] == "skipped"}
    assert refused == {
        (10004, "Q146"): "withheld by the safety rules: blocked class: under Q729 (animal) (1 hop)",
        (10002, "Q3736439"): "withheld by the safety rules: blocked class: under Q729 (animal) (2 hops)",
        (10003, "Q99900123"): ("withheld by the safety rules: named person: no instance-of (P31) statement, "
                             "but P569 (date of birth), which only people have, and no category, link or "
                             "identifier of the file names it"),
    }
    assert {states(queue)[pair] for pair in refused} == {"write_skipped"}
    assert counters.skipped == {"withheld by the safety rules": 3}
    trail = [e for e in audit_events(queue, page_id=10002) if e.kind == "edit"]
    assert [(e.action, e.error.split(":")[0]) for e in trail] == [("skipped", "withheld by the safety rules")]

    # The review hides the queued pair whose item the new rules withhold: the dog is an animal.
    after = ReviewFilter(states=(CandidateState.PROPOSED,), safety=item_check(rules_from(now), LABELS))
    assert 10004 not in {f.page_id for f in iter_review_files(queue, after)}
    assert 10004 in {f.page_id for f in iter_review_files(queue, ReviewFilter())}  # no re-check: shown


def test_items_read_from_wikidata_are_walked_beyond_three_hops_with_a_bound(wiki, site) -> None:  # noqa: F811
    from wikivel_bot.commons.site import open_items
    from wikivel_bot.config import SiteSettings

    items = open_items(SiteSettings(), site)
    # house cat → (P31) organisms known by a common name → organism → physical object → object
    assert FetchedItems(items.get).nearest_class("Q146", frozenset({"Q488383"})) == ("Q488383", 4)
    check = item_check(SafetyRules(sensitive_classes=frozenset({"Q488383"})), None,
                       lambda qid: FetchedItems(items.get))
    assert check("Q146", ()).reason.startswith(f"{SENSITIVE}: under Q488383 (object) (4 hops)")
    # More classes above than the bound allows: withheld as unchecked, never written unchecked.
    bounded = item_check(DEFAULT, None, lambda qid: FetchedItems(items.get, limit=2))
    verdict = bounded("Q146", ())
    assert verdict.withheld and verdict.rule == UNCHECKED and "more than 2 classes above it" in verdict.reason
    with pytest.raises(SafetyUnchecked):
        FetchedItems(items.get, limit=2).nearest_class("Q146", frozenset({"Q5"}))


def test_the_web_api_hides_queued_pairs_the_current_rules_withhold(tmp_path: Path) -> None:
    from tests.db_support import open_store
    from tests.web_support import SECRETS
    from wikivel_bot.queue import migrate
    from wikivel_bot.web.app import create_app

    store = open_store(f"sqlite:///{tmp_path / 'queue.sqlite'}")
    migrate.upgrade(store.engine)
    add_file(store, 501, [("Q146", 0.9, "house cat", ""), ("Q144", 0.8, "dog", ""), ("Q8502", 0.7, "mountain", "")])
    add_file(store, 502, [("Q144", 0.9, "dog", "")])
    store.record_decision(502, "Q144", DecisionAction.APPROVE, REVIEWER, "cli")

    def answers(safety: SafetySettings) -> Dict[str, object]:
        client = create_app(Settings(safety=safety), store, secrets=SECRETS, items=None, labels=LABELS).test_client()
        queue_page = client.get("/api/queue", query_string={"state": "all"}).json
        return {"queue": {f["file"]: [c["item"] for c in f["candidates"]] for f in queue_page["files"]},
                "M501": client.get("/api/files/M501").json, "M502": client.get("/api/files/M502").status_code}

    shown = answers(SafetySettings())
    assert shown["queue"] == {"M501": ["Q146", "Q144", "Q8502"], "M502": ["Q144"]}
    hidden = answers(SafetySettings(blocked_classes=("Q729",)))
    assert hidden["queue"] == {"M501": ["Q8502"]}  # the mountain is no animal
    assert "Q146" not in json.dumps(hidden["M501"]) and "Q144" not in json.dumps(hidden["M501"])
    assert hidden["M502"] == 404  # its only pair is withheld now
    store.close()
