"""Everything a training run needs before its first step, built from a :class:`TrainConfig`.

Loads the dataset and its label set (refusing a label set other than the one the dataset
was built for), the frozen backbone, the cached embeddings of the variant's inputs, the
(file, item) rows of the train and validation splits, and the target builder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from wikivel_bot.errors import UsageError
from wikivel_bot.linker.spec import LinkerSpec, get_spec
from wikivel_bot.train.data.dataset import Dataset, image_store, load_dataset, open_labels
from wikivel_bot.train.fitting.targets import TargetBuilder, Truth, related_pairs
from wikivel_bot.train.fitting.validate import ValidationSet
from wikivel_bot.train.fitting.variants import FrozenInputs, Variant, to_device


@dataclass
class Prepared:
    """The loaded pieces of a run (see the module docstring)."""

    spec: LinkerSpec
    dataset: Dataset
    label_set: Any
    backbone: Any
    backbone_block: Dict[str, Any]
    variant: Variant
    targets: TargetBuilder
    train_rows: Tuple[np.ndarray, np.ndarray]
    validation: ValidationSet
    device: torch.device
    select: str
    data_info: Dict[str, Any]
    open_clip_config: Optional[Dict[str, Any]]
    notes: List[str] = field(default_factory=list)


def positions_of(label_set: Any, items: Sequence[Sequence[str]]) -> List[List[int]]:
    """Label-set positions of every row's items.

    :raises UsageError: an item the label set does not keep (a dataset for another set).
    """
    out = []
    for qids in items:
        row = []
        for qid in qids:
            index = label_set.index_of(qid)
            if index is None:
                raise UsageError(f"dataset item {qid} is not in the label set: the dataset was built for another one")
            row.append(int(index))
        out.append(row)
    return out


def split_rows(split_rows_: np.ndarray, positions: List[List[int]], present: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(manifest row, label-set position) of every (file, item) pair of a split with an image."""
    files: List[int] = []
    items: List[int] = []
    for row in split_rows_.tolist():
        if not present[row]:
            continue
        for position in positions[row]:
            files.append(row)
            items.append(position)
    return np.asarray(files, dtype=np.int64), np.asarray(items, dtype=np.int64)


