"""The published Wiki-VEL dataset's layout: read it as it is, and write it (for synthetic checks).

The paper's dataset (footnote 1: ``https://huggingface.co/datasets/aaintelligentsystems/
vel_commons_wikidata`` as printed; served at ``aiintelligentsystems/vel_commons_wikidata``)
is a WebDataset of three configurations::

    commons_images/{train,validation,test}/NN.tar   <page id>.jpg|.png + <page id>.json
    frequent_wikidata_items/NN.tar                   <QID>.json (+ <QID>.jpg, the item image)
    all_wikidata_items/NN.tar                        the same for f = 0

Its labels are already promoted (§3.2) and its splits already drawn, so
:func:`import_published` takes them **as they are**: the candidate pool is exactly the
listed items (no frequency filter is run again, f is the published one), each image keeps
its split and its ground truth, and nothing is re-derived from the dumps. The train-split
frequencies of the baselines are counted from the published train rows.

Field names. The dataset card names the members but this project could not check every
field name against the published files, so the reader accepts the names below and stops
with one line naming the member and the field when none is there (a researcher then adds
the real name to ``_FIELDS``; nothing else changes)::

    image json   items: wikidata_ids | qids | items | depicts | labels   (QIDs or {"qid": ...})
                 description: description | commons_description
                 categories: categories | commons_categories          (list or "a; b")
    item json    qid: qid | id | __key__;  label;  description
                 image: image | wikidata_image | p18;  parents: subclass_of | p279 | superclasses,
                 instance_of | p31

Train and validation rows of the published data are one per (image, item); rows of one
image (same page id, members like ``123_0.json``, ``123_1.json``) are merged.
"""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

from wikivel_bot.errors import UsageError
from wikivel_bot.train.data.dataset import SPLITS, BuildCounts, FileRecord, write_dataset
from wikivel_bot.types import is_qid

PAPER_ADDRESS = "https://huggingface.co/datasets/aaintelligentsystems/vel_commons_wikidata"
SERVED_AT = "https://huggingface.co/datasets/aiintelligentsystems/vel_commons_wikidata"
IMAGES = "commons_images"
ITEMS = "frequent_wikidata_items"

_FIELDS: Dict[str, Tuple[str, ...]] = {
    "items": ("wikidata_ids", "qids", "items", "depicts", "labels"),
    "description": ("description", "commons_description"),
    "categories": ("categories", "commons_categories"),
    "qid": ("qid", "id", "__key__"),
    "label": ("label", "wikidata_label"),
    "item_description": ("description", "wikidata_description"),
    "image": ("image", "wikidata_image", "p18"),
    "p279": ("subclass_of", "p279", "superclasses"),
    "p31": ("instance_of", "p31"),
}


@dataclass
class PublishedImage:
    """One image of ``commons_images`` (rows of the same page id merged)."""

    page_id: int
    split: str
    items: List[str] = field(default_factory=list)
    description: str = ""
    categories: List[str] = field(default_factory=list)
    extension: str = ""


def _members(tar_path: Path) -> Iterator[Tuple[str, str, bytes]]:
    """(key, extension, bytes) of every regular member of one tar."""
    try:
        with tarfile.open(tar_path, "r:") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                base = member.name.rsplit("/", 1)[-1]
                key, _, ext = base.partition(".")
                handle = tar.extractfile(member)
                if handle is not None:
                    yield key, ext.lower(), handle.read()
    except (OSError, tarfile.TarError) as exc:
        raise UsageError(f"{tar_path}: not a readable tar shard of the published dataset: {exc}") from None


def _field(doc: Mapping[str, Any], name: str, where: str, required: bool = True) -> Any:
    for key in _FIELDS[name]:
        if key in doc:
            return doc[key]
    if required:
        raise UsageError(f"{where}: no {name} field (looked for {', '.join(_FIELDS[name])})")
    return None


def _qids(value: Any, where: str) -> List[str]:
    values = value if isinstance(value, list) else [value]
    out = []
    for v in values:
        qid = v.get("qid") or v.get("id") if isinstance(v, dict) else v
        qid = str(qid or "").strip()
        if not is_qid(qid):
            raise UsageError(f"{where}: {qid!r} is not a QID")
        out.append(qid)
    return out


def _text_list(value: Any) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.replace("|", ";").split(";") if p.strip()]
    return [str(v) for v in value if str(v).strip()]


def read_images(root: Path) -> Dict[int, PublishedImage]:
    """Every image of ``root/commons_images`` with its published split and ground truth."""
    images: Dict[int, PublishedImage] = {}
    for split in SPLITS:
        for tar_path in sorted((Path(root) / IMAGES / split).glob("*.tar")):
            for key, ext, data in _members(tar_path):
                digits = key.split("_", 1)[0]
                if not digits.isdigit():
                    continue
                page_id = int(digits)
                entry = images.setdefault(page_id, PublishedImage(page_id, split))
                if entry.split != split:
                    raise UsageError(f"{tar_path}: page {page_id} is in both {entry.split} and {split}")
                if ext == "json":
                    where = f"{tar_path.name}:{key}.json"
                    try:
                        doc = json.loads(data)
                    except ValueError as exc:
                        raise UsageError(f"{where}: not JSON: {exc}") from None
                    for qid in _qids(_field(doc, "items", where), where):
                        if qid not in entry.items:
                            entry.items.append(qid)
                    entry.description = entry.description or str(_field(doc, "description", where, False) or "")
                    entry.categories = entry.categories or _text_list(_field(doc, "categories", where, False))
                elif ext in ("jpg", "jpeg", "png", "svg"):
                    entry.extension = ext
    if not images:
        raise UsageError(f"{root}: no {IMAGES}/<split>/*.tar with images (is this the published dataset?)")
    return images


