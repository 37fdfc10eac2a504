"""The published dataset's route (docs/reproduce.md): labels and splits read as they are, from
a small directory in the published layout, checked by hand."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.train_support import invoke
from wikivel_bot.errors import UsageError
from wikivel_bot.train.data.dataset import load_dataset, open_labels
from wikivel_bot.train.data.published import export_published, import_published, read_images
from wikivel_bot.train.data.shards import ImageStore


def tar(path: Path, members: List[Tuple[str, bytes]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as handle:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))


def j(doc: Dict) -> bytes:
    return json.dumps(doc).encode()


JPEG = b"\xff\xd8\xff\xe0 not decoded here"


@pytest.fixture
def published(tmp_path: Path) -> Path:
    root = tmp_path / "vel"
    # Train: page 11 has two rows (one per item), as the published train split does.
    tar(root / "commons_images" / "train" / "00.tar", [
        ("11.jpg", JPEG), ("11_0.json", j({"wikidata_ids": ["Q5"], "description": "a presenter",
                                           "categories": ["Presenters"]})),
        ("11_1.json", j({"wikidata_ids": ["Q3947"]})),
        ("12.jpg", JPEG), ("12.json", j({"wikidata_ids": ["Q5"], "categories": "TV; Studios"})),
        ("13.png", b"\x89PNG fake"), ("13.json", j({"wikidata_ids": [{"qid": "Q3947"}]})),
    ])
    tar(root / "commons_images" / "validation" / "00.tar", [("21.json", j({"wikidata_ids": ["Q146"]})),
                                                             ("21.jpg", JPEG)])
    tar(root / "commons_images" / "test" / "00.tar", [("31.jpg", JPEG), ("31.json", j({"wikidata_ids": ["Q146", "Q5"]}))])
    # The pool: three items; house cat is depicted only outside train and has no parent here:
    # a frequency filter run again would drop it. It is kept, as published.
    tar(root / "frequent_wikidata_items" / "00.tar", [
        ("Q5.json", j({"qid": "Q5", "label": "human", "description": "any member of Homo sapiens"})),
        ("Q3947.json", j({"qid": "Q3947", "label": "house", "image": "A house.jpg"})),
        ("Q3947.jpg", JPEG),
        ("Q146.json", j({"qid": "Q146", "label": "house cat", "subclass_of": ["Q5"]})),
    ])
    return root


def test_published_labels_and_splits_are_taken_as_they_are(published: Path, tmp_path: Path) -> None:
    card = import_published(published, tmp_path / "data")
    dataset = load_dataset(tmp_path / "data")
    labels = open_labels(dataset)
    assert sorted(labels.qids) == ["Q146", "Q3947", "Q5"]
    assert labels.ancestors("Q146") == {"Q5": 1}
    assert labels.manifest["counted_on"] == {"kind": "published", "name": "frequent_wikidata_items", "f": 10}
    rows = {int(p): (s, i) for p, s, i in zip(dataset.page_ids.tolist(), dataset.table.column("split").to_pylist(),
                                              dataset.items())}
    assert rows == {11: ("train", ["Q5", "Q3947"]), 12: ("train", ["Q5"]), 13: ("train", ["Q3947"]),
                    21: ("validation", ["Q146"]), 31: ("test", ["Q146", "Q5"])}
    assert dataset.train_counts() == {"Q3947": 2, "Q5": 2}
    assert card["labels"]["min_freq"] == 10 and card["labels"]["published"] is True
    # The file images stay in the published shards; the JSON members beside them are skipped.
    store = ImageStore(published / "commons_images")
    assert store.get(11) == JPEG and store.get(13) == b"\x89PNG fake"
    assert (tmp_path / "data" / "images" / "items" / "A house.jpg").read_bytes() == JPEG
    both = ImageStore(tmp_path / "data" / "images")  # through the link: file and item images
    assert both.get(31) == JPEG and both.get_name("A house.jpg") == JPEG
    by_page = dict(zip(dataset.page_ids.tolist(), dataset.table.column("categories").to_pylist()))
    assert by_page[12] == ["TV", "Studios"]


def test_cli_and_bad_published_files(published: Path, tmp_path: Path) -> None:
    result = invoke(["dataset", "import-published", "--published", str(published), "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "| train | 3 |" in result.output
    tar(published / "commons_images" / "test" / "01.tar", [("41.json", j({"depicted": ["Q5"]}))])
    with pytest.raises(UsageError, match=r"01.tar:41.json: no items field \(looked for wikidata_ids"):
        read_images(published)


def test_synthetic_export_roundtrips(tmp_path: Path) -> None:
    from wikivel_bot.train.synthetic.shapes import make_synthetic

    make_synthetic(tmp_path / "syn", 60, 0)
    export_published(tmp_path / "syn", tmp_path / "vel")
    import_published(tmp_path / "vel", tmp_path / "back", min_freq=0)
    ours, back = load_dataset(tmp_path / "syn"), load_dataset(tmp_path / "back")
    mine = {int(p): (s, tuple(i)) for p, s, i in zip(ours.page_ids.tolist(), ours.table.column("split").to_pylist(), ours.items())}
    theirs = {int(p): (s, tuple(i)) for p, s, i in zip(back.page_ids.tolist(), back.table.column("split").to_pylist(), back.items())}
    assert mine == theirs
    assert open_labels(back).qids == open_labels(ours).qids
