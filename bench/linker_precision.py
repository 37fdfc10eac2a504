"""The precision columns of ``bench/linker.py``: fp32 / bf16 / int8 / auto in one run.

For each model, beside the plain open_clip loop and the previous default (fp32, forward
batches of 32, decoding inline before each batch, one batch at a time), and ``auto`` linking
one batch at a time (``link_files(..., workers=1)``: every torch thread on one batch, the next
decoded in a pool), in one process and interleaved rounds:

Each precision column runs its exported image tower (``tower.py``), as every start after the
first does; the previous default runs the eager model, as it did before there was an export.

* images/s end to end: ``link_files`` on synthetic 330 px JPEG thumbnails (decode with draft,
  preprocess, encode, chunked top-k over an 18,522-item label index of random unit vectors,
  ranking rules);
* label-index texts/s: ``text_tower.encode_texts`` on synthetic item texts in each precision;
* optionally the wall time of a whole 18,522-item label index built with ``auto``.

Every model runs with random weights (``--weights random``): the arithmetic costs exactly
what trained weights cost, and no weights can be downloaded here. Figures are medians of
``REPEAT`` interleaved rounds (ours, reference, ours...), so load from other processes on a
shared machine falls on every column alike; ratios are taken within the run. Process CPU
seconds (all threads) are reported too, as they are far less disturbed by other processes.
"""

from __future__ import annotations

import io
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
import torch
from PIL import Image

from wikivel_bot.config import LinkerSettings
from wikivel_bot.core.ranking import RankingRules
from wikivel_bot.linker import create_linker
from wikivel_bot.linker.backbone import prefetch
from wikivel_bot.linker.clip import ClipLinker
from wikivel_bot.linker.backbone.text_tower import encode_texts
from wikivel_bot.linker.link import link_files
from wikivel_bot.linker.backbone.tower import ExportedBackbone
from wikivel_bot.types import MediaFile

REPEAT = 5
COLUMNS = ("fp32", "bf16", "int8", "auto", "auto, one batch at a time", "previous default", "plain open_clip loop")
Rate = Tuple[float, float]  # (per wall second, per CPU second)


