"""The LabelSet API other components use, the in-memory builder, and the artifact on disk."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.errors import LabelSetError
from wikivel_bot.labels import LabelSet, label_set_from_records, load_label_set, write_label_set

RECORDS = [
    {"qid": "Q729", "label": "animal", "description": "kingdom of multicellular eukaryotic organisms"},
    {"qid": "Q622852", "label": "domesticated animal", "p279": ["Q729"]},
    {"qid": "Q39201", "label": "pet", "p279": ["Q622852"]},
    {"qid": "Q146", "label": "house cat", "description": "domesticated feline", "p279": ["Q39201"],
     "image": "Cat03.jpg", "aliases": ["cat"]},
    {"qid": "Q144", "label": "dog", "p279": ["Q39201"]},
    {"qid": "Q53662", "label": "Laika", "p31": ["Q144"]},
    {"qid": "Q215627", "label": "person"},
    {"qid": "Q5", "label": "human", "p279": ["Q215627"]},
    {"qid": "Q937", "label": "Albert Einstein", "p31": ["Q5"]},
]


@pytest.fixture(scope="module")
def animals() -> LabelSet:
    return label_set_from_records(RECORDS)


def test_implements_the_view(animals: LabelSet) -> None:
    view: LabelSetView = animals
    for name in ("content_hash", "qids", "labels", "descriptions", "images", "index_of", "ancestors", "frequency"):
        assert hasattr(view, name), name
    assert animals.qids == ["Q5", "Q144", "Q146", "Q729", "Q937", "Q39201", "Q53662", "Q215627", "Q622852"]
    i = animals.index_of("Q146")
    assert i is not None
    assert (animals.qids[i], animals.labels[i], animals.descriptions[i], animals.images[i]) == (
        "Q146", "house cat", "domesticated feline", "Cat03.jpg")
    assert animals.index_of("Q1") is None and animals.index_of("cat") is None
    assert animals.content_hash.startswith("sha256:") and len(animals.content_hash) == 71


def test_hierarchy_questions(animals: LabelSet) -> None:
    assert animals.ancestors("Q53662") == {"Q144": 1, "Q39201": 2, "Q622852": 3}
    assert animals.ancestors("Q53662", max_hops=1) == {"Q144": 1}
    assert animals.ancestors("Q1") == {}
    assert animals.is_ancestor("Q729", "Q146")
    assert not animals.is_ancestor("Q729", "Q146", max_hops=2)
    assert not animals.is_ancestor("Q729", "Q53662")  # 4 hops
    assert not animals.is_ancestor("Q146", "Q729")  # wrong direction
    assert not animals.is_ancestor("Q146", "Q146")
    assert animals.hops("Q146", "Q729") == animals.hops("Q729", "Q146") == 3
    assert animals.hops("Q146", "Q146") == 0
    assert animals.hops("Q146", "Q144") is None and animals.hops("Q146", "Q1") is None
    assert animals.super_category("Q146") == "animal" and animals.super_category("Q937") == "human"
    assert animals.super_category("Q53662") == "other"  # animal is 4 hops up
    assert animals.super_category("Q1") == ""


def test_vectorised_hops_match_scalar(animals: LabelSet) -> None:
    nodes = [animals.node_of(q) for q in animals.qids] + [-1]
    pairs = np.array([(a, b) for a in nodes for b in nodes])
    vector = animals.hierarchy.hops_many(pairs[:, 0], pairs[:, 1])
    scalar = [animals.hierarchy.hop(int(a), int(b)) for a, b in pairs]
    assert vector.tolist() == scalar
    assert (vector == 3).sum() == 3  # house cat, dog -> animal; Laika -> domesticated animal


def test_counts_and_threshold() -> None:
    labels = label_set_from_records(RECORDS, counts={"Q146": 5, "Q144": 2, "Q53662": 1, "Q937": 4}, min_freq=3)
    assert labels.frequency("Q39201") == 8 and labels.frequency("Q5") == 4
    assert labels.direct_frequency("Q5") == 0 and labels.frequency("Q1") == 0
    assert labels.frequency("Q729") == 7  # Laika is 4 hops below
    assert "Q144" in labels and labels.frequency("Q144") == 3
    assert labels.status("Q53662") == "replaced" and labels.replacements("Q53662") == ["Q144"]
    # human, person, pet and animal reach f through their descendants but are never depicted
    # themselves: not candidates (§3.1), whatever they accumulate.
    assert labels.status("Q937") == "kept" and "Q5" not in labels and labels.status("Q5") == "ancestor only"
    assert "Q215627" not in labels and "Q39201" not in labels
    assert labels.status("Q729") == "ancestor only" and labels.direct_frequency("Q729") == 0
    assert labels.qids == ["Q144", "Q146", "Q937"]
    # Depicted once (count 0 in the files counted, e.g. outside the training split) is enough
    # to be a candidate; then accumulation decides.
    counted = label_set_from_records(RECORDS, counts={"Q146": 5, "Q144": 2, "Q53662": 1, "Q937": 4, "Q5": 0},
                                     min_freq=3, counted_on={"kind": "files", "name": "train.txt"})
    assert "Q5" in counted and counted.direct_frequency("Q5") == 0 and counted.frequency("Q5") == 4
    assert counted.manifest["counted_on"] == {"kind": "files", "name": "train.txt"}


def test_write_load_roundtrip_is_fast_and_equal(animals: LabelSet, tmp_path: Path) -> None:
    write_label_set(animals, tmp_path / "set")
    started = time.perf_counter()
    loaded = load_label_set(tmp_path / "set", verify=True)
    assert time.perf_counter() - started < 2
    assert loaded.content_hash == animals.content_hash
    assert loaded.qids == animals.qids and loaded.labels == animals.labels
    assert loaded.ancestors("Q53662") == animals.ancestors("Q53662")
    assert loaded.data.items.column("aliases").to_pylist()[animals.index_of("Q146")] == ["cat"]


def test_tampering_and_bad_directories(animals: LabelSet, tmp_path: Path) -> None:
    out = write_label_set(animals, tmp_path / "set")
    with pytest.raises(LabelSetError, match="not empty"):
        write_label_set(animals, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["content_hash"] = "sha256:" + "0" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    load_label_set(out)  # no check by default: loading stays a memory map
    with pytest.raises(LabelSetError, match="does not match"):
        load_label_set(out, verify=True)
    manifest["format_version"] = 99
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(LabelSetError, match="version 99"):
        load_label_set(out)
    (out / "manifest.json").write_text("{")
    with pytest.raises(LabelSetError, match="unreadable manifest"):
        load_label_set(out)
    with pytest.raises(LabelSetError, match="not a label set"):
        load_label_set(tmp_path)


def test_hash_depends_on_content_only(tmp_path: Path) -> None:
    first = label_set_from_records(RECORDS)
    again = label_set_from_records(list(reversed(RECORDS)))
    assert first.content_hash == again.content_hash
    changed = label_set_from_records(RECORDS[:-1] + [dict(RECORDS[-1], label="A. Einstein")])
    assert changed.content_hash != first.content_hash
