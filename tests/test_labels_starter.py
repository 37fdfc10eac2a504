"""The starter label set shipped with the package."""

from __future__ import annotations

import pytest

from wikivel_bot.labels import default_label_set, load_label_set, starter_label_set_path
from wikivel_bot.labels.starter import build_starter, starter_records

WELL_KNOWN = {
    "Q5": "human", "Q146": "house cat", "Q144": "dog", "Q729": "animal", "Q16521": "taxon",
    "Q3305213": "painting", "Q16970": "church building", "Q12280": "bridge", "Q4022": "river",
    "Q41176": "building", "Q1420": "motor car", "Q35120": "entity",
}


@pytest.fixture(scope="module")
def starter():  # type: ignore[no-untyped-def]
    return load_label_set(starter_label_set_path(), verify=True)


def test_shipped_set_is_what_the_source_list_gives(starter) -> None:  # type: ignore[no-untyped-def]
    assert build_starter().content_hash == starter.content_hash
    assert len(starter) == len(starter_records()) >= 300


def test_default_is_the_starter(starter, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert default_label_set().content_hash == starter.content_hash
    assert default_label_set("").path == starter_label_set_path()


def test_well_known_items(starter) -> None:  # type: ignore[no-untyped-def]
    for qid, label in WELL_KNOWN.items():
        index = starter.index_of(qid)
        assert index is not None, qid
        assert starter.labels[index] == label
        assert starter.descriptions[index], qid


def test_hierarchy_and_super_categories(starter) -> None:  # type: ignore[no-untyped-def]
    assert starter.is_ancestor("Q729", "Q146") and starter.is_ancestor("Q5", "Q937", max_hops=1)
    assert starter.is_ancestor("Q41176", "Q16970")
    assert starter.hops("Q1420", "Q42889") == 2
    expected = {"Q146": "animal", "Q937": "human", "Q2981": "building", "Q12418": "artwork",
                "Q1420": "vehicle", "Q4022": "landscape", "Q90": "settlement", "Q12280": "structure",
                "Q10884": "plant"}
    assert {q: starter.super_category(q) for q in expected} == expected
    by_category = starter.manifest["super_categories"]
    for name in ("human", "animal", "plant", "building", "artwork", "vehicle", "landscape"):
        assert by_category.get(name, 0) >= 5, name


def test_every_link_target_of_a_kept_item_is_known(starter) -> None:  # type: ignore[no-untyped-def]
    targets = {q for r in starter_records() for q in r["p31"] + r["p279"]}
    kept = set(starter.qids)
    # Every link stays inside the list, so ancestors have labels to show.
    assert targets - kept == set()
