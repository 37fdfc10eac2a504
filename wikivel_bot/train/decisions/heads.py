"""Fine-tuning a linker's heads from reviewers' decisions (docs/learning.md).

The trainable part is Naive CLIP's two heads (``linker.heads.NaiveHeads``) over frozen CLIP
embeddings: the file's image embedding and the item's text embedding. A challenger starts
from the running checkpoint's heads (or the identity heads when none runs) and is trained on
the ``train`` files of the decision records with

* the existing relaxed multi-positive contrastive loss (``losses.batch_loss``) over the
  approved pairs: every approved item of a row's file is a target, other items of the batch
  are negatives;
* plus a pairwise logistic loss over every decided pair, with the rejections as explicit
  negatives: ``BCE(scale · cos + bias, approved)``. A rejection is the hardest negative there
  is (the model ranked it high enough to be shown).

Then the cosine is calibrated into a match probability on the held-out ``calibration`` files
(Platt: ``sigmoid(a · cos + b)``, :func:`fit_probability`); the judge compares at one threshold.

Embeddings come from :func:`encode_records` (the backbone of the running linker) or, in the
simulation, straight from synthetic data: everything below it works on tensors.
"""

from __future__ import annotations

import copy
import dataclasses
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from wikivel_bot.train.fitting.losses import batch_loss


@dataclass
class DecisionTensors:
    """Decided pairs over embedding tables.

    :param files: (n_files, d) normalised image embeddings; ``page_ids`` names each row.
    :param items: (n_items, d) normalised item-text embeddings; ``qids`` names each row.
    :param pair_file, pair_item: row of each decided pair in ``files`` / ``items``.
    :param label: 1.0 approved, 0.0 rejected.
    :param split: per pair, ``train``, ``calibration`` or ``evaluation`` (its file's split).
    :param reviewer: per pair, who decided it (empty: not known); the round caps each
        reviewer's share of the evaluation and checks that a promotion survives leaving any
        one reviewer out (``learning.reviewers``).
    """

    files: torch.Tensor
    items: torch.Tensor
    page_ids: List[int]
    qids: List[str]
    pair_file: torch.Tensor
    pair_item: torch.Tensor
    label: torch.Tensor
    split: List[str]
    skipped: Dict[str, int] = field(default_factory=dict)
    reviewer: List[str] = field(default_factory=list)

    def select(self, name: str) -> torch.Tensor:
        """Indices of the pairs of one split."""
        return torch.tensor([i for i, s in enumerate(self.split) if s == name], dtype=torch.long)

    def reviewers(self) -> List[str]:
        """Who decided each pair (empty names when the records did not say)."""
        return list(self.reviewer) if len(self.reviewer) == len(self.split) else [""] * len(self.split)

    def keep(self, mask: Sequence[bool]) -> "DecisionTensors":
        """The same files and items with only the pairs ``mask`` keeps (a subclass stays itself)."""
        at = torch.tensor([i for i, k in enumerate(mask) if k], dtype=torch.long)
        who = self.reviewers()
        return dataclasses.replace(self, pair_file=self.pair_file[at], pair_item=self.pair_item[at],
                                   label=self.label[at], split=[self.split[i] for i in at.tolist()],
                                   reviewer=[who[i] for i in at.tolist()])


@dataclass(frozen=True)
class FineTuneConfig:
    epochs: int = 30
    lr: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 256
    temperature: float = 0.07
    # Weight of the pairwise term (approvals and rejections) beside the contrastive one.
    pair_weight: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class Platt:
    """``p = sigmoid(a · cos + b)``, fitted on held-out decisions."""

    a: float
    b: float

    def __call__(self, cosine: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.a * cosine + self.b)


