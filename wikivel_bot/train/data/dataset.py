"""The training dataset on disk: a manifest of files and a card describing it (paper §3.3).

Layout of a dataset directory::

    manifest.parquet   one row per file: page_id, title, split, items, source_items,
                       description, categories (the split column says train/validation/test)
    card.json          how it was built, counts per split (Table 1), top items (Table 2)
    train_counts.json  files per ground-truth item in the train split, after promotion (the
                       frequencies of the random and top-k baselines, §4.4)
    splits/            page ids per split before the frequency filter (train.txt is what
                       ``labels build --count-files`` counts f on, §3.2)
    images/            optional: tar shards of thumbnails (``shards.py``)

Steps from file records to splits (whatever produced the records: the dump reader in
``builder.py`` or the generator in ``train/synthetic/shapes.py``), in the paper's order: a seeded
shuffle, an optional sample, the 80/10/10 split by file (written to ``splits/``), *then* the
ground truth mapped through the label set's frequency filter — whose f the paper counts "in
the training split generated from the intermediate data" (§3.2), i.e. on ``splits/train.txt``
(``labels build --count-files``) — an item not kept replaced by the ancestors that replace
it, a file left with no item dropped, and removal from the test split of every file that is
some item's P18 image (§4.2: the fusion linker reads item images, so those would leak the
answer). The card records whether the label set was counted on exactly this training split.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from wikivel_bot import __version__
from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import UsageError
from wikivel_bot.train.data.counts import TRAIN_COUNTS, counted_on_card, train_counts, write_train_counts
from wikivel_bot.train.data.filenames import file_name
from wikivel_bot.train.data.splits import (  # noqa: F401 - split_assignment is part of this module's API
    DEFAULT_FRACTIONS,
    SPLITS,
    SPLITS_DIR,
    assign_splits,
    split_assignment,
    write_splits,
)

FORMAT = "wikivel-dataset"
FORMAT_VERSION = 1
MANIFEST = "manifest.parquet"
CARD = "card.json"
TOP_ITEMS = 10

MANIFEST_SCHEMA = pa.schema([
    ("page_id", pa.int64()),
    ("title", pa.string()),
    ("split", pa.string()),
    ("items", pa.list_(pa.string())),
    ("source_items", pa.list_(pa.string())),
    ("description", pa.string()),
    ("categories", pa.list_(pa.string())),
])


@dataclass(frozen=True)
class FileRecord:
    """One Commons file as the dataset keeps it.

    :param page_id: Commons page id (= the MediaInfo id without ``M``).
    :param title: ``File:Name.jpg``.
    :param items: ground-truth QIDs after the label set's frequency filter.
    :param source_items: the depicts QIDs as read (before mapping).
    :param description: plain-text description (English fallback chain).
    :param categories: descriptive categories, without ``Category:``.
    """

    page_id: int
    title: str
    items: Tuple[str, ...]
    source_items: Tuple[str, ...] = ()
    description: str = ""
    categories: Tuple[str, ...] = ()


def map_items(label_set: Any, qids: Iterable[str]) -> Tuple[str, ...]:
    """Ground truth through the frequency filter: kept items stay, others become their
    replacements (nearest kept ancestors, §3.2), dropped ones vanish; order kept, no repeats.

    :param label_set: a ``wikivel_bot.labels.LabelSet`` (``index_of``, ``replacements``).
    :param qids: the depicts items as read.
    """
    out: Dict[str, None] = {}
    for qid in qids:
        if label_set.index_of(qid) is not None:
            out[qid] = None
            continue
        for replacement in label_set.replacements(qid):
            if label_set.index_of(replacement) is not None:
                out[replacement] = None
    return tuple(out)


@dataclass
class BuildCounts:
    """What happened to the files on the way into the dataset (goes into the card)."""

    # Files handed to write_dataset (extension and depicts filters already applied).
    records_in: int = 0
    no_item_after_filter: int = 0
    sampled_out: int = 0
    test_leakage_removed: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "extra"}
        out.update(self.extra)
        return out


def write_dataset(
    records: Iterable[FileRecord],
    label_set: Any,
    out_dir: Path,
    *,
    seed: int = 0,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    max_files: Optional[int] = None,
    labels_path: str = "",
    sources: Sequence[Mapping[str, Any]] = (),
    counts: Optional[BuildCounts] = None,
    synthetic: bool = False,
    force: bool = False,
    assigned: Optional[Mapping[int, str]] = None,
) -> Dict[str, Any]:
    """Map, shuffle, sample, split, remove test leakage; write manifest and card.

    :param records: the files (items as read; mapped here through ``label_set``).
    :param label_set: the label set the dataset is for.
    :param out_dir: dataset directory (created).
    :param seed: shuffle seed.
    :param fractions: train, validation, test shares.
    :param max_files: keep only this many files after the shuffle (the paper used 1M).
    :param labels_path: where the label set lives (recorded for ``train``).
    :param sources: descriptions of the dumps read.
    :param counts: counters of earlier steps (files read, filters).
    :param synthetic: the records are generated (reports must say so).
    :param force: replace an existing dataset in ``out_dir``.
    :param assigned: page id -> split, given (the published dataset's splits) instead of
        drawn; files without an entry are left out.
    :returns: the card.
    """
    out_dir = Path(out_dir)
    if (out_dir / CARD).exists() and not force:
        raise UsageError(f"{out_dir} already holds a dataset (use --force to replace it)")
    counts = counts or BuildCounts()
    kept, order, codes = assign_splits(records, counts, seed=seed, fractions=fractions, max_files=max_files,
                                       assigned=assigned)
    split_pages = write_splits(out_dir, kept, order, codes)
    leaked = {file_name(name) for name in label_set.images if name}
    rows: List[Tuple[FileRecord, str]] = []
    dropped_by_split: Dict[str, int] = {name: 0 for name in SPLITS}
    for position, index in enumerate(order.tolist()):
        record = kept[index]
        split = SPLITS[int(codes[position])]
        # After the split (§3.2): the label set's f may have been counted on this train split.
        items = map_items(label_set, record.source_items)
        if not items:
            counts.no_item_after_filter += 1
            dropped_by_split[split] += 1
            continue
        record = replace(record, items=items)
        if split == "test" and file_name(record.title) in leaked:
            counts.test_leakage_removed += 1
            continue
        rows.append((record, split))
    counts.extra["no_item_after_filter_by_split"] = dropped_by_split
    table = _manifest_table(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out_dir / MANIFEST)
    card = make_card(table, label_set, seed=seed, fractions=fractions, labels_path=labels_path,
                     sources=sources, counts=counts, synthetic=synthetic)
    card["labels"].update(counted_on_card(label_set, split_pages["train"]))
    card["splits_dir"] = SPLITS_DIR
    card["manifest_sha256"] = _file_digest(out_dir / MANIFEST)
    write_train_counts(out_dir, table)
    card["train_counts"] = TRAIN_COUNTS
    (out_dir / CARD).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return card


def _manifest_table(rows: Sequence[Tuple[FileRecord, str]]) -> pa.Table:
    return pa.table({
        "page_id": [r.page_id for r, _ in rows],
        "title": [r.title for r, _ in rows],
        "split": [s for _, s in rows],
        "items": [list(r.items) for r, _ in rows],
        "source_items": [list(r.source_items) for r, _ in rows],
        "description": [r.description for r, _ in rows],
        "categories": [list(r.categories) for r, _ in rows],
    }, schema=MANIFEST_SCHEMA)


def make_card(table: pa.Table, label_set: Any, *, seed: int, fractions: Sequence[float], labels_path: str,
              sources: Sequence[Mapping[str, Any]], counts: BuildCounts, synthetic: bool) -> Dict[str, Any]:
    """The card: Table 1 counts per split, Table 2 top items of the train split, provenance."""
    splits = table.column("split").to_pylist()
    items = table.column("items").to_pylist()
    per_split: Dict[str, Dict[str, int]] = {}
    train_counter: Counter = Counter()
    for name in SPLITS:
        chosen = [its for s, its in zip(splits, items) if s == name]
        pairs = sum(len(its) for its in chosen)
        per_split[name] = {
            "images": len(chosen),
            # As in the paper's Table 1: train/validation have one row per (image, item),
            # the test split one row per image (all of its items are the truth).
            "rows": len(chosen) if name == "test" else pairs,
            "pairs": pairs,
            "gt_items": len({q for its in chosen for q in its}),
        }
        if name == "train":
            for its in chosen:
                train_counter.update(its)
    top = [{"qid": q, "label": _label(label_set, q), "images": n} for q, n in train_counter.most_common(TOP_ITEMS)]
    super_categories: Counter = Counter()
    if hasattr(label_set, "super_category"):
        for qid, n in train_counter.items():
            super_categories[label_set.super_category(qid) or "other"] += n
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "synthetic": bool(synthetic),
        "seed": int(seed),
        "fractions": dict(zip(SPLITS, (float(f) for f in fractions))),
        "labels": {"path": labels_path, "content_hash": label_set.content_hash, "items": len(label_set.qids),
                   "min_freq": int(getattr(label_set, "min_freq", 0))},
        "sources": [dict(s) for s in sources],
        "splits": per_split,
        "wikidata_items": len(label_set.qids),
        "top_items": top,
        "super_categories_train": dict(super_categories.most_common()),
        "filtering": counts.as_dict(),
        "manifest": MANIFEST,
        "created": format_timestamp(),
        "built_by": f"wikivel-bot {__version__}",
    }


def _label(label_set: Any, qid: str) -> str:
    index = label_set.index_of(qid)
    return label_set.labels[index] if index is not None else ""


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def card_tables(card: Mapping[str, Any]) -> str:
    """The card as Markdown: Table 1 (counts per split) and Table 2 (top train items)."""
    splits = card["splits"]
    lines = [f"min_freq f = {card['labels']['min_freq']}" + (" (synthetic data)" if card.get("synthetic") else ""),
             "", "| split | #images | #rows | #gt_items |", "| --- | ---: | ---: | ---: |"]
    for name in SPLITS:
        s = splits[name]
        lines.append(f"| {name} | {s['images']:,} | {s['rows']:,} | {s['gt_items']:,} |")
    lines.append(f"| #Wikidata items | {card['wikidata_items']:,} | | |")
    lines += ["", "| label | QID | freq. (train images) |", "| --- | --- | ---: |"]
    lines += [f"| {t['label']} | {t['qid']} | {t['images']:,} |" for t in card["top_items"]]
    return "\n".join(lines) + "\n"


@dataclass
class Dataset:
    """A dataset directory opened for training or evaluation.

    :param path: the directory.
    :param card: ``card.json``.
    :param table: the manifest.
    """

    path: Path
    card: Dict[str, Any]
    table: pa.Table
    _items: Optional[List[List[str]]] = field(default=None, repr=False)

    @property
    def page_ids(self) -> np.ndarray:
        return self.table.column("page_id").to_numpy()

    @property
    def titles(self) -> List[str]:
        return self.table.column("title").to_pylist()

    def split_rows(self, split: str) -> np.ndarray:
        """Manifest row numbers of one split, in manifest order."""
        if split not in SPLITS:
            raise UsageError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
        return np.flatnonzero(np.asarray(self.table.column("split").to_pylist()) == split)

    def items(self) -> List[List[str]]:
        """Ground-truth QIDs of every manifest row (converted once, then kept)."""
        if self._items is None:
            self._items = self.table.column("items").to_pylist()
        return self._items

    def train_counts(self) -> Dict[str, int]:
        """Files per item in the train split after promotion (``train_counts.json``, or from
        the manifest for a dataset written before that file existed)."""
        path = self.path / TRAIN_COUNTS
        if path.is_file():
            return {str(k): int(v) for k, v in json.loads(path.read_text(encoding="utf-8"))["counts"].items()}
        return train_counts(self.table)

    @property
    def digest(self) -> str:
        """Identity of the data (the manifest's hash), for caches and checkpoints."""
        return str(self.card.get("manifest_sha256", ""))


def load_dataset(path: Path) -> Dataset:
    """Open a dataset directory written by :func:`write_dataset`.

    :raises UsageError: not a dataset directory, or a newer format.
    """
    path = Path(path)
    try:
        card = json.loads((path / CARD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} is not a dataset directory (no {CARD}); build one with `wikivel-bot dataset build`") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path / CARD}: unreadable dataset card: {exc}") from None
    if card.get("format") != FORMAT or int(card.get("format_version", 0)) > FORMAT_VERSION:
        raise UsageError(f"{path / CARD}: not a wikivel dataset card of a version this program reads")
    try:
        table = pq.read_table(path / str(card.get("manifest", MANIFEST)))
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"{path}: unreadable manifest: {exc}") from None
    return Dataset(path=path, card=card, table=table)


def open_labels(dataset: Dataset, labels: str = "") -> Any:
    """The dataset's label set: ``labels`` if given, else the path its card names.

    :raises UsageError: no label set found, or one with another content hash.
    """
    from wikivel_bot.labels import load_label_set

    named = labels or str(dataset.card["labels"].get("path", ""))
    if not named:
        raise UsageError(f"the card of {dataset.path} names no label set: give --labels DIR")
    path = Path(named)
    if not labels and not path.is_absolute():
        path = dataset.path / path  # relative paths in the card are relative to the dataset
    if not path.is_dir():
        raise UsageError(f"label set not found at {path}: give --labels DIR (the set the dataset was built with)")
    label_set = load_label_set(path)
    wanted = dataset.card["labels"]["content_hash"]
    if label_set.content_hash != wanted:
        raise UsageError(f"label set {path} ({label_set.content_hash[:12]}) is not the one dataset {dataset.path} was "
                         f"built with ({wanted[:12]}); rebuild the dataset or give the right --labels")
    return label_set


def image_store(dataset: Dataset, images: str = "") -> Any:
    """The image store of ``--images``, or of ``<data>/images``.

    :raises UsageError: no such directory (with how to make one).
    """
    from wikivel_bot.train.data.shards import ImageStore

    path = Path(images) if images else dataset.path / "images"
    if not path.is_dir():
        raise UsageError(f"no images at {path}: fetch them (`wikivel-bot dataset fetch --data {dataset.path}`) "
                         "or give --images DIR (our shards, the published commons_images/, or image files)")
    return ImageStore(path)