def read_items(root: Path) -> Tuple[List[Dict[str, Any]], Dict[str, bytes]]:
    """The published candidate pool (``frequent_wikidata_items``): item records for
    ``label_set_from_records`` and the item images by P18 name."""
    records: List[Dict[str, Any]] = []
    images: Dict[str, bytes] = {}
    by_key: Dict[str, bytes] = {}
    tars = sorted((Path(root) / ITEMS).glob("*.tar"))
    if not tars:
        raise UsageError(f"{root}: no {ITEMS}/*.tar (the published label set)")
    for tar_path in tars:
        for key, ext, data in _members(tar_path):
            if ext != "json":
                by_key[key] = data
                continue
            where = f"{tar_path.name}:{key}.json"
            doc = json.loads(data)
            doc.setdefault("__key__", key)
            qid = _qids(_field(doc, "qid", where), where)[0]
            records.append({
                "qid": qid, "label": str(_field(doc, "label", where) or ""),
                "description": str(_field(doc, "item_description", where, False) or ""),
                "image": str(_field(doc, "image", where, False) or ""),
                "p279": _qids(_field(doc, "p279", where, False) or [], where),
                "p31": _qids(_field(doc, "p31", where, False) or [], where),
            })
    for record in records:
        picture = by_key.get(record["qid"])
        if picture and record["image"]:
            images[record["image"]] = picture
    return records, images


def import_published(root: Path, out_dir: Path, *, force: bool = False, min_freq: int = 10) -> Dict[str, Any]:
    """Our dataset directory from the published one, labels and splits taken as they are.

    Writes ``out_dir/labels`` (the listed items, no filtering), ``manifest.parquet``,
    ``card.json``, ``train_counts.json``, ``splits/`` and ``images/items/`` (the item
    images); the file images stay in ``root/commons_images``, linked as
    ``images/commons_images`` so ``<data>/images`` holds both.

    :param root: the published dataset's directory (holding ``commons_images/`` ...).
    :param min_freq: the f the published pool was made with (recorded, not applied).
    :returns: the card.
    """
    from wikivel_bot.labels import label_set_from_records, write_label_set

    images = read_images(root)
    records, item_images = read_items(root)
    labels = label_set_from_records(records, None, min_freq=0,
                                    counted_on={"kind": "published", "name": ITEMS, "f": int(min_freq)})
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_label_set(labels, out_dir / "labels", overwrite=force)
    items_dir = out_dir / "images" / "items"
    items_dir.mkdir(parents=True, exist_ok=True)
    # One image store for training and evaluation: the item images here, the file images
    # where they were downloaded (linked, not copied).
    link = out_dir / "images" / IMAGES
    if not link.exists():
        link.symlink_to(Path(root).resolve() / IMAGES, target_is_directory=True)
    for name, data in item_images.items():
        (items_dir / name).write_bytes(data)
    files = [FileRecord(p.page_id, f"File:{p.page_id}.{p.extension or 'jpg'}", tuple(p.items), tuple(p.items),
                        p.description, tuple(p.categories)) for p in images.values() if p.items]
    counts = BuildCounts()
    counts.extra.update(published_images=len(images), splits_from="published", published_min_freq=int(min_freq))
    card = write_dataset(files, labels, out_dir, labels_path="labels", counts=counts, force=force,
                         assigned={p.page_id: p.split for p in images.values()},
                         sources=[{"kind": "published-dataset", "path": str(root), "address": PAPER_ADDRESS}])
    # The pool was filtered by the publishers: record their f, do not apply one again.
    card["labels"].update(published=True, min_freq=int(min_freq))
    (out_dir / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return card


def export_published(data: Path, out_root: Path) -> Path:
    """Write one of our datasets (e.g. a synthetic one) in the published layout.

    :param data: our dataset directory (manifest, labels, images/ with shards and items/).
    :param out_root: where ``commons_images/`` and ``frequent_wikidata_items/`` go.
    """
    from wikivel_bot.train.data.dataset import load_dataset, open_labels
    from wikivel_bot.train.data.shards import ImageStore, image_extension

    dataset = load_dataset(Path(data))
    labels = open_labels(dataset)
    store = ImageStore(Path(data) / "images")
    table = dataset.table
    descriptions = table.column("description").to_pylist()
    categories = table.column("categories").to_pylist()
    splits = table.column("split").to_pylist()
    for split in SPLITS:
        members: List[Tuple[str, bytes]] = []
        for row, page_id in enumerate(dataset.page_ids.tolist()):
            if splits[row] != split:
                continue
            image = store.get(int(page_id), dataset.titles[row])
            if image:
                members.append((f"{page_id}.{image_extension(image)}", image))
            doc = {"wikidata_ids": dataset.items()[row], "description": descriptions[row],
                   "categories": categories[row]}
            members.append((f"{page_id}.json", json.dumps(doc).encode()))
        _write_tar(Path(out_root) / IMAGES / split / "00.tar", members)
    members = []
    for index, qid in enumerate(labels.qids):
        parents = labels.ancestors(qid, 1)
        doc = {"qid": qid, "label": labels.labels[index], "description": labels.descriptions[index],
               "image": labels.images[index], "subclass_of": sorted(parents)}
        members.append((f"{qid}.json", json.dumps(doc).encode()))
        picture = store.get_name(labels.images[index]) if labels.images[index] else None
        if picture:
            members.append((f"{qid}.jpg", picture))
    _write_tar(Path(out_root) / ITEMS / "00.tar", members)
    return Path(out_root)


def _write_tar(path: Path, members: Sequence[Tuple[str, bytes]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
