"""What a cascade training run loads before its first step, and its batches.

Cached frozen CLIP embeddings (the same caches the other variants use, plus the file texts
cut to ``text_tokens`` as the linker cuts them), the frozen first stage, and each file's
first-stage top K candidates, computed once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from wikivel_bot.errors import UsageError
from wikivel_bot.linker.spec import LinkerSpec, get_spec
from wikivel_bot.linker.search import chunked_topk
from wikivel_bot.train.data.dataset import image_store, load_dataset, open_labels
from wikivel_bot.train.fitting.setup import positions_of
from wikivel_bot.train.fitting.variants import to_device


class Batch(NamedTuple):
    """One batch of files: the pair model's inputs, targets and the candidates' positions."""

    inputs: Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
    targets: torch.Tensor
    candidates: torch.Tensor


@dataclass
class CascadeData:
    """Everything the cascade loop reads (see the module docstring)."""

    spec: LinkerSpec
    dim: int
    device: torch.device
    label_set: Any
    backbone_block: Dict[str, Any]
    first_stage_linker: str
    first_stage_doc: Optional[Dict[str, Any]]
    images: torch.Tensor
    file_text: torch.Tensor
    file_text_present: torch.Tensor
    item_text: torch.Tensor
    item_image: torch.Tensor
    item_image_present: torch.Tensor
    first_queries: torch.Tensor
    first_items: torch.Tensor
    candidates: torch.Tensor
    first_scores: torch.Tensor
    truth: List[List[int]]
    truth_qids: List[List[str]]
    train_files: np.ndarray
    validation_files: np.ndarray
    test_files: np.ndarray
    data_info: Dict[str, Any] = field(default_factory=dict)
    open_clip_config: Optional[Dict[str, Any]] = None
    notes: List[str] = field(default_factory=list)

    def batch(self, rows: np.ndarray, inject: bool) -> Batch:
        """The batch of manifest ``rows``; ``inject`` puts missing true items into the lists (training)."""
        index = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(self.device)
        cands = self.candidates[index].clone()
        first = self.first_scores[index].clone()
        k = cands.shape[1]
        if inject:
            for r, row in enumerate(np.asarray(rows).tolist()):
                have = set(cands[r].tolist())
                missing = [p for p in self.truth[row] if p not in have][:k]
                for j, p in enumerate(missing):
                    slot = k - 1 - j
                    cands[r, slot] = p
                    first[r, slot] = self.first_queries[row] @ self.first_items[p]
        targets = torch.zeros_like(cands, dtype=torch.bool)
        for r, row in enumerate(np.asarray(rows).tolist()):
            truth = torch.tensor(self.truth[row], dtype=torch.long, device=self.device)
            targets[r] = torch.isin(cands[r], truth)
        files = torch.stack([self.images[index], self.file_text[index]], dim=1)
        present = self.file_text_present[index]
        file_mask = torch.stack([torch.ones_like(present), present], dim=1)
        items = torch.stack([self.item_text[cands], self.item_image[cands]], dim=2)
        item_mask = torch.stack([torch.ones_like(cands, dtype=torch.bool), self.item_image_present[cands]], dim=2)
        return Batch((files, file_mask, items, item_mask, first), targets, cands)


def prepare_cascade(config: Any) -> CascadeData:
    """Load the dataset, the caches and the first stage; take every file's top K.

    :param config: a ``cascade.CascadeTrainConfig``.
    :raises UsageError: a first stage that is not naive/zero-shot/fusion, a dataset that does not fit.
    :raises LinkerError: a checkpoint for another label set or backbone.
    """
    from wikivel_bot.linker import checkpoint as ckpt
    from wikivel_bot.linker.cascade.linker import FIRST_STAGES, first_stage_queries
    from wikivel_bot.linker.cascade.checkpoint import first_stage_doc
    from wikivel_bot.linker.cascade.text import cascade_file_text
    from wikivel_bot.linker.clip import backbone_info
    from wikivel_bot.linker.backbone.encoders import load_backbone
    from wikivel_bot.linker.heads import build_heads
    from wikivel_bot.linker.texts import render_item_text
    from wikivel_bot.train.fitting import embeddings
    from wikivel_bot.train.fitting.setup import _open_clip_config

    dataset = load_dataset(Path(config.data))
    label_set = open_labels(dataset, config.labels)
    spec = get_spec("cascade")
    backbone = load_backbone(config.model, config.pretrained, config.weights, config.device, config.threads)
    info = backbone_info(backbone)
    notes: List[str] = []
    doc = None
    heads: Any = None
    if config.first_stage:
        first_ckpt = ckpt.load_checkpoint(config.first_stage)
        first_spec = get_spec(first_ckpt.linker)
        ckpt.check_labelset(first_ckpt, label_set.content_hash)
        ckpt.check_backbone(first_ckpt, first_spec, info)
        heads = first_ckpt.build_heads()
        doc = first_stage_doc(config.first_stage)
    else:
        first_spec = get_spec(config.first_stage_linker)
        heads = build_heads(first_spec.architecture, backbone.embed_dim, first_spec.head)
        notes.append(f"untrained first stage: {first_spec.name} ranks like zero-shot (give --first-stage CKPT)")
    if first_spec.architecture not in FIRST_STAGES:
        raise UsageError(f"the cascade's first stage must be a naive, zero-shot or fusion linker, not {first_spec.name}")
    device = backbone.device
    store = image_store(dataset, config.images)
    cache = Path(config.cache_dir)
    progress = bool(config.progress)
    threads = min(16, os.cpu_count() or 2)
    images = embeddings.image_embeddings(backbone, dataset.page_ids.tolist(), dataset.titles, store, cache,
                                         dataset.digest, batch_size=64, threads=threads, progress=progress)

    def item_vectors(template: str) -> torch.Tensor:
        texts = [render_item_text(template, lab, desc) for lab, desc in zip(label_set.labels, label_set.descriptions)]
        found = embeddings.text_embeddings(backbone, texts, cache, name="item-texts", progress=progress)
        return to_device(found.vectors, device).float()

    item_text = item_vectors(spec.item_text)
    first_item_text = item_text if first_spec.item_text == spec.item_text else item_vectors(first_spec.item_text)
    table = dataset.table
    file_texts = [cascade_file_text(t, d or "", c or (), config.text_order) for t, d, c in zip(
        dataset.titles, table.column("description").to_pylist(), table.column("categories").to_pylist())]
    file_text, file_present = _file_text_embeddings(backbone, file_texts, config.text_tokens, cache)
    item_images = embeddings.named_image_embeddings(backbone, list(label_set.images), store, cache, progress=progress)
    image = to_device(images.vectors, device).float()
    item_image = to_device(item_images.vectors, device).float()
    item_image_present = torch.from_numpy(item_images.present).to(device)
    file_text, file_present = file_text.to(device), file_present.to(device)
    with torch.no_grad():
        # Exactly what the linker computes (``first_stage_queries``; the index of its ClipLinker).
        heads = heads.to(device).eval() if heads is not None else None
        first_queries = first_stage_queries(first_spec.architecture, heads, image, file_text, file_present)
        if first_spec.architecture == "naive":
            first_items = F.normalize(heads.text_head(first_item_text), dim=-1)
        elif first_spec.architecture == "fusion":
            mask = torch.stack([torch.ones_like(item_image_present), item_image_present], dim=1)
            first_items = F.normalize(heads.entity_head(torch.stack([first_item_text, item_image], dim=1), mask), dim=-1)
        else:
            first_items = first_item_text
        k = min(config.candidates, len(label_set.qids))
        first_scores, candidates = chunked_topk(first_queries, first_items, k)
    present = images.present
    truth = positions_of(label_set, dataset.items())

    def rows(split: str) -> np.ndarray:
        return np.asarray([r for r in dataset.split_rows(split).tolist() if present[r]], dtype=np.int64)

    if backbone.random_weights:
        notes.append("random backbone weights (--weights random): numbers measure the heads only, not CLIP")
    if dataset.card.get("synthetic"):
        notes.append("synthetic dataset: nothing here is Commons data")
    return CascadeData(
        spec=spec, dim=backbone.embed_dim, device=device, label_set=label_set, backbone_block=info,
        first_stage_linker=first_spec.name, first_stage_doc=doc, images=image,
        file_text=file_text, file_text_present=file_present, item_text=item_text,
        item_image=item_image, item_image_present=item_image_present,
        first_queries=first_queries, first_items=first_items, candidates=candidates.to(device),
        first_scores=first_scores.to(device), truth=truth, truth_qids=dataset.items(),
        train_files=rows("train"), validation_files=rows("validation"), test_files=rows("test"),
        data_info={"path": str(dataset.path), "manifest_sha256": dataset.digest,
                   "synthetic": bool(dataset.card.get("synthetic")), "labels_path": str(label_set.path or "")},
        open_clip_config=_open_clip_config(backbone.model_name), notes=notes,
    )


def _file_text_embeddings(backbone: Any, texts: List[str], max_tokens: int, cache: Path) -> Tuple[torch.Tensor, torch.Tensor]:
    """File texts encoded exactly as the cascade linker encodes them (cut to ``max_tokens``), cached."""
    from wikivel_bot.linker.cascade.linker import encode_file_texts
    from wikivel_bot.linker.index import key_digest
    from wikivel_bot.train.fitting import embeddings

    key = {**embeddings.backbone_key(backbone), "kind": "cascade-file-texts", "tokens": max_tokens,
           "texts": key_digest({"texts": texts}), "n": len(texts)}

    def build(vectors: np.ndarray, present: np.ndarray) -> None:
        for start in range(0, len(texts), 4096):
            out, ok = encode_file_texts(backbone, texts[start:start + 4096], max_tokens)
            vectors[start:start + len(out)] = out.float().cpu().numpy().astype(np.float16)
            present[start:start + len(out)] = ok.cpu().numpy()

    found = embeddings.cached(cache, "cascade-file-texts", key, len(texts), backbone.embed_dim, build)
    return torch.from_numpy(np.array(found.vectors)).float(), torch.from_numpy(np.array(found.present))