def pair_cosines(heads: Any, data: DecisionTensors, index: torch.Tensor) -> torch.Tensor:
    """The heads' cosine of the chosen pairs (eval mode, no gradient)."""
    heads.eval()
    with torch.no_grad():
        q = F.normalize(heads.image_head(data.files[data.pair_file[index]]), dim=-1)
        e = F.normalize(heads.text_head(data.items[data.pair_item[index]]), dim=-1)
        return (q * e).sum(dim=-1)


def fine_tune(start: torch.nn.Module, data: DecisionTensors, config: FineTuneConfig) -> torch.nn.Module:
    """A copy of ``start`` trained on the ``train`` pairs (module docstring); ``start`` is untouched."""
    torch.manual_seed(config.seed)
    heads = copy.deepcopy(start).train()
    train = data.select("train")
    if train.numel() == 0:
        return heads.eval()
    pos_rows = train[data.label[train] > 0.5]
    # (file, item) of every approved training pair as one integer key, for the targets.
    positives = data.pair_file[pos_rows] * max(1, data.items.shape[0]) + data.pair_item[pos_rows]
    logit_scale = torch.nn.Parameter(torch.tensor(float(np.log(1.0 / config.temperature))))
    pair_scale = torch.nn.Parameter(torch.tensor(10.0))
    pair_bias = torch.nn.Parameter(torch.tensor(0.0))
    params = list(heads.parameters()) + [logit_scale, pair_scale, pair_bias]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator().manual_seed(config.seed)
    for _ in range(config.epochs):
        order = train[torch.randperm(train.numel(), generator=generator)]
        pos_order = pos_rows[torch.randperm(pos_rows.numel(), generator=generator)] if pos_rows.numel() else pos_rows
        steps = max(1, -(-order.numel() // config.batch_size))
        for step in range(steps):
            batch = order[step * config.batch_size:(step + 1) * config.batch_size]
            loss = config.pair_weight * _pair_loss(heads, data, batch, pair_scale, pair_bias)
            pos = pos_order[step * config.batch_size:(step + 1) * config.batch_size]
            if pos.numel() >= 2:
                loss = loss + _contrastive(heads, data, pos, positives, logit_scale)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return heads.eval()


def _pair_loss(heads: Any, data: DecisionTensors, batch: torch.Tensor, scale: torch.Tensor,
               bias: torch.Tensor) -> torch.Tensor:
    q = F.normalize(heads.image_head(data.files[data.pair_file[batch]]), dim=-1)
    e = F.normalize(heads.text_head(data.items[data.pair_item[batch]]), dim=-1)
    logits = scale * (q * e).sum(dim=-1) + bias
    return F.binary_cross_entropy_with_logits(logits, data.label[batch])


def _contrastive(heads: Any, data: DecisionTensors, pos: torch.Tensor, positives: torch.Tensor,
                 logit_scale: torch.Tensor) -> torch.Tensor:
    files, items = data.pair_file[pos], data.pair_item[pos]
    q = F.normalize(heads.image_head(data.files[files]), dim=-1)
    e = F.normalize(heads.text_head(data.items[items]), dim=-1)
    # Row a's target columns: every item of the batch that was approved for a's file.
    keys = files[:, None] * max(1, data.items.shape[0]) + items[None, :]
    targets = torch.isin(keys, positives).to(q.dtype)
    return batch_loss("contrastive", q, e, targets, items, logit_scale=logit_scale)


def fit_probability(scores: torch.Tensor, labels: torch.Tensor) -> Optional[Platt]:
    """Platt's map of ``scores`` fitted on held-out decisions with the package's one Platt fit
    (``core.verification.fit_calibration``: Newton on the log-loss with Platt's smoothed
    targets, finite on the small, separated sets of early rounds).

    :returns: None when the decisions are all of one kind (or there are none): there is no
        slope to fit, so the caller keeps the threshold it had and says so.
    """
    from wikivel_bot.core.verification import fit_calibration
    from wikivel_bot.errors import UsageError

    try:
        fitted = fit_calibration(scores.double().flatten().tolist(), [bool(y > 0.5) for y in labels.flatten().tolist()],
                                 "platt")
    except UsageError:
        return None
    return Platt(fitted.a, fitted.b)


# -- the real path: records + images through the running linker's backbone -----------------

# Images decoded and encoded at a time (a 330 px thumbnail decoded is about 300 KB).
IMAGE_BLOCK = 256


def encode_records(records: Sequence[Any], images_dir: Path, backbone: Any, item_text: str) -> DecisionTensors:
    """Embeddings of the records' files (their images in ``images_dir``) and decided items.

    :param records: ``learning.records.Record`` values with a ``split``.
    :param backbone: ``linker.backbone.encoders.Backbone`` of the running linker (frozen).
    :param item_text: the linker spec's item text template.
    Files whose image is missing or undecodable are left out (counted in ``skipped``).
    """
    from PIL import Image

    from wikivel_bot.linker.backbone.encoders import encode_images
    from wikivel_bot.linker.backbone.text_tower import encode_texts
    from wikivel_bot.linker.texts import render_item_text

    page_ids, kept, skipped = [], [], {"no image": 0}
    blocks: List[torch.Tensor] = []
    images: List[Any] = []

    def flush() -> None:
        # Decoded images are the memory: encode them a block at a time.
        if images:
            with torch.no_grad():
                blocks.append(encode_images(backbone, images).float().cpu())
            images.clear()

    for record in records:
        path = images_dir / record.image if record.image else None
        try:
            assert path is not None and path.is_file()
            with Image.open(io.BytesIO(path.read_bytes())) as img:
                images.append(img.convert("RGB"))
        except Exception:  # a missing or broken image leaves the file out, never the run
            skipped["no image"] += 1
            continue
        page_ids.append(record.page_id)
        kept.append(record)
        if len(images) >= IMAGE_BLOCK:
            flush()
    flush()
    texts: Dict[str, str] = {}
    for record in kept:
        shown = {s["qid"]: s for s in record.shown}
        for qid in (*record.positives, *record.negatives):
            entry = shown.get(qid, {})
            texts.setdefault(qid, render_item_text(item_text, str(entry.get("label") or qid),
                                                   str(entry.get("description") or "")))
    qids = sorted(texts)
    position = {q: i for i, q in enumerate(qids)}
    files = torch.cat(blocks) if blocks else torch.zeros((0, backbone.embed_dim))
    with torch.no_grad():
        items = encode_texts(backbone, [texts[q] for q in qids]).float().cpu() if qids else torch.zeros(
            (0, backbone.embed_dim))
    pair_file, pair_item, label, split, reviewer = [], [], [], [], []
    for row, record in enumerate(kept):
        for qid, y in [(q, 1.0) for q in record.positives] + [(q, 0.0) for q in record.negatives]:
            pair_file.append(row)
            pair_item.append(position[qid])
            label.append(y)
            split.append(record.split)
            reviewer.append(str(record.reviewers.get(qid, "")))
    return DecisionTensors(files, items, page_ids, qids, torch.tensor(pair_file, dtype=torch.long),
                           torch.tensor(pair_item, dtype=torch.long), torch.tensor(label), split, skipped, reviewer)


def save_challenger(path: Path, linker: Any, heads: torch.nn.Module, labelset_hash: str,
                    extra: Dict[str, Any]) -> Path:
    """The challenger as an ordinary head checkpoint (it runs like any trained head)."""
    from wikivel_bot.linker import checkpoint as ckpt
    from wikivel_bot.linker.clip import backbone_info

    text = None
    if "text_encoder" in linker.spec.trainable:
        from wikivel_bot.linker.backbone.text_tower import text_tower_state

        text = text_tower_state(linker.backbone.model)
    return ckpt.save_checkpoint(path, spec=linker.spec, backbone=backbone_info(linker.backbone), heads=heads,
                                labelset_hash=labelset_hash, text_encoder=text, extra=extra)
