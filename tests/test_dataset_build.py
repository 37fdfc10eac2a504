"""``dataset build`` on the fixture dumps (tests/fixtures/train): what is kept, how items are
mapped through the label set, which categories survive, the splits, the leakage removal and
the Table-1-style card, checked against hand-derived outcomes."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.train_support import (
    MEDIAINFO_DUMP,
    PAGES_DUMP,
    fixture_label_set,
    fixture_module,
    invoke,
    manifest_rows,
    write_fixture_labels,
)
from wikivel_bot.errors import DumpError, UsageError
from wikivel_bot.train.data.builder import BuildOptions, build_dataset
from wikivel_bot.train.data.dataset import load_dataset, split_assignment
from wikivel_bot.train.data.filenames import file_name
from wikivel_bot.train.data.pages import category_links, iter_pages

EXPECTED = fixture_module().EXPECTED
# A large test share so the seeded split puts some P18 images into it (checked below).
FRACTIONS = (0.5, 0.1, 0.4)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dataset")
    label_set = fixture_label_set()
    card = build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, label_set, out / "ds",
                         BuildOptions(seed=7, fractions=FRACTIONS), labels_path="labels")
    return card, manifest_rows(out / "ds"), label_set, out / "ds"


def test_only_image_files_with_surviving_items_are_kept(built):
    card, rows, _, _ = built
    kept = {r["page_id"] for r in rows}
    for kind in ("not_image_extension", "no_depicts", "no_item_after_filter", "depicted_without_page"):
        assert not kept & EXPECTED[kind], kind
        assert card["filtering"][kind] == len(EXPECTED[kind]), kind
    # .JPG, .jpeg, .png, .svg and .Svg all count as images (case-insensitive).
    assert {202, 203, 204, 206, 207} <= kept
    assert card["filtering"]["mediainfo_malformed_lines"] == 1


def test_items_are_mapped_through_the_frequency_filter(built):
    _, rows, label_set, _ = built
    by_id = {r["page_id"]: r for r in rows}
    for page_id, items in EXPECTED["mapped"].items():
        if page_id in by_id:
            assert tuple(by_id[page_id]["items"]) == items
    assert by_id[204]["source_items"] == ["Q53662"]  # Laika, replaced by dog
    assert all(label_set.index_of(q) is not None for r in rows for q in r["items"])


def test_descriptions_and_descriptive_categories(built):
    card, rows, _, _ = built
    by_id = {r["page_id"]: r for r in rows}
    for page_id, categories in EXPECTED["categories"].items():
        assert tuple(by_id[page_id]["categories"]) == categories
    for page_id, text in EXPECTED["descriptions"].items():
        assert by_id[page_id]["description"] == text
    assert by_id[220]["description"] == "" and by_id[220]["categories"] == []  # deleted text
    dropped = card["filtering"]["categories"]["dropped"]
    assert dropped["user"] >= 30 and dropped["license"] == 2 and dropped["upload"] == 1


def test_splits_are_disjoint_seeded_and_by_file(built):
    card, rows, _, _ = built
    splits = Counter(r["split"] for r in rows)
    assert set(splits) == {"train", "validation", "test"}
    assert len({r["page_id"] for r in rows}) == len(rows)  # one row per file: splits are disjoint
    # The split comes first (§3.2): files split = kept + removed as leakage + left without an
    # item by the frequency filter (M210, only the trinket), which ran after the split.
    filtering = card["filtering"]
    n = len(rows) + filtering["test_leakage_removed"] + filtering["no_item_after_filter"]
    assert n == filtering["records_in"] == 45
    dropped = filtering["no_item_after_filter_by_split"]
    assert sum(dropped.values()) == 1
    assert splits["train"] + dropped["train"] == round(0.5 * n)
    assert splits["validation"] + dropped["validation"] == round(0.1 * n)


def test_test_split_has_no_item_image(built):
    card, rows, label_set, _ = built
    leaked = {file_name(i) for i in label_set.images if i}
    assert "Dog 216.jpg" in leaked  # P18 "Dog_216.jpg" matches the title "File:Dog 216.jpg"
    assert not [r for r in rows if r["split"] == "test" and file_name(r["title"]) in leaked]
    # Recompute where the seeded split put every file: the removed ones are exactly the
    # item images it sent to the test split.
    kept_ids = sorted({r["page_id"] for r in rows} | _leaked_ids(leaked) | EXPECTED["no_item_after_filter"])
    order, codes = split_assignment(len(kept_ids), FRACTIONS, 7)
    titles = {f["page_id"]: f["title"] for f in fixture_module().files()}
    expected = sum(1 for p, c in zip(order.tolist(), codes.tolist())
                   if c == 2 and file_name(titles[kept_ids[p]]) in leaked)
    assert expected > 0
    assert card["filtering"]["test_leakage_removed"] == expected


def _leaked_ids(leaked):
    return {f["page_id"] for f in fixture_module().files() if file_name(f["title"]) in leaked}


def test_card_counts_match_the_manifest(built):
    card, rows, label_set, _ = built
    for split in ("train", "validation", "test"):
        chosen = [r for r in rows if r["split"] == split]
        stats = card["splits"][split]
        assert stats["images"] == len(chosen)
        pairs = sum(len(r["items"]) for r in chosen)
        assert stats["pairs"] == pairs
        assert stats["rows"] == (len(chosen) if split == "test" else pairs)
        assert stats["gt_items"] == len({q for r in chosen for q in r["items"]})
    assert card["wikidata_items"] == len(label_set.qids)
    train = Counter(q for r in rows if r["split"] == "train" for q in r["items"])
    assert [(t["qid"], t["images"]) for t in card["top_items"]] == train.most_common(len(card["top_items"]))
    assert card["labels"]["min_freq"] == 3 and card["synthetic"] is False


def test_same_seed_same_dataset_other_seed_other_split(tmp_path, built):
    _, rows, label_set, _ = built
    build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, label_set, tmp_path / "again", BuildOptions(seed=7, fractions=FRACTIONS))
    assert manifest_rows(tmp_path / "again") == rows
    build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, label_set, tmp_path / "other", BuildOptions(seed=8, fractions=FRACTIONS))
    assert {(r["page_id"], r["split"]) for r in manifest_rows(tmp_path / "other")} != {(r["page_id"], r["split"]) for r in rows}
    with pytest.raises(UsageError, match="already holds a dataset"):
        build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, label_set, tmp_path / "again", BuildOptions(seed=7))


def test_max_files_samples_after_the_shuffle(tmp_path):
    card = build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, fixture_label_set(), tmp_path / "ds",
                         BuildOptions(max_files=20, fractions=(0.5, 0.25, 0.25)))
    assert card["filtering"]["sampled_out"] == card["filtering"]["records_in"] - 20 > 0
    assert sum(s["images"] for s in card["splits"].values()) + card["filtering"]["test_leakage_removed"] == 20


def test_published_splits_are_followed(tmp_path):
    from wikivel_bot.train.data.shards import ShardWriter

    published = tmp_path / "commons_images"
    wanted = {"train": [201, 202, 203], "validation": [211], "test": [212, 221]}
    for split, ids in wanted.items():
        with ShardWriter(published / split) as writer:
            for page_id in ids:
                writer.add(str(page_id), b"\xff\xd8\xff fake jpeg")
    card = build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, fixture_label_set(), tmp_path / "ds",
                         BuildOptions(published=published))
    got = {}
    for row in manifest_rows(tmp_path / "ds"):
        got.setdefault(row["split"], []).append(row["page_id"])
    assert {k: sorted(v) for k, v in got.items()} == wanted
    assert card["filtering"]["not_in_published"] > 30


def test_extra_category_patterns_from_a_file(tmp_path):
    patterns = tmp_path / "filters.tsv"
    patterns.write_text("# kind<TAB>regex\nsofa\tsofas$\n-user\n", encoding="utf-8")
    card = build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, fixture_label_set(), tmp_path / "ds",
                         BuildOptions(category_filters=patterns))
    by_id = {r["page_id"]: r for r in manifest_rows(tmp_path / "ds")}
    assert by_id[201]["categories"] == ["Files by User:Alice"]  # user kind switched off, sofas dropped
    assert card["filtering"]["categories"]["dropped"]["sofa"] == 1
    bad = tmp_path / "bad.tsv"
    bad.write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(UsageError, match="bad.tsv:1"):
        build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, fixture_label_set(), tmp_path / "ds2", BuildOptions(category_filters=bad))


def test_pages_reader_and_category_links():
    pages = list(iter_pages(PAGES_DUMP))
    assert pages[0].title == "Main Page" and pages[0].ns == 0
    assert {p.ns for p in pages} == {0, 6, 14}
    cat = next(p for p in pages if p.page_id == 201)
    assert cat.title == "File:Cat on sofa.jpg" and "{{Information" in cat.text
    links = category_links("[[Category:Black_cats|sort]] [[:Category:Not one]] [[category:lower case]] [[Cat]]")
    assert links == ["Black cats", "lower case"]


def test_truncated_pages_dump_is_an_error(tmp_path):
    import bz2

    text = bz2.decompress(PAGES_DUMP.read_bytes())
    cut = tmp_path / "cut.xml"
    cut.write_bytes(text[: len(text) // 2])
    with pytest.raises(DumpError, match="breaks off"):
        list(iter_pages(cut))


def test_cli_builds_and_loads(tmp_path):
    labels = write_fixture_labels(tmp_path / "labels")
    result = invoke(["dataset", "build", "--mediainfo-dump", str(MEDIAINFO_DUMP), "--pages-dump", str(PAGES_DUMP),
                     "--labels", str(labels), "--out", str(tmp_path / "ds"), "--workers", "1", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "| train |" in result.output and "#Wikidata items" in result.output
    dataset = load_dataset(tmp_path / "ds")
    assert dataset.card["labels"]["path"] == str(labels.resolve())
    assert len(dataset.split_rows("train")) == dataset.card["splits"]["train"]["images"]
    card = json.loads((tmp_path / "ds" / "card.json").read_text())
    assert card["manifest_sha256"] == dataset.digest
    again = invoke(["dataset", "build", "--mediainfo-dump", str(MEDIAINFO_DUMP), "--pages-dump", str(PAGES_DUMP),
                    "--labels", str(labels), "--out", str(tmp_path / "ds"), "--no-progress"])
    assert again.exit_code == 2 and "error: " in again.output and "--force" in again.output


@pytest.mark.parametrize("category, kind", [
    ("Files by User:Alice", "user"),
    ("Photographs by John Doe", "author"),
    ("Uploaded in 2019", "date"),
    ("Photographs taken on 2015-06-01", "date"),
    ("Uploaded with UploadWizard", "upload"),
    ("CC-BY-SA-4.0", "license"),
    ("Public domain", "license"),
    ("Files with no machine-readable author", "maintenance"),
    ("Wiki Loves Monuments 2019 in Germany", "maintenance"),
    ("Images from Flickr", "source"),
    # Descriptive ones stay, even when they start like a pattern.
    ("Photos from Berlin", None),
    ("Large Hadron Collider", None),
    ("Category:Black_cats", None),
    ("Houses in Berlin", None),
])
def test_default_category_patterns(category, kind):
    from wikivel_bot.train.data.categories import load_filter, normalise

    assert load_filter().kind_of(normalise(category)) == kind


def test_the_papers_order_split_then_count_f_on_train_then_filter(tmp_path):
    # §3.2: f is counted "in the training split generated from the intermediate data".
    from wikivel_bot.labels import label_set_from_records
    from wikivel_bot.labels.build import page_ids_digest
    from wikivel_bot.labels.lists import read_page_id_file

    out = tmp_path / "ds"
    step1 = invoke(["dataset", "build", "--mediainfo-dump", str(MEDIAINFO_DUMP), "--pages-dump", str(PAGES_DUMP),
                    "--out", str(out), "--seed", "7", "--split", "0.5,0.1,0.4", "--workers", "1", "--no-progress"])
    assert step1.exit_code == 0, step1.output
    assert "--count-files" in step1.output and not (out / "card.json").exists()
    train = read_page_id_file(out / "splits" / "train.txt")
    assert len(train) == round(0.5 * 45)  # every depicted image file, before any filter
    # Step 2, by hand: the fixture's depicts counted on the train pages only.
    counts: Counter = Counter()
    for f in fixture_module().files():
        if f["page_id"] in train:
            for entry in f["depicts"] or ():
                qid, rank = entry if isinstance(entry, tuple) else (entry, "normal")
                if rank != "deprecated" and qid.startswith("Q"):
                    counts[qid] += 1
    # Items depicted only outside the train split count 0 there but stay candidates (§3.1).
    every = {q: counts.get(q, 0) for q in _depicted()}
    labels = label_set_from_records(fixture_module().ITEMS, every, min_freq=3,
                                    counted_on={"kind": "files", "name": "train.txt", "sha256": page_ids_digest(train)})
    # Step 3: the same dumps and seed give the same split; the card says f was counted on it.
    card = build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, labels, out, BuildOptions(seed=7, fractions=FRACTIONS))
    assert card["labels"]["counted_on_train_split"] is True
    assert read_page_id_file(out / "splits" / "train.txt") == train
    # Every kept item reaches f = 3 within the train split, counting descendants.
    for qid in labels.qids:
        assert labels.frequency(qid) >= 3
    other = build_dataset(MEDIAINFO_DUMP, PAGES_DUMP, fixture_label_set(), tmp_path / "whole",
                          BuildOptions(seed=7, fractions=FRACTIONS))
    assert other["labels"]["counted_on_train_split"] is False


def _depicted():
    from tests.train_support import depicts_counts

    return set(depicts_counts())
