"""Parity of bf16 / int8 with fp32: checked on this machine, not assumed.

:func:`check_precisions` builds the configured linker once per precision, encodes the same
items (a sample of the label set) and the same images with each, and compares every
precision's top-10 lists and embeddings with fp32's. A precision passes when its top-10 lists
are identical (same items, same order) on at least 95 % of the images and the cosine between
its embeddings and fp32's is at least 0.999 for every image and item (``precision.verdict``).
``wikivel-bot linkers --check-precision`` records the verdicts; ``auto`` then skips a failed
precision and says why. Each precision's image encoding is also timed against fp32's (CPU
time, warm, the better of two rounds), and ``auto`` picks the fastest precision that passed
(``precision.measured_choice``).
"""

from __future__ import annotations

import dataclasses
import io
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from wikivel_bot.config import LinkerSettings
from wikivel_bot.errors import FileUnavailable, LinkerError
from wikivel_bot.linker.backbone import precision as prec
from wikivel_bot.linker.base import Query
from wikivel_bot.linker.backbone.images import decode_image
from wikivel_bot.linker.search import full_topk

TOP_K = 10
TIMED_ROUNDS = 2


@dataclass(frozen=True)
class ParityResult:
    """One precision compared with fp32.

    :param precision: bf16 or int8.
    :param files: images compared.
    :param items: label-set items compared.
    :param top10_agreement: share of images whose top-10 list equals fp32's exactly.
    :param min_query_cosine: lowest cosine between an image's embedding and fp32's.
    :param min_item_cosine: lowest cosine between an item's embedding and fp32's.
    :param speedup: fp32's CPU time over this precision's for encoding the images (warm).
    :param cpu_ms_per_image: this precision's CPU milliseconds per image (all threads).
    :param verdict: ``precision.verdict`` of the two (passed, why, speedup).
    """

    precision: str
    files: int
    items: int
    top10_agreement: float
    min_query_cosine: float
    min_item_cosine: float
    speedup: float
    cpu_ms_per_image: float
    verdict: Dict[str, Any]


class _Subset:
    """The first ``n`` items of a label set, as a label-set view (what the encoders read)."""

    def __init__(self, label_set: Any, n: int) -> None:
        n = min(n, len(label_set.qids))
        self.qids = list(label_set.qids[:n])
        self.labels = list(label_set.labels[:n])
        self.descriptions = list(label_set.descriptions[:n])
        self.images = list(label_set.images[:n])
        self.content_hash = f"{label_set.content_hash}:first{n}"


def synthetic_images(n: int = 64, seed: int = 0, size: int = 256) -> List[bytes]:
    """``n`` deterministic JPEGs with smooth structure and noise (when no images are given)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size]
    out = []
    for _ in range(n):
        base = np.stack([np.sin(x / rng.uniform(4, 40) + rng.uniform(0, 6)) * 100 + 128 for _ in range(3)], -1)
        base = base + np.cos(y / rng.uniform(4, 40))[..., None] * 40 + rng.normal(0, 20, (size, size, 3))
        buffer = io.BytesIO()
        Image.fromarray(np.clip(base, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=85)
        out.append(buffer.getvalue())
    return out


def check_precisions(
    settings: LinkerSettings,
    label_set: Any,
    images: Sequence[bytes],
    *,
    precisions: Sequence[str] = ("bf16", "int8"),
    items: int = 5000,
    linker_name: Optional[str] = None,
) -> List[ParityResult]:
    """Compare each of ``precisions`` with fp32 on the same items and images.

    :param settings: the linker settings (model, weights, checkpoint, device...); the
        precision in them is ignored.
    :param label_set: the label set; its first ``items`` items are encoded.
    :param images: image bytes (undecodable ones are skipped).
    :param precisions: the precisions to check.
    :param items: how many items to encode with each precision.
    :param linker_name: the linker variant (default ``settings.name``).
    :raises LinkerError: no usable image, or a linker without a model.
    """
    from wikivel_bot.linker.factory import create_linker

    subset = _Subset(label_set, items)
    decoded = []
    for data in images:
        try:
            decoded.append(decode_image(data))
        except FileUnavailable:
            continue
    if not decoded:
        raise LinkerError("precision check: none of the images could be decoded")

    def queries() -> List[Query]:
        # New queries for every encoding: a query keeps its embedding per backbone, keyed by
        # the backbone's id, which the next precision's backbone may reuse once the last one
        # is freed; a kept row would be neither compared nor timed.
        return [Query(f"image {i}", image) for i, image in enumerate(decoded)]

    def embed(name: str) -> Tuple[torch.Tensor, torch.Tensor, float]:
        """(query embeddings, item embeddings, CPU seconds of a second, warm query encoding)."""
        # The verifier (linker.verifier) is beside the ranking, not in it: not checked here.
        linker: Any = create_linker(linker_name or settings.name, dataclasses.replace(settings, precision=name, verifier=""))
        if not hasattr(linker, "encode_queries"):
            raise LinkerError(f"linker {linker.description.name} has no model: nothing to check")
        out = np.zeros((len(subset.qids), linker.backbone.embed_dim), dtype=np.float16)
        linker._encode_items(subset, out, False)
        item_emb = torch.from_numpy(out.astype(np.float32))
        query_emb = linker.encode_queries(queries()).float().cpu()
        # Timed warm, in process CPU time (all threads): what a file costs in this precision,
        # and less disturbed by other processes than the wall clock. The better of two
        # rounds, so one disturbed round does not decide what auto picks.
        rounds = []
        for _ in range(TIMED_ROUNDS):
            started = time.process_time()
            linker.encode_queries(queries())
            rounds.append(time.process_time() - started)
        return query_emb, item_emb, max(min(rounds), 1e-9)

    ref_q, ref_i, ref_cpu = embed("fp32")
    _, ref_top = full_topk(ref_q, ref_i, TOP_K)
    results = []
    for name in precisions:
        q, i, cpu = embed(prec.validate(name))
        _, top = full_topk(q, i, TOP_K)
        agreement = float((top == ref_top).all(dim=1).float().mean())
        q_cos = float(torch.nn.functional.cosine_similarity(q, ref_q).min())
        i_cos = float(torch.nn.functional.cosine_similarity(i, ref_i).min())
        results.append(ParityResult(
            precision=name, files=len(decoded), items=len(subset.qids), top10_agreement=agreement,
            min_query_cosine=q_cos, min_item_cosine=i_cos, speedup=ref_cpu / cpu,
            cpu_ms_per_image=1000 * cpu / len(decoded),
            verdict=prec.verdict(agreement, min(q_cos, i_cos), speedup=ref_cpu / cpu),
        ))
    return results