def prepare(config: Any) -> Prepared:
    """Load and compute everything the loop needs (see the module docstring).

    :param config: a ``loop.TrainConfig``.
    """
    from wikivel_bot.linker.clip import backbone_info
    from wikivel_bot.linker.backbone.encoders import load_backbone
    from wikivel_bot.linker.texts import render_item_text
    from wikivel_bot.train.fitting import embeddings

    dataset = load_dataset(Path(config.data))
    label_set = open_labels(dataset, config.labels)
    spec = get_spec(config.linker)
    if spec.kind != "clip" or not spec.has_head:
        raise UsageError(f"linker {spec.name} has no trainable head; train naive-mlp, naive-te or fusion")
    backbone = load_backbone(config.model, config.pretrained, config.weights, config.device, config.threads)
    store = image_store(dataset, config.images)
    cache = Path(config.cache_dir)
    notes: List[str] = []
    progress = bool(config.progress)
    # Decoding is the bottleneck of the first run on a GPU: use the cores there are.
    threads = min(16, os.cpu_count() or 2)
    images = embeddings.image_embeddings(backbone, dataset.page_ids.tolist(), dataset.titles, store, cache,
                                         dataset.digest, batch_size=256 if backbone.on_cuda else 64,
                                         threads=threads, progress=progress)
    qids = label_set.qids
    item_texts = [render_item_text(spec.item_text, label, description)
                  for label, description in zip(label_set.labels, label_set.descriptions)]
    device = backbone.device
    train_text = "text_encoder" in spec.trainable
    if train_text:
        item_vectors = torch.zeros((len(qids), backbone.embed_dim), dtype=torch.float16, device=device)
    else:
        item_vectors = to_device(embeddings.text_embeddings(backbone, item_texts, cache, name="item-texts",
                                                            progress=progress).vectors, device)
    inputs = FrozenInputs(images=to_device(images.vectors, device), item_texts=item_vectors)
    if spec.architecture == "fusion":
        _fusion_inputs(inputs, dataset, label_set, spec, backbone, store, cache, progress, notes)
    positions = positions_of(label_set, dataset.items())
    present = images.present
    missing = int((~present).sum())
    if missing:
        notes.append(f"{missing} of {len(present)} files have no usable image and are left out")
    train_rows = split_rows(dataset.split_rows("train"), positions, present)
    val_files_all = np.asarray([r for r in dataset.split_rows("validation").tolist() if present[r]], dtype=np.int64)
    val_files = val_files_all[: config.val_limit] if config.val_limit else val_files_all
    val_rows = split_rows(val_files, positions, present)
    items_lists = dataset.items()
    validation = ValidationSet(val_rows[0], val_rows[1], val_files, [items_lists[r] for r in val_files.tolist()])
    truth = Truth.from_lists(positions, len(qids))
    used = set(train_rows[1].tolist()) | set(val_rows[1].tolist())
    relations = related_pairs(label_set, used, config.target_hops)
    targets = TargetBuilder(truth, relations, config.hop_weight, device)
    variant = Variant(spec, backbone.embed_dim, inputs, backbone, item_texts if train_text else None).to(device)
    if backbone.random_weights:
        notes.append("random backbone weights (--weights random): numbers measure the head only, not CLIP")
    if dataset.card.get("synthetic"):
        notes.append("synthetic dataset: nothing here is Commons data")
    return Prepared(
        spec=spec, dataset=dataset, label_set=label_set, backbone=backbone, backbone_block=backbone_info(backbone),
        variant=variant, targets=targets, train_rows=train_rows, validation=validation, device=device,
        select=config.select, notes=notes, open_clip_config=_open_clip_config(backbone.model_name),
        data_info={"path": str(dataset.path), "manifest_sha256": dataset.digest,
                   "synthetic": bool(dataset.card.get("synthetic")), "splits": dataset.card.get("splits", {}),
                   "labels_path": str(label_set.path or ""), "train_rows": int(len(train_rows[0])),
                   "validation_files": int(len(val_files)), "files_without_image": missing},
    )


def _fusion_inputs(inputs: FrozenInputs, dataset: Dataset, label_set: Any, spec: LinkerSpec, backbone: Any,
                   store: Any, cache: Path, progress: bool, notes: List[str]) -> None:
    """File texts (description, categories) and item P18 images for the fusion heads."""
    from wikivel_bot.linker.texts import file_text
    from wikivel_bot.train.fitting import embeddings
    from wikivel_bot.types import MediaFile

    table = dataset.table
    texts = [
        file_text(MediaFile(page_id=int(p), title=t, description=d or "", categories=tuple(c or ())), spec.query_text)
        for p, t, d, c in zip(dataset.page_ids.tolist(), dataset.titles, table.column("description").to_pylist(),
                              table.column("categories").to_pylist())
    ]
    file_texts = embeddings.text_embeddings(backbone, texts, cache, name="file-texts", progress=progress)
    item_images = embeddings.named_image_embeddings(backbone, list(label_set.images), store, cache, progress=progress)
    device = backbone.device
    inputs.file_texts = to_device(file_texts.vectors, device)
    inputs.file_text_present = torch.from_numpy(file_texts.present).to(device)
    inputs.item_images = to_device(item_images.vectors, device)
    inputs.item_image_present = torch.from_numpy(item_images.present).to(device)
    with_image = int(item_images.present.sum())
    notes.append(f"fusion: {with_image} of {len(label_set.qids)} items have a P18 image in the image store")


def _open_clip_config(name: str) -> Optional[Dict[str, Any]]:
    """The open_clip model config, stored in checkpoints so a custom model can be rebuilt."""
    import open_clip

    config = open_clip.get_model_config(name)
    return dict(config) if config is not None else None
