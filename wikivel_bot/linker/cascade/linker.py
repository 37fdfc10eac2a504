"""The cascade linker (seed 004 §3.2.2): a fast first stage proposes, a pair model re-ranks.

1. The first stage (naive-mlp by default, zero-shot or fusion) encodes the image and takes the
   top ``cascade.candidates`` (K, default 50) items from its label index, as it would alone. A
   fusion first stage reads the cascade's own file text (step 2) as its text token, so the
   file's text is encoded once.
2. The file's text — cleaned file name, descriptive categories, description, in the order
   its checkpoint was trained with (``cascade.text``) — is encoded by the same CLIP text
   tower, cut to ``cascade.text_tokens`` tokens so its cost stays a fraction of the image's.
3. The pair model (``pair.py``) scores each (file, candidate) from the image, the file text,
   the item's text and its P18 image, with cross-attention, and combines that with the first
   stage's cosine: the final ranking is by ``score = z / a`` (first-stage cosine units).
4. Every hit carries the file's attentive weight α (the image's share) and, when the
   checkpoint holds a calibration and ``cascade.verifier`` is on, the verifier's calibrated
   match probability ``P(match | z)``.

Item side: besides the first stage's own index, two more cached indexes hold each item's raw
CLIP text embedding and its P18 image embedding (zero where it has none).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from wikivel_bot.config import CascadeSettings, LinkerSettings
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.core.verification import Calibration
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.cascade import checkpoint as cckpt
from wikivel_bot.linker import checkpoint as ckpt
from wikivel_bot.linker.base import IndexInfo, ItemImageLoader, LinkerDescription, OutsideItem, Query
from wikivel_bot.linker.cascade.text import TEXT_ORDER, media_text
from wikivel_bot.linker.clip import RANDOM_WARNING, ClipLinker, backbone_info, load_inference_backbone
from wikivel_bot.linker.backbone.encoders import Backbone, encode_images, query_images, query_rows
from wikivel_bot.linker.backbone.text_tower import encode_tokens, length_groups, token_lengths
from wikivel_bot.linker.heads import build_heads
from wikivel_bot.linker.backbone.images import decode_item_images
from wikivel_bot.linker.index import INDEX_FORMAT, load_or_build
from wikivel_bot.linker.cascade.pair import PairModel, build_pair_model
from wikivel_bot.linker.backbone.precision import cache_identity
from wikivel_bot.linker.spec import LinkerSpec, get_spec
from wikivel_bot.linker.search import chunked_topk
from wikivel_bot.linker.texts import render_item_text
from wikivel_bot.types import MediaFile

log = logging.getLogger(__name__)

FIRST_STAGES = ("naive", "zero-shot", "fusion")
# Backbone precisions the pair model runs on: its calibration was fitted on fp32 embeddings,
# and bf16 moves the probabilities far less than a threshold cares about
# (tests/test_cascade_learning.py measures it); int8's quantised layers move them more.
PAIR_PRECISIONS = ("fp32", "bf16")
INT8_REASON = "the pair model was fitted on fp32 embeddings and int8 moves them more than its calibration allows"
ITEM_BLOCK = 65_536


@dataclass(frozen=True)
class Hit:
    """One re-ranked candidate: label-set position, score, the file's α, the verifier's P(match)."""

    position: int
    score: float
    alpha: float
    probability: Optional[float] = None
    first_score: float = 0.0


def short_tokens(tokenizer: Any, texts: Sequence[str], max_tokens: int) -> torch.Tensor:
    """Token ids cut to ``max_tokens`` positions, keeping an end-of-text token in each row.

    CLIP pools the text at its end-of-text token (the highest id in a row), so a cut row gets
    one in its last position.
    """
    tokens = tokenizer(list(texts))
    if tokens.shape[1] <= max_tokens:
        return tokens
    eot = tokens.max(dim=1).values
    cut = tokens[:, :max_tokens].clone()
    lost = (cut == eot.unsqueeze(1)).sum(dim=1) == 0
    cut[lost, -1] = eot[lost]
    return cut


@torch.inference_mode()
def encode_file_texts(backbone: Backbone, texts: Sequence[str], max_tokens: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """(normalised embeddings (n, d), present (n,) bool) of file texts; '' is absent (zeros).

    Texts are encoded in groups of similar token length (``text_tower.length_groups``): a file
    with a bare name is not padded to the ``max_tokens`` of a neighbour with a long
    description. The text tower is causal, so a group's padding never changes an embedding.
    """
    out = torch.zeros((len(texts), backbone.embed_dim), device=backbone.device)
    present = torch.tensor([bool(t.strip()) for t in texts], dtype=torch.bool, device=backbone.device)
    rows = [i for i, t in enumerate(texts) if t.strip()]
    if not rows:
        return out, present
    tokens = short_tokens(backbone.tokenizer, [texts[i] for i in rows], max_tokens)
    for group in length_groups(token_lengths(tokens).tolist()):
        with backbone.autocast():
            features = encode_tokens(backbone, tokens[group])
        out[[rows[i] for i in group]] = F.normalize(features.float(), dim=-1)
    return out, present


def first_stage_queries(architecture: str, heads: Any, image: torch.Tensor, text: torch.Tensor,
                        present: torch.Tensor) -> torch.Tensor:
    """A first stage's query embeddings from raw embeddings (the linker and training share it).

    :param architecture: ``naive``, ``zero-shot`` or ``fusion``; :param heads: its heads (None for zero-shot).
    :param image: (n, d) normalised image embeddings; :param text: (n, d) file text embeddings,
        :param present: (n,) bool where the file has text (fusion reads them).
    """
    if architecture == "naive":
        return F.normalize(heads.image_head(image), dim=-1)
    if architecture == "fusion":
        mask = torch.stack([torch.ones_like(present), present], dim=1)
        return F.normalize(heads.query_head(torch.stack([image, text], dim=1), mask), dim=-1)
    return image


def check_first_stage(name: str) -> LinkerSpec:
    """The spec of a first stage the cascade can use.

    :raises LinkerError: an unknown linker's message from the registry, or one of another architecture.
    """
    first_spec = get_spec(name)
    if first_spec.architecture not in FIRST_STAGES:
        raise LinkerError(f"the cascade's first stage must be a zero-shot, naive or fusion linker, not {name!r}")
    return first_spec


def build_cascade_linker(
    spec: LinkerSpec, settings: LinkerSettings, cascade: Optional[CascadeSettings] = None, *,
    item_image_loader: Optional[ItemImageLoader] = None, backbone: Optional[Backbone] = None,
) -> "CascadeLinker":
    """Load the backbone, the first stage and the pair model (from ``settings.checkpoint``).

    :param spec: the cascade config.
    :param settings: model, weights, checkpoint (a cascade checkpoint), device, batch size.
    :param cascade: candidates K, text tokens, first stage, verifier switch (defaults when None).
    :param item_image_loader: P18 images for the item side (optional).
    :param backbone: an already loaded backbone to share (the verifier beside another linker);
        None loads one from ``settings``.
    :raises LinkerError: weights, checkpoint, device problems; a first stage it cannot use.
    """
    cascade = cascade or CascadeSettings()
    if cascade.candidates < 1 or cascade.text_tokens < 2:
        raise LinkerError(f"cascade.candidates must be ≥ 1 and cascade.text_tokens ≥ 2 "
                          f"(got {cascade.candidates} and {cascade.text_tokens})")
    if backbone is None:
        # The precision a first stage of these settings runs in (bf16 where ``auto`` picks it).
        backbone = load_inference_backbone(settings, PAIR_PRECISIONS, INT8_REASON)
    info = backbone_info(backbone)
    warnings: List[str] = [RANDOM_WARNING] if backbone.random_weights else []
    checkpoint = None
    first_ckpt = None
    if settings.checkpoint:
        checkpoint = cckpt.load_cascade_checkpoint(settings.checkpoint)
        cckpt.check_backbone(checkpoint, info)
        pair = checkpoint.build_pair()
        first_name = checkpoint.first_stage_linker
        first_ckpt = checkpoint.first_stage_checkpoint()
        if checkpoint.text_tokens != cascade.text_tokens:
            # The pair model reads file texts cut as in its training: a text cut elsewhere
            # (cascade.text_tokens is the length for untrained models and for training) would
            # feed it embeddings it never saw, and its calibration would no longer hold.
            log.info("cascade: file texts cut to %d tokens as %s was trained (cascade.text_tokens %d is for training)",
                     checkpoint.text_tokens, checkpoint.path, cascade.text_tokens)
            cascade = replace(cascade, text_tokens=checkpoint.text_tokens)
    else:
        pair = build_pair_model(backbone.embed_dim, spec.head)
        first_name = cascade.first_stage
        warnings.append(f"untrained pair model: no --checkpoint for {spec.name}, so it ranks like its first stage")
    first_spec = check_first_stage(first_name)
    heads = None
    if first_spec.has_head:
        if first_ckpt is not None:
            ckpt.check_backbone(first_ckpt, first_spec, info)
            heads = first_ckpt.build_heads()
        else:
            heads = build_heads(first_spec.architecture, backbone.embed_dim, first_spec.head)
            warnings.append(f"untrained first stage: {first_name} has no head weights, so it ranks like zero-shot")
        assert heads is not None
        heads = heads.to(backbone.device).eval()
    first = ClipLinker(first_spec, replace(settings, name=first_name, checkpoint=""), backbone, heads, first_ckpt, (),
                       item_image_loader if first_spec.uses_item_images else None)
    return CascadeLinker(spec, settings, cascade, backbone, first, pair.to(backbone.device).eval(), checkpoint,
                         tuple(warnings), item_image_loader)


class CascadeLinker:
    """See the module docstring. Build with :func:`build_cascade_linker`."""

    def __init__(self, spec: LinkerSpec, settings: LinkerSettings, cascade: CascadeSettings, backbone: Backbone,
                 first: ClipLinker, pair: PairModel, checkpoint: Optional[cckpt.CascadeCheckpoint],
                 warnings: Tuple[str, ...], item_image_loader: Optional[ItemImageLoader] = None) -> None:
        self.spec = spec
        self.settings = settings
        self.cascade = cascade
        self.backbone = backbone
        self.first = first
        self.pair = pair
        self.checkpoint = checkpoint
        self.item_image_loader = item_image_loader
        self._warnings = warnings
        self._label_set: Optional[LabelSetView] = None
        self._item_text: Any = None
        self._item_image: Any = None
        self._item_image_present: Any = None
        self._notes: Tuple[str, ...] = ()

    @property
    def calibration(self) -> Optional[Calibration]:
        """The verifier's calibration map, when the checkpoint has one and it is switched on."""
        if self.checkpoint is None or not self.cascade.verifier:
            return None
        return self.checkpoint.calibration

    @property
    def description(self) -> LinkerDescription:
        first = self.first.description
        # The first stage's own checkpoint lives inside the cascade's: one digest names both.
        version = f"{self.spec.name}/v{self.spec.version} first:{first.version.split(' ckpt:')[0]} K={self.cascade.candidates}"
        if self.checkpoint is not None:
            version += f" ckpt:{self.checkpoint.digest[:12]}"
        return replace(first, name=self.spec.name, version=version,
                       checkpoint=self.checkpoint.path if self.checkpoint else "",
                       warnings=self._warnings + self._notes)

    @property
    def label_set(self) -> Optional[LabelSetView]:
        return self._label_set

    @property
    def batch_size(self) -> int:
        return self.first.batch_size

    @property
    def query_text_fields(self) -> Tuple[str, ...]:
        return ("title", "description", "categories")

    def prepare_image(self, image: Any) -> torch.Tensor:
        """The model input for a decoded query image, made in ``link_files``' decode threads
        as for the first stage alone (same backbone, same preprocessing)."""
        return self.first.prepare_image(image)

    @property
    def text_order(self) -> Tuple[str, ...]:
        """The order of the file text's parts: as the checkpoint was trained, else the default."""
        return self.checkpoint.text_order if self.checkpoint is not None else TEXT_ORDER

    def query_text(self, media: MediaFile) -> str:
        """The file text this linker reads (see ``cascade.text``), its parts in the order the
        pair model was trained with; ``link_files`` uses it."""
        return media_text(media, self.text_order)

    def attach(self, label_set: LabelSetView, cache_dir: str, progress: bool = False) -> IndexInfo:
        """Attach the first stage, then load or build the item text and item image indexes."""
        if self.checkpoint is not None:
            cckpt.check_labelset(self.checkpoint, label_set.content_hash)
        info = self.first.attach(label_set, cache_dir, progress)
        n = len(label_set.qids)
        dim = self.backbone.embed_dim
        base = {"format": INDEX_FORMAT, "model": self.backbone.model_name, "model_config": self.backbone.config_digest,
                "weights": self.backbone.weights, "labelset": label_set.content_hash, "items": n,
                # Like the first stage's index: reused only by the precision that built it.
                "precision": self.backbone.precision, **cache_identity(self.backbone.precision)}
        texts = load_or_build(cache_dir, "cascade-item-text", {**base, "part": "item-text", "template": self.spec.item_text},
                              n, dim, lambda out: self._encode_item_texts(label_set, out))
        loader_id = str(getattr(self.item_image_loader, "cache_id", None) or "none") if self.item_image_loader else "none"
        images = load_or_build(cache_dir, "cascade-item-image", {**base, "part": "item-image", "loader": loader_id},
                               n, dim, lambda out: self._encode_item_images(label_set, out))
        self._item_text = torch.from_numpy(np.asarray(texts.embeddings, dtype=np.float32)).to(self.backbone.device)
        image = torch.from_numpy(np.asarray(images.embeddings, dtype=np.float32)).to(self.backbone.device)
        self._item_image = image
        self._item_image_present = image.abs().sum(dim=1) > 0
        self._label_set = label_set
        notes = list(info.notes)
        if self.item_image_loader is None:
            notes.append("item images not used: no item image source, the pair model sees item text only")
        self._notes = tuple(notes)
        return replace(info, notes=self._notes)

    @torch.inference_mode()
    def _encode_item_texts(self, label_set: LabelSetView, out: np.ndarray) -> None:
        from wikivel_bot.linker.backbone.text_tower import encode_texts

        n = len(label_set.qids)
        for start in range(0, n, ITEM_BLOCK):
            stop = min(start + ITEM_BLOCK, n)
            texts = [render_item_text(self.spec.item_text, label_set.labels[i], label_set.descriptions[i])
                     for i in range(start, stop)]
            out[start:stop] = encode_texts(self.backbone, texts).float().cpu().numpy().astype(np.float16)

    @torch.inference_mode()
    def _encode_item_images(self, label_set: LabelSetView, out: np.ndarray) -> None:
        out[:] = 0
        if self.item_image_loader is None:
            return
        names = {i: name for i, name in enumerate(label_set.images) if name}
        for start in range(0, len(names), 4096):
            block = list(names.items())[start:start + 4096]
            rows, decoded = decode_item_images(self.item_image_loader, block, self.backbone.image_size)
            if rows:
                vectors = encode_images(self.backbone, decoded, self.settings.batch_size)
                out[rows] = vectors.float().cpu().numpy().astype(np.float16)

    def search(self, queries: Sequence[Query], k: int) -> List[List[Tuple[int, float]]]:
        """Top ``k`` (item position, score) per query, best first."""
        return [[(h.position, h.score) for h in hits] for hits in self.search_details(queries, k)]

    @torch.inference_mode()
    def search_details(self, queries: Sequence[Query], k: int) -> List[List[Hit]]:
        """Top ``k`` :class:`Hit` per query: re-ranked, with α and the verifier's probability."""
        if not queries:
            return []
        image, text, present, first = self._encode(queries)
        n = len(self._label_set.qids) if self._label_set is not None else 0
        first_scores, index = chunked_topk(first, self.first._items, min(n, max(k, self.cascade.candidates)))
        out = self._pair_scores(image, text, present, index.to(image.device), first_scores.to(image.device))
        top = torch.argsort(out.scores, dim=1, descending=True)[:, :k]
        # Whole rows to Python at once, not one tensor element per call.
        positions, scores, logits, firsts = (torch.gather(t, 1, top.to(t.device)).tolist()
                                             for t in (index, out.scores, out.logits, first_scores))
        alphas = out.alpha[:, 0].tolist()
        calibration = self.calibration
        results: List[List[Hit]] = []
        for row in range(len(queries)):
            alpha = round(alphas[row], 4)
            results.append([Hit(position, score, alpha,
                                round(calibration.probability(z), 4) if calibration is not None else None, first)
                            for position, score, z, first in zip(positions[row], scores[row], logits[row], firsts[row])])
        return results

    @torch.inference_mode()
    def verify(self, queries: Sequence[Query], positions: Sequence[Sequence[int]]) -> List[List[float]]:
        """The pair model's logit ``z`` for given (file, item) pairs: the verifier beside any linker.

        :param queries: the files, with this linker's :meth:`query_text` as their text.
        :param positions: per query, the label-set positions of the items to score (any number).
        :returns: per query, one logit per position, in the same order.
        """
        if not queries:
            return []
        image, text, present, first = self._encode(queries)
        width = max(1, max(len(p) for p in positions))
        # Rows are padded to one width with the first item; the padding's logits are dropped.
        index = torch.tensor([list(p) + [p[0] if p else 0] * (width - len(p)) for p in positions],
                             dtype=torch.long, device=image.device)
        items = self._first_items(index)
        first_scores = torch.einsum("bd,bkd->bk", first, items)
        out = self._pair_scores(image, text, present, index, first_scores)
        return [out.logits[row, :len(p)].tolist() for row, p in enumerate(positions)]

    def score_items(self, queries: Sequence[Query], positions: Sequence[Sequence[int]]) -> List[List[float]]:
        """The re-ranked score :meth:`search` gives, of given label-set items (``evidence_scores``)."""
        from wikivel_bot.linker.cascade.evidence_scores import score_positions

        return score_positions(self, queries, positions)

    def score_outside(self, queries: Sequence[Query], items: Sequence[Sequence[OutsideItem]]) -> List[List[float]]:
        """The same score for items outside the label set, encoded on the fly (``evidence_scores``)."""
        from wikivel_bot.linker.cascade.evidence_scores import score_outside

        return score_outside(self, queries, items)

    @torch.inference_mode()
    def file_features(self, queries: Sequence[Query]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(image, file text, text present, first-stage query) of ``queries``, as the pair
        model reads them: for training it on reviewers' decisions (``train.decisions.pair``)."""
        return self._encode(queries)

    @torch.inference_mode()
    def item_features(self, positions: Sequence[int]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(item text, item image, image present, first-stage item) of label-set ``positions``."""
        if self._item_text is None:
            raise LinkerError(f"linker {self.spec.name}: attach a label set before reading its items")
        index = torch.tensor(list(positions), dtype=torch.long, device=self._item_text.device)
        first = self._first_items(index.unsqueeze(0))[0]
        return self._item_text[index], self._item_image[index], self._item_image_present[index], first

    def _encode(self, queries: Sequence[Query]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(image, file text, text present, first-stage query) embeddings of ``queries``."""
        if self._item_text is None or self._label_set is None:
            raise LinkerError(f"linker {self.spec.name}: attach a label set before searching")
        # Both come from the queries' caches when the linker this one verifies computed them.
        image = query_images(self.backbone, queries, self.settings.batch_size)
        key = ("file-text", id(self.backbone), self.cascade.text_tokens)
        text = query_rows(queries, key, lambda todo: encode_file_texts(
            self.backbone, [q.text for q in todo], self.cascade.text_tokens)[0])
        present = torch.tensor([bool(q.text.strip()) for q in queries], dtype=torch.bool, device=text.device)
        first = first_stage_queries(self.first.spec.architecture, self.first.heads, image, text, present)
        return image, text, present, first

    def _first_items(self, index: torch.Tensor) -> torch.Tensor:
        """The first stage's item embeddings at ``index`` (B, K) as (B, K, d) fp32 (the index may be fp16, mapped)."""
        items = self.first._items
        flat = index.flatten()
        if isinstance(items, torch.Tensor):
            rows = items[flat.to(items.device)]
        else:
            rows = torch.from_numpy(np.asarray(items[flat.cpu().numpy()]))
        return rows.float().to(index.device).reshape(*index.shape, -1)

    def _pair_scores(self, image: torch.Tensor, text: torch.Tensor, present: torch.Tensor, index: torch.Tensor,
                     first_scores: torch.Tensor) -> Any:
        """The pair model's output for each file's candidates ``index`` (B, K)."""
        items = torch.stack([self._item_text[index], self._item_image[index]], dim=2)
        item_mask = torch.stack([torch.ones_like(index, dtype=torch.bool), self._item_image_present[index]], dim=2)
        return self._pair_out(image, text, present, items, item_mask, first_scores)

    def _pair_out(self, image: torch.Tensor, text: torch.Tensor, present: torch.Tensor, items: torch.Tensor,
                  item_mask: torch.Tensor, first_scores: torch.Tensor) -> Any:
        """The pair model over files (image, text) and candidate rows ``items`` (B, K, 2, d)."""
        files = torch.stack([image, text], dim=1)
        file_mask = torch.stack([torch.ones_like(present), present], dim=1)
        return self.pair(files, file_mask, items, item_mask, first_scores)
