"""The CLIP-based linkers: zero-shot, Naive CLIP (MLP heads, optionally a tuned text encoder)
and CLIP Fusion, all over one open_clip backbone.

=============  ======================================  ==========================================
architecture   query side (a Commons file)              item side (a Wikidata item, in the index)
=============  ======================================  ==========================================
zero-shot      CLIP image embedding                     CLIP text embedding of the item text
naive          image head(image embedding)              text head(text embedding of the item text)
fusion         query head([image, file text])           entity head([item text, item image])
=============  ======================================  ==========================================

Every embedding is L2-normalised, so a dot product is the cosine the paper ranks by.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from wikivel_bot.config import LinkerSettings
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker import checkpoint as ckpt
from wikivel_bot.linker.backbone import precision
from wikivel_bot.linker.base import IndexInfo, ItemImageLoader, LinkerDescription, OutsideItem, Query
from wikivel_bot.linker.backbone.encoders import (
    Backbone,
    encode_images,
    image_batch_size,
    prepare_image,
    query_images,
    query_rows,
)
from wikivel_bot.linker.backbone.text_tower import encode_texts
from wikivel_bot.linker.heads import build_heads
from wikivel_bot.linker.backbone.images import decode_item_images
from wikivel_bot.linker.index import INDEX_FORMAT, load_or_build
from wikivel_bot.linker.spec import LinkerSpec
from wikivel_bot.linker.search import chunked_topk
from wikivel_bot.linker.texts import render_item_text
from wikivel_bot.linker.backbone.tower import load_tower
# The backbone loading lives in clip_backbone; backbone_info and load_inference_backbone are
# imported from here by the cascade, training and tests, so they stay importable here.
from wikivel_bot.linker.clip_backbone import (  # noqa: F401
    backbone_info,
    choose_precision,
    full_backbone,
    image_tower_key,
    load_inference_backbone,
)


# Items encoded per block while building an index: texts are sorted by length within a block,
# and only one block's fp32 embeddings are held at a time (2.3M × 512 fp32 would be 4.7 GB).
BUILD_BLOCK = 65_536
# On CPU an index up to this size is kept in memory as fp32 (converting fp16 chunks for every
# search costs more than the search); larger ones stay memory-mapped.
CPU_FP32_BYTES = 1 << 30

RANDOM_WARNING = "random weights (--weights random): the backbone is untrained, suggestions are meaningless"
# Naive CLIP's item text (§4.1), which the paper's zero-shot row encodes as is.
PAPER_ITEM_TEXTS = ("{label}, {description}", "{label}")


def build_clip_linker(
    spec: LinkerSpec, settings: LinkerSettings, *, item_image_loader: Optional[ItemImageLoader] = None
) -> ClipLinker:
    """Load the backbone and the heads (from ``settings.checkpoint`` when given).

    Zero-shot and naive linkers on CPU start from the exported image tower when one is
    cached (``backbone/tower.py``: no open_clip import); the full model is then built only if
    something needs it. Every other start builds it the ordinary way and exports the tower
    for the next one.

    :param spec: the variant (zero-shot, naive, fusion architecture).
    :param settings: model, pretrained, weights, checkpoint, device, threads, batch_size.
    :param item_image_loader: item images for fusion's Wikidata side (optional).
    :raises LinkerError: weights, checkpoint or device problems.
    """
    requested = precision.validate(settings.precision)  # a typo fails before the model loads
    choice = choose_precision(settings, requested)
    checkpoint = ckpt.load_checkpoint(settings.checkpoint) if spec.has_head and settings.checkpoint else None
    key = image_tower_key(spec, settings, choice)

    def full() -> Backbone:
        return full_backbone(spec, settings, choice, checkpoint, key)

    backbone = load_tower(key, settings.cache_dir, choice, settings.threads, full) or full()
    warnings: List[str] = []
    if backbone.random_weights:
        warnings.append(RANDOM_WARNING)
    heads = None
    if spec.has_head:
        if checkpoint is not None:
            ckpt.check_backbone(checkpoint, spec, backbone_info(backbone))
            heads = checkpoint.build_heads()
        else:
            heads = build_heads(spec.architecture, backbone.embed_dim, spec.head)
            like = "zero-shot" if spec.architecture == "naive" else "the mean of its CLIP embeddings"
            warnings.append(f"untrained head: no --checkpoint for {spec.name}, so it ranks like {like}")
        assert heads is not None
        heads = heads.to(backbone.device).eval()
    elif settings.checkpoint:
        warnings.append(f"checkpoint ignored: linker {spec.name} has no head")
    if spec.item_text not in PAPER_ITEM_TEXTS:
        # Named wherever the linker's warnings are shown, so a prompt is never silent.
        warnings.append(f"item text prompt {spec.item_text!r} (the paper encodes '{{label}}, {{description}}' "
                        "without a prompt)")
    return ClipLinker(spec, settings, backbone, heads, checkpoint, tuple(warnings), item_image_loader)


class ClipLinker:
    """A CLIP-based linker; see the module docstring. Build with :func:`build_clip_linker`."""

    def __init__(
        self,
        spec: LinkerSpec,
        settings: LinkerSettings,
        backbone: Backbone,
        heads: Optional[torch.nn.Module],
        checkpoint: Optional[ckpt.Checkpoint],
        warnings: Tuple[str, ...],
        item_image_loader: Optional[ItemImageLoader] = None,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.backbone = backbone
        # NaiveHeads or FusionHeads (None for zero-shot); Any so their sub-heads type-check.
        self.heads: Any = heads
        self.checkpoint = checkpoint
        self.item_image_loader = item_image_loader
        self._warnings = warnings
        self._label_set: Optional[LabelSetView] = None
        self._items: Any = None
        self._index_notes: Tuple[str, ...] = ()
        # Items with a P18 name, and those whose image was encoded, in the last index build.
        self._item_images = [0, 0]

    @property
    def description(self) -> LinkerDescription:
        b = self.backbone
        if b.random_weights:
            weights = "random"
        elif b.weights.startswith("file:"):
            # A local file: the tag it claims plus its fingerprint, so two files differ.
            weights = f"{b.pretrained or 'file'}@{b.weights.rsplit(':', 1)[-1][:8]}"
        else:
            weights = b.pretrained
        version = f"{self.spec.name}/v{self.spec.version} {b.model_name}:{weights}"
        if self.checkpoint is not None:
            version += f" ckpt:{self.checkpoint.digest[:12]}"
        return LinkerDescription(
            name=self.spec.name,
            version=version,
            model=b.model_name,
            pretrained=b.pretrained,
            weights=b.weights,
            random_weights=b.random_weights,
            checkpoint=self.checkpoint.path if self.checkpoint else "",
            device=str(b.device),
            warnings=self._warnings + self._index_notes,
            precision=b.precision,
            precision_reason=b.precision_reason,
        )

    @property
    def label_set(self) -> Optional[LabelSetView]:
        return self._label_set

    @property
    def batch_size(self) -> int:
        return image_batch_size(self.backbone, self.settings.batch_size)

    @property
    def query_text_fields(self) -> Tuple[str, ...]:
        return self.spec.query_text

    def prepare_image(self, image: Any) -> torch.Tensor:
        """The model input for a decoded query image (``link_files`` runs this in its decode
        threads, so preprocessing overlaps with encoding)."""
        return prepare_image(self.backbone, image)

    def concurrent_batches(self) -> int:
        """Batches ``link_files`` may link at once (``parallel_batches``): on CPU one per torch
        thread, each on one thread (the forward pass, the search and the label set are
        read-only); on CUDA one, where the device is the shared resource."""
        return 1 if self.backbone.on_cuda else torch.get_num_threads()

    def index_key(self, label_set: LabelSetView) -> dict:
        """Everything the item embeddings depend on (the label index cache key)."""
        loader = self.item_image_loader if self.spec.uses_item_images else None
        return {
            "format": INDEX_FORMAT,
            "linker": self.spec.name,
            "spec": self.spec.digest(),
            "model": self.backbone.model_name,
            "model_config": self.backbone.config_digest,
            # bf16 / int8 item embeddings differ from fp32 ones in the last digits: an index
            # is reused only by the precision that built it.
            "precision": self.backbone.precision,
            **precision.cache_identity(self.backbone.precision),
            "weights": self.backbone.weights,
            "checkpoint": self.checkpoint.digest if self.checkpoint else "",
            "labelset": label_set.content_hash,
            "items": len(label_set.qids),
            "item_images": _loader_id(loader),
        }

    def attach(self, label_set: LabelSetView, cache_dir: str, progress: bool = False) -> IndexInfo:
        """Load or build the label index for ``label_set`` (see ``index.py``)."""
        if self.checkpoint is not None:
            ckpt.check_labelset(self.checkpoint, label_set.content_hash)
        n = len(label_set.qids)
        # The directory names the backbone and precision (the digest alone says nothing to
        # someone looking at the cache).
        cached = load_or_build(
            cache_dir, index_name(self.spec.name, self.backbone), self.index_key(label_set), n, self.backbone.embed_dim,
            lambda out: self._encode_items(label_set, out, progress),
        )
        self._items = self._place(cached.embeddings)
        self._label_set = label_set
        notes = []
        if self.spec.uses_item_images and self.item_image_loader is None:
            notes.append("item images not used: no item image source, the item side is text only")
        elif self.spec.uses_item_images and not cached.reused:
            named, used = self._item_images
            notes.append(f"item images: {used} of {named} P18 images encoded"
                         + (f"; {named - used} missing or broken, those items are text only" if named > used else ""))
        self._index_notes = tuple(notes)
        return IndexInfo(
            items=n, dim=self.backbone.embed_dim, path=str(cached.path), reused=cached.reused,
            build_seconds=float(cached.manifest.get("build_seconds", 0.0)), notes=self._index_notes,
        )

    def _place(self, embeddings: np.ndarray) -> Any:
        device = self.backbone.device
        if device.type == "cuda":
            return torch.from_numpy(np.ascontiguousarray(embeddings)).to(device)
        if embeddings.size * 4 <= CPU_FP32_BYTES:
            return torch.from_numpy(np.asarray(embeddings, dtype=np.float32))
        return embeddings

    @torch.inference_mode()
    def _encode_items(self, label_set: LabelSetView, out: np.ndarray, progress: bool) -> None:
        from tqdm import tqdm

        n = len(label_set.qids)
        labels, descriptions = label_set.labels, label_set.descriptions
        bar = tqdm(total=n, desc=f"label index ({self.spec.name})", unit="item", disable=None if progress else True)
        try:
            for start in range(0, n, BUILD_BLOCK):
                stop = min(start + BUILD_BLOCK, n)
                texts = [render_item_text(self.spec.item_text, labels[i], descriptions[i]) for i in range(start, stop)]
                text = encode_texts(self.backbone, texts, progress=bar)
                if self.spec.architecture == "naive":
                    assert self.heads is not None
                    text = F.normalize(self.heads.text_head(text), dim=-1)
                elif self.spec.architecture == "fusion":
                    text = self._fuse_items(label_set.images[start:stop], text)
                out[start:stop] = text.float().cpu().numpy().astype(np.float16)
        finally:
            bar.close()

    def _fuse_items(self, images: Sequence[str], text: torch.Tensor, count: bool = True) -> torch.Tensor:
        """The entity head over the items' text rows and their P18 images (``images``: one
        file name or '' per row); ``count``: tally them for the index notes."""
        assert self.heads is not None
        image = torch.zeros_like(text)
        present = torch.zeros((len(images), 2), dtype=torch.bool, device=text.device)
        present[:, 0] = True
        if self.item_image_loader is not None:
            names = {i: name for i, name in enumerate(images) if name}
            rows, decoded = decode_item_images(self.item_image_loader, names.items(), self.backbone.image_size)
            if count:
                self._item_images[0] += len(names)
                self._item_images[1] += len(rows)
            if rows:
                index = torch.tensor(rows, device=text.device)
                image[index] = encode_images(self.backbone, decoded, self.settings.batch_size)
                present[index, 1] = True
        tokens = torch.stack([text, image], dim=1)
        return F.normalize(self.heads.entity_head(tokens, present), dim=-1)

    @torch.inference_mode()
    def encode_queries(self, queries: Sequence[Query]) -> torch.Tensor:
        """Normalised query embeddings (len(queries), dim) on the device."""
        image = query_images(self.backbone, queries, self.settings.batch_size)
        if self.spec.architecture == "naive":
            assert self.heads is not None
            return F.normalize(self.heads.image_head(image), dim=-1)
        if self.spec.architecture == "fusion":
            assert self.heads is not None
            texts = [q.text for q in queries]
            text = encode_texts(self.backbone, [t or "" for t in texts])
            present = torch.tensor([[True, bool(t.strip())] for t in texts], device=image.device)
            tokens = torch.stack([image, text], dim=1)
            return F.normalize(self.heads.query_head(tokens, present), dim=-1)
        return image

    def query_embeddings(self, queries: Sequence[Query]) -> torch.Tensor:
        """:meth:`encode_queries`, each query's row computed once and kept in its cache, so
        :meth:`search` and the evidence's :meth:`score_items` share it."""
        return query_rows(queries, ("query", id(self)), self.encode_queries)

    def search(self, queries: Sequence[Query], k: int) -> List[List[Tuple[int, float]]]:
        """Top ``k`` (item position, cosine) per query, best first."""
        if self._items is None:
            raise LinkerError(f"linker {self.spec.name}: attach a label set before searching")
        if not queries:
            return []
        scores, index = chunked_topk(self.query_embeddings(queries), self._items, k)
        return [list(zip(row_i.tolist(), row_s.tolist())) for row_i, row_s in zip(index, scores)]

    @torch.inference_mode()
    def score_items(self, queries: Sequence[Query], positions: Sequence[Sequence[int]]) -> List[List[float]]:
        """The cosine :meth:`search` ranks by, of given label-set items (per query, in order)."""
        if self._items is None:
            raise LinkerError(f"linker {self.spec.name}: attach a label set before searching")
        if not any(positions):
            return [[] for _ in positions]
        query = self.query_embeddings(queries).float()
        return [(item_rows(self._items, row, query.device) @ q).tolist() if row else []
                for q, row in zip(query, positions)]

    @torch.inference_mode()
    def encode_outside(self, items: Sequence[OutsideItem]) -> torch.Tensor:
        """Item-side rows (n, d) of items outside the label set, made as the label index
        makes its own (item text template, the head, fusion's P18 image) and rounded to the
        index's fp16, so they score on the same footing."""
        texts = [render_item_text(self.spec.item_text, item.label, item.description) for item in items]
        text = encode_texts(self.backbone, texts)
        if self.spec.architecture == "naive":
            assert self.heads is not None
            text = F.normalize(self.heads.text_head(text), dim=-1)
        elif self.spec.architecture == "fusion":
            text = self._fuse_items([item.image for item in items], text, count=False)
        return text.float().half().float()

    @torch.inference_mode()
    def score_outside(self, queries: Sequence[Query], items: Sequence[Sequence[OutsideItem]]) -> List[List[float]]:
        """The cosine of items outside the label set (per query, in order), each encoded once."""
        distinct = {item.qid: item for row in items for item in row}
        if not distinct:
            return [[] for _ in items]
        order = sorted(distinct)
        where = {qid: i for i, qid in enumerate(order)}
        scores = (self.query_embeddings(queries).float() @ self.encode_outside([distinct[q] for q in order]).T).tolist()
        return [[scores[r][where[item.qid]] for item in row] for r, row in enumerate(items)]


def item_rows(items: Any, positions: Sequence[int], device: torch.device) -> torch.Tensor:
    """Rows of a label index (a tensor, or a memory-mapped fp16 array) as fp32 on ``device``."""
    if isinstance(items, torch.Tensor):
        return items[torch.tensor(list(positions), device=items.device)].float().to(device)
    return torch.from_numpy(np.asarray(items[list(positions)], dtype=np.float32)).to(device)


def index_name(linker: str, backbone: Backbone) -> str:
    """Readable label index directory prefix: ``zero-shot-ViT-B-32-bf16``."""
    model = re.sub(r"[^A-Za-z0-9_.-]+", "_", backbone.model_name)
    return f"{linker}-{model}-{backbone.precision}"


def _loader_id(loader: Optional[ItemImageLoader]) -> str:
    """A stable name of an item image source (loaders may set ``cache_id``)."""
    if loader is None:
        return "none"
    return str(getattr(loader, "cache_id", None) or getattr(loader, "__qualname__", type(loader).__name__))