def medians(fns: Dict[str, Callable[[], object]], repeat: int = 0) -> Dict[str, Tuple[float, float]]:
    """Median (wall, CPU) seconds of each function over ``repeat`` (default :data:`REPEAT`)
    interleaved rounds."""
    repeat = repeat or REPEAT
    runs: Dict[str, List[Tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            runs[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for name, r in runs.items()}


def zero_shot(model: str, precision: str, threads: int, cache: str, labels: Any, vectors: np.ndarray,
              exported: bool = False) -> ClipLinker:
    """A zero-shot linker in ``precision`` attached to ``labels`` with ``vectors`` as its index.

    :param exported: start it a second time, as a daemon or ``suggest`` does after the first
        start: it then runs the exported image tower (``tower.py``) written by the first.
    """
    settings = LinkerSettings(model=model, pretrained="", weights="random", device="cpu", threads=threads,
                              batch_size=32, precision=precision, cache_dir=cache)
    linker = create_linker("zero-shot", settings)
    if exported and not isinstance(linker.backbone, ExportedBackbone):
        linker = create_linker("zero-shot", settings)
        if not isinstance(linker.backbone, ExportedBackbone):
            raise SystemExit(f"{model} in {precision}: no exported image tower was written (see the log)")
    assert isinstance(linker, ClipLinker)
    original = ClipLinker._encode_items
    ClipLinker._encode_items = lambda self, label_set, out, progress: out.__setitem__(slice(None), vectors)  # type: ignore[method-assign]
    try:
        linker.attach(labels, cache)
    finally:
        ClipLinker._encode_items = original  # type: ignore[method-assign]
    return linker


def previous_default(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with decoding inline (no prefetch threads), as before this change."""

    def run() -> object:
        saved = prefetch.MAX_WORKERS
        prefetch.MAX_WORKERS = 1
        try:
            return fn()
        finally:
            prefetch.MAX_WORKERS = saved

    return run


def bench_model(model: str, images: Sequence[bytes], texts: Sequence[str], labels: Any, vectors: np.ndarray,
                threads: int, cache: str) -> Dict[str, Any]:
    """Images/s and texts/s per column for one model, plus what auto resolved to."""
    # Every precision on its exported image tower (what runs after the first start), so the
    # columns compare like with like; the previous default had no export (its own cache).
    linkers = {p: zero_shot(model, p, threads, cache, labels, vectors, exported=True)
               for p in ("fp32", "bf16", "int8", "auto")}
    old = zero_shot(model, "fp32", threads, tempfile.mkdtemp(prefix="wikivel-bench-previous-"), labels, vectors)
    assert not isinstance(old.backbone, ExportedBackbone)
    old.backbone.image_batch = 0  # the setting's 32 per forward pass, as before
    files = [(MediaFile(page_id=i + 1, title=f"File:Bench {i}.jpg"), data) for i, data in enumerate(images)]
    rules = RankingRules(top_k=10)
    net, preprocess = old.backbone.model, old.backbone.preprocess
    index = torch.from_numpy(vectors.astype(np.float32))
    sample = list(images[: max(4, len(images) // 4)])

    def plain_images() -> None:
        with torch.no_grad():
            for data in sample:
                image = Image.open(io.BytesIO(data)).convert("RGB")
                emb = torch.nn.functional.normalize(net.encode_image(preprocess(image)[None]), dim=-1)
                torch.topk(emb @ index.T, 10)

    image_fns: Dict[str, Callable[[], object]] = {
        p: (lambda lk=lk: link_files(lk, files, rules=rules)) for p, lk in linkers.items()
    }
    # One batch at a time over both torch threads, the next one decoded in the pool (this
    # column's code before parallel_batches).
    image_fns["auto, one batch at a time"] = lambda: link_files(linkers["auto"], files, rules=rules, workers=1)
    image_fns["previous default"] = previous_default(lambda: link_files(old, files, rules=rules, workers=1))
    image_fns["plain open_clip loop"] = plain_images
    for lk in list(linkers.values()) + [old]:  # warm-up (oneDNN picks and caches its kernels)
        link_files(lk, files[:4], rules=rules)
    image_s = medians(image_fns)
    image_rates = {name: _rate(len(sample) if name == "plain open_clip loop" else len(files), s)
                   for name, s in image_s.items()}

    tokenizer = old.backbone.tokenizer
    one_by_one = list(texts[:16])

    def plain_texts() -> None:
        with torch.no_grad():
            for text in one_by_one:
                net.encode_text(tokenizer([text]))

    text_fns: Dict[str, Callable[[], object]] = {
        p: (lambda lk=lk: encode_texts(lk.backbone, texts)) for p, lk in linkers.items()
    }
    text_fns["previous default"] = lambda: encode_texts(old.backbone, texts, batch_size=256)
    text_fns["plain open_clip loop"] = plain_texts
    for lk in list(linkers.values()) + [old]:
        encode_texts(lk.backbone, texts[:32])
    text_s = medians(text_fns, repeat=min(3, REPEAT))
    text_rates = {name: _rate(len(one_by_one) if name == "plain open_clip loop" else len(texts), s)
                  for name, s in text_s.items()}
    text_rates["auto, one batch at a time"] = text_rates["auto"]  # the text side has no batches of files
    auto = linkers["auto"].description
    return {"images": image_rates, "texts": text_rates, "auto": f"{auto.precision} ({auto.precision_reason})",
            "linkers": linkers}


def full_index_seconds(linker: ClipLinker, labels: Any) -> float:
    """Wall seconds to encode every item of ``labels`` into a label index (one run)."""
    out = np.zeros((len(labels.qids), linker.backbone.embed_dim), dtype=np.float16)
    started = time.perf_counter()
    linker._encode_items(labels, out, False)
    return time.perf_counter() - started


def _rate(n: int, seconds: Tuple[float, float]) -> Rate:
    return n / seconds[0], n / seconds[1]


def table(results: Dict[str, Dict[str, Any]]) -> List[str]:
    """Markdown rows: one per (model, measure), a column per precision, and the ratios."""
    lines = [
        "| model (random weights) | what | " + " | ".join(COLUMNS) + " | auto / fp32 | auto / previous | auto / plain |",
        "| --- | --- |" + " ---: |" * (len(COLUMNS) + 3),
    ]
    for model, result in results.items():
        for key, what in (("images", "images/s end to end"), ("texts", "label-index texts/s")):
            rates = result[key]
            cells = " | ".join(f"{rates[c][0]:,.1f}" for c in COLUMNS)
            auto = rates["auto"][0]
            lines.append(f"| {model} | {what} | {cells} | {auto / rates['fp32'][0]:.2f}x | "
                         f"{auto / rates['previous default'][0]:.2f}x | {auto / rates['plain open_clip loop'][0]:.2f}x |")
            cells = " | ".join(f"{rates[c][1]:,.1f}" for c in COLUMNS)
            auto = rates["auto"][1]
            lines.append(f"| {model} | {what.replace('/s', ' per CPU-second')} | {cells} | "
                         f"{auto / rates['fp32'][1]:.2f}x | {auto / rates['previous default'][1]:.2f}x | "
                         f"{auto / rates['plain open_clip loop'][1]:.2f}x |")
    return lines
