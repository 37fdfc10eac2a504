"""Linker throughput on CPU, each figure beside a plain open_clip loop as reference.

    .venv/bin/python bench/linker.py [--threads 2] [--precision-models ViT-B-32,MobileCLIP2-S0]
                                     [--precision-images 32] [--full-index] [--classic]
                                     [--images 64] [--models wikivel-tiny,ViT-B-32]
                                     [--texts 512] [--large-items 2305611]

The first table (``bench/linker_precision.py``) shows each precision (fp32, bf16, int8, auto)
beside the previous default and the plain open_clip loop, with the CPU's model and flags;
``--full-index`` adds the wall time of a whole 18,522-item label index with ``auto``.
``--classic`` adds the earlier tables (tiny model, search at 18,522 and 2.3M items).

No pretrained weights are needed (or used): every model runs with random weights
(``--weights random``), which costs exactly what trained weights cost. What is timed:

* images/s, decode + encode + search: ``link_files`` (JPEG decode with draft, batched
  encode, chunked top-k over an 18,522-item label index, ranking rules) on synthetic
  330 px JPEG thumbnails (Commons' thumbnail step). The index holds random unit vectors —
  search cost does not depend on what is in it. Reference (on a quarter of the images):
  per image ``Image.open``, ``preprocess``, ``encode_image`` of a batch of one in fp32, a
  full matmul over the index and ``topk``.
* label-index texts/s: ``text_tower.encode_texts`` (length-sorted batches of 256, trimmed to
  the batch's longest text) on synthetic item texts ("label, description", 3-20 tokens).
  Reference: ``encode_text(tokenizer([text]))`` one text at a time (77 positions) on 32 of
  them; also shown: the usual open_clip batch of 256 padded to 77.
* search: ``search.chunked_topk`` for a batch of 32 queries, k=100, over 18,522 items
  (fp32 in memory, as the linker holds small indexes) and 2,305,611 items (fp16
  memory-mapped file, as the linker holds large ones). Reference: one query at a time, full
  fp32 matmul over the in-memory matrix and ``topk`` (4 queries at 2.3M).

Each figure is the best of 3 interleaved runs (ours, reference, ours, ...) so a busy shared
machine penalises both sides alike; the last column compares process CPU seconds (all
threads), which other processes disturb far less than wall time. Prints a Markdown table
for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

# Replace this folder on the path by the repository root: bench/queue.py would otherwise
# shadow the standard library's `queue`, which torch imports.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from wikivel_bot.config import LinkerSettings  # noqa: E402
from wikivel_bot.core.ranking import RankingRules  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.clip import ClipLinker  # noqa: E402
from wikivel_bot.linker.backbone.text_tower import encode_texts  # noqa: E402
from wikivel_bot.linker.link import link_files  # noqa: E402
from wikivel_bot.linker.search import chunked_topk  # noqa: E402
from wikivel_bot.types import MediaFile  # noqa: E402

SMALL_ITEMS = 18_522
TINY = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
WORDS = ("house cat dog church bridge river mountain painting portrait building street tram station "
         "flower tree bird museum castle lighthouse map coat of arms statue fountain car bicycle ship "
         "aircraft locomotive mosque temple park garden beach harbour village town city tower").split()


class SyntheticLabels:
    """A flat label set (no hierarchy) of ``n`` items with made-up texts, for timing only."""

    def __init__(self, n: int, seed: int = 0) -> None:
        rng = random.Random(seed)
        self.qids = [f"Q{i + 1}" for i in range(n)]
        self.labels = [" ".join(rng.choices(WORDS, k=rng.randint(1, 3))) for _ in range(n)]
        self.descriptions = [" ".join(rng.choices(WORDS, k=rng.randint(2, 12))) for _ in range(n)]
        self.images = [""] * n
        self._index = {q: i for i, q in enumerate(self.qids)}
        self.content_hash = f"synthetic-{n}-{seed}"

    def index_of(self, qid: str) -> Optional[int]:
        return self._index.get(qid)

    def ancestors(self, qid: str, max_hops: int = 3) -> Dict[str, int]:
        return {}

    def frequency(self, qid: str) -> int:
        return 0


def thumbnails(n: int, seed: int = 0) -> List[bytes]:
    """330x248 JPEGs with smooth structure and noise (decode cost like real photos)."""
    rng = np.random.default_rng(seed)
    out = []
    y, x = np.mgrid[0:248, 0:330]
    for _ in range(n):
        base = np.stack([np.sin(x / rng.uniform(5, 40) + rng.uniform(0, 6)) * 100 + 128 for _ in range(3)], -1)
        base = base + np.cos(y / rng.uniform(5, 40))[..., None] * 40 + rng.normal(0, 20, (248, 330, 3))
        buffer = io.BytesIO()
        Image.fromarray(np.clip(base, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=85)
        out.append(buffer.getvalue())
    return out


REPEAT = 3


def timed(fn: Callable[[], object]) -> Tuple[float, float]:
    """(wall seconds, process CPU seconds over all threads) of one run."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def best_of(*fns: Callable[[], object]) -> List[Tuple[float, float]]:
    """Best (wall, CPU) seconds of each function over :data:`REPEAT` interleaved rounds.

    Interleaving (a, b, a, b...) and keeping the best run gives both sides the same chance
    of a quiet moment on a shared machine; CPU seconds are much less sensitive to other
    processes than wall time, so both are reported.
    """
    best = [(float("inf"), float("inf"))] * len(fns)
    for _ in range(REPEAT):
        for i, fn in enumerate(fns):
            wall, cpu = timed(fn)
            best[i] = (min(best[i][0], wall), min(best[i][1], cpu))
    return best


Rate = Tuple[float, float]  # (per wall second, per CPU second)


def rates(n: int, seconds: Tuple[float, float]) -> Rate:
    return n / seconds[0], n / seconds[1]


def random_index(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float16)
    for start in range(0, n, 262_144):
        block = rng.standard_normal((min(262_144, n - start), dim), dtype=np.float32)
        out[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def bench_images(model: str, images: List[bytes], threads: int, cache: str) -> Tuple[Rate, Rate]:
    """(ours images/s, reference images/s) for decode + encode + search over 18,522 items."""
    import open_clip

    from bench.linker_precision import zero_shot

    vectors = random_index(SMALL_ITEMS, int(open_clip.get_model_config(model)["embed_dim"]))
    # fp32 like the plain loop it is compared with (the precision table compares precisions);
    # under ``auto`` the loop would feed fp32 pixels to bf16 weights on a bf16-capable CPU.
    linker = zero_shot(model, "fp32", threads, cache, SyntheticLabels(SMALL_ITEMS), vectors)
    files = [(MediaFile(page_id=i + 1, title=f"File:Bench {i}.jpg"), data) for i, data in enumerate(images)]
    rules = RankingRules(top_k=10)
    link_files(linker, files[:8], rules=rules)  # warm-up

    net, preprocess, index = linker.backbone.model, linker.backbone.preprocess, torch.from_numpy(vectors.astype(np.float32))

    sample = images[: max(8, len(images) // 4)]

    def reference() -> None:
        with torch.no_grad():
            for data in sample:
                image = Image.open(io.BytesIO(data)).convert("RGB")
                emb = torch.nn.functional.normalize(net.encode_image(preprocess(image)[None]), dim=-1)
                torch.topk(emb @ index.T, 10)

    ours_s, ref_s = best_of(lambda: link_files(linker, files, rules=rules), reference)
    return rates(len(files), ours_s), rates(len(sample), ref_s)


def bench_texts(model: str, n: int, threads: int) -> Tuple[Rate, Rate, Rate]:
    """(ours, one-at-a-time reference, batched-77) texts/s for the item side."""
    import open_clip

    from wikivel_bot.linker.backbone.encoders import load_backbone
    from wikivel_bot.linker.texts import render_item_text

    labels = SyntheticLabels(n, seed=1)
    texts = [render_item_text("{label}, {description}", a, b) for a, b in zip(labels.labels, labels.descriptions)]
    backbone = load_backbone(model, weights="random", device="cpu", threads=threads)
    encode_texts(backbone, texts[:64])
    tokenizer = open_clip.get_tokenizer(model)
    sample = texts[:32]
    padded_texts = texts[:256]

    def one_at_a_time() -> None:
        with torch.no_grad():
            for text in sample:
                backbone.model.encode_text(tokenizer([text]))

    def batched_77() -> None:
        with torch.no_grad():
            backbone.model.encode_text(tokenizer(padded_texts))

    ours_s, single_s, padded_s = best_of(lambda: encode_texts(backbone, texts, batch_size=256), one_at_a_time, batched_77)
    return rates(n, ours_s), rates(len(sample), single_s), rates(len(padded_texts), padded_s)


def bench_search(items: int, dim: int, tmp: Path, queries: int = 32, k: int = 100) -> Tuple[Rate, Rate]:
    """(ours queries/s, reference queries/s) at ``items`` items."""
    vectors = random_index(items, dim, seed=2)
    q = torch.nn.functional.normalize(torch.randn(queries, dim), dim=-1)
    if items * dim * 4 <= (1 << 30):
        held = torch.from_numpy(vectors.astype(np.float32))
        source: object = held
    else:
        path = tmp / f"index-{items}.npy"
        np.save(path, vectors)
        source = np.load(path, mmap_mode="r")
        held = torch.from_numpy(vectors.astype(np.float32))
    del vectors
    chunked_topk(q[:2], source, k)
    reference_queries = 4 if items > 1_000_000 else queries

    def reference() -> None:
        for row in q[:reference_queries]:
            torch.topk(held @ row, k)

    ours_s, ref_s = best_of(lambda: chunked_topk(q, source, k), reference)
    return rates(queries, ours_s), rates(reference_queries, ref_s)


def cascade_parts(c: Any, files: List[Tuple[MediaFile, bytes]], rounds: int) -> Dict[str, float]:
    """Median process-CPU seconds per image of each part of the cascade's search, timed one
    part at a time over the same prepared files: the image encode, the first stage's top 50 of
    the index, the file-text encode, the pair model over the 50 candidates."""
    from wikivel_bot.linker.base import Query
    from wikivel_bot.linker.cascade.linker import encode_file_texts, first_stage_queries
    from wikivel_bot.linker.backbone.encoders import query_images
    from wikivel_bot.linker.backbone.images import decode_image

    bb = c.backbone
    pixels = [c.prepare_image(decode_image(data, min_side=bb.image_size)) for _, data in files]
    texts = [c.query_text(media) for media, _ in files]

    def encode_images() -> torch.Tensor:  # fresh queries: a query caches its embedding
        return query_images(bb, [Query(str(i), p) for i, p in enumerate(pixels)], c.settings.batch_size)

    with torch.inference_mode():
        image = encode_images()
        text, present = encode_file_texts(bb, texts, c.cascade.text_tokens)
        first = first_stage_queries(c.first.spec.architecture, c.first.heads, image, text, present)
        scores, index = chunked_topk(first, c.first._items, c.cascade.candidates)
        parts = {
            "image encode": encode_images,
            "first stage top 50": lambda: chunked_topk(first, c.first._items, c.cascade.candidates),
            "file-text encode": lambda: encode_file_texts(bb, texts, c.cascade.text_tokens),
            "pair model": lambda: c._pair_scores(image, text, present, index, scores),
        }
        times: Dict[str, List[float]] = {name: [] for name in parts}
        for _ in range(rounds):
            for name, fn in parts.items():
                times[name].append(timed(fn)[1] / len(files))
    return {name: float(np.median(t)) for name, t in times.items()}


def bench_cascade(model: str, images: List[bytes], threads: int, cache: str, rounds: int = 5,
                  text_tokens: int = 0, texts: str = "long",
                  parts: Optional[Dict[str, float]] = None) -> Tuple[float, float, float]:
    """Median process-CPU seconds per image of (naive-mlp alone, the cascade re-ranking its top 50,
    naive-mlp with a verifier beside it: ``linker.verifier``).

    All run ``link_files`` over the same thumbnails and an 18,522-item index of random unit
    vectors (the cascade's item text and P18 image indexes too: cost does not depend on
    content); files carry a name, a 25-word description and three categories, so the pair
    model's text side costs what it would on Commons. Interleaved rounds; medians. The
    verifier is an untrained pair model saved as a calibrated cascade checkpoint (its cost is
    a trained one's). ``texts="mixed"``: an assumed mix, not Commons statistics — a quarter of
    the files have only their name, a quarter their name and categories, half the long text.
    """
    import dataclasses

    from wikivel_bot.config import CascadeSettings
    from wikivel_bot.core.verification import Calibration
    from wikivel_bot.linker.cascade.linker import CascadeLinker
    from wikivel_bot.linker.cascade.checkpoint import save_cascade_checkpoint
    from wikivel_bot.linker.clip import backbone_info
    from wikivel_bot.linker.cascade.pair import DEFAULT_PAIR_ARGS

    text_tokens = text_tokens or CascadeSettings().text_tokens  # 0: the setting's default
    labels = SyntheticLabels(SMALL_ITEMS)
    settings = LinkerSettings(model=model, pretrained="", weights="random", device="cpu", threads=threads, batch_size=32)
    first = create_linker("naive-mlp", settings)
    cascade = create_linker("cascade", settings, cascade=CascadeSettings(candidates=50, text_tokens=text_tokens))
    assert isinstance(first, ClipLinker) and isinstance(cascade, CascadeLinker)
    verifier = save_cascade_checkpoint(
        Path(cache) / f"verifier-{model}-{text_tokens}.pt", spec=cascade.spec.as_dict(), pair=cascade.pair,
        pair_args=DEFAULT_PAIR_ARGS, backbone=backbone_info(cascade.backbone), labelset_hash=labels.content_hash,
        first_stage_linker="naive-mlp", first_stage=None, candidates=50, text_tokens=text_tokens,
        calibration=Calibration("platt", a=1.0, b=0.0))
    verified = create_linker("naive-mlp", dataclasses.replace(settings, verifier=str(verifier)))
    vectors = random_index(SMALL_ITEMS, first.backbone.embed_dim)
    fill = lambda self, label_set, out, *rest: out.__setitem__(slice(None), vectors)  # noqa: E731
    saved = (ClipLinker._encode_items, CascadeLinker._encode_item_texts, CascadeLinker._encode_item_images)
    ClipLinker._encode_items = CascadeLinker._encode_item_texts = CascadeLinker._encode_item_images = fill  # type: ignore
    try:
        for linker in (first, cascade, verified):
            linker.attach(labels, cache)
    finally:
        ClipLinker._encode_items, CascadeLinker._encode_item_texts, CascadeLinker._encode_item_images = saved  # type: ignore
    words = " ".join(WORDS)

    def media(i: int) -> MediaFile:
        kind = i % 4 if texts == "mixed" else 3
        return MediaFile(page_id=i + 1, title=f"File:{WORDS[i % len(WORDS)].title()}_bench_photo_{i}.jpg",
                         description=" ".join(words.split()[i % 7:i % 7 + 25]) if kind >= 2 else "",
                         categories=(f"Category:{WORDS[(i + 3) % len(WORDS)]}s in 2024", "Category:Buildings",
                                     "Category:CC-BY-SA-4.0") if kind >= 1 else ())

    files = [(media(i), data) for i, data in enumerate(images)]
    rules = RankingRules(top_k=10)
    linkers = (first, cascade, verified)
    for linker in linkers:
        link_files(linker, files[:8], rules=rules)  # warm-up
    times: List[List[float]] = [[] for _ in linkers]
    for _ in range(rounds):
        for i, linker in enumerate(linkers):
            times[i].append(timed(lambda: link_files(linker, files, rules=rules))[1] / len(files))
    alone, reranked, beside = (float(np.median(t)) for t in times)
    if parts is not None:  # where the cascade's time goes, filled in for the caller
        parts.update(cascade_parts(cascade, files, rounds))
    return alone, reranked, beside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--models", default="wikivel-tiny,ViT-B-32")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--large-items", type=int, default=2_305_611)
    parser.add_argument("--precision-models", default="ViT-B-32,MobileCLIP2-S0")
    parser.add_argument("--precision-images", type=int, default=32)
    parser.add_argument("--precision-texts", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5, help="Interleaved rounds per figure (median).")
    parser.add_argument("--full-index", action="store_true", help="Time a whole 18,522-item index with auto.")
    parser.add_argument("--classic", action="store_true", help="Also print the earlier tables.")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tmp = Path(tempfile.mkdtemp(prefix="wikivel-bench-"))
    (tmp / "wikivel-tiny.json").write_text(json.dumps(TINY))
    import open_clip

    open_clip.add_model_config(tmp / "wikivel-tiny.json")
    from bench import linker_precision

    linker_precision.REPEAT = args.repeat
    precision_section(args, tmp)
    if not args.classic:
        return
    rows: List[Tuple[str, str, Rate, Rate]] = []
    images = thumbnails(args.images)
    for model in args.models.split(","):
        ours, ref = bench_images(model, images, args.threads, str(tmp / "cache"))
        rows.append((f"images/s, decode+encode+search 18,522 items, {model} (random weights)", "images/s", ours, ref))
        ours, single, padded = bench_texts(model, args.texts, args.threads)
        rows.append((f"label-index texts/s, {model} (random weights)", "texts/s", ours, single))
        rows.append(("  same, vs open_clip batches of 256 padded to 77", "texts/s", ours, padded))
        alone, cascade, _ = bench_cascade(model, images, args.threads, str(tmp / "cache"))
        rows.append((f"cascade (K=50) vs its first stage naive-mlp, {model}", "images/CPU s", (1 / cascade, 1 / cascade),
                     (1 / alone, 1 / alone)))
    dim = 512
    for items in (SMALL_ITEMS, args.large_items):
        ours, ref = bench_search(items, dim, tmp)
        rows.append((f"search {items:,} items x 512 dims, batch 32, k=100", "queries/s", ours, ref))

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch threads "
          f"{args.threads}, torch {torch.__version__}, open_clip {open_clip.__version__}, no GPU; "
          f"load average at the end {load}; best of {REPEAT} interleaved runs")
    print(f"command: .venv/bin/python bench/linker.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| what | unit | wikivel-bot | plain open_clip loop | ratio | ratio by CPU time |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name, unit, ours, ref in rows:
        print(f"| {name} | {unit} | {ours[0]:,.1f} | {ref[0]:,.1f} | {ours[0] / ref[0]:.1f}x | {ours[1] / ref[1]:.1f}x |")



def precision_section(args: argparse.Namespace, tmp: Path) -> None:
    """The precision table (see ``bench/linker_precision.py``) with the machine it ran on."""
    import open_clip

    from bench import linker_precision as lp
    from wikivel_bot.linker.backbone import precision as prec
    from wikivel_bot.linker.texts import render_item_text

    labels = SyntheticLabels(SMALL_ITEMS)
    texts_src = SyntheticLabels(args.precision_texts, seed=1)
    texts = [render_item_text("{label}, {description}", a, b) for a, b in zip(texts_src.labels, texts_src.descriptions)]
    images = thumbnails(args.precision_images)
    results: Dict[str, Dict[str, object]] = {}
    index_note = ""
    full_index_linker = None
    for model in args.precision_models.split(","):
        started = time.perf_counter()
        vectors = random_index(SMALL_ITEMS, int(open_clip.get_model_config(model)["embed_dim"]))
        result = lp.bench_model(model, images, texts, labels, vectors, args.threads, str(tmp / "cache"))
        if full_index_linker is None:
            full_index_linker = (model, result["auto"], result["linkers"]["auto"])  # type: ignore[index]
        result.pop("linkers")
        results[model] = result
        # Rows as soon as a model is done: a slow shared machine may not see the end.
        print(f"# {model}: auto = {result['auto']}; {time.perf_counter() - started:.0f} s", file=sys.stderr)
        for line in lp.table({model: result})[2:]:
            print("# " + line, file=sys.stderr, flush=True)
    if args.full_index and full_index_linker is not None:
        model, auto, linker = full_index_linker
        seconds = lp.full_index_seconds(linker, labels)
        index_note = f"label index of {SMALL_ITEMS:,} items with auto ({auto}), {model}: {seconds:.1f} s wall (one run)"
    flags = prec.cpu_flags()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"CPU: {prec.cpu_model() or platform.processor()}, {os.cpu_count()} CPUs; precision flags: "
          f"{prec.named_flags(flags)}; AMX: {'yes' if 'amx_tile' in flags else 'no'}")
    print(f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), open_clip "
          f"{open_clip.__version__}, torch threads {args.threads}, no GPU; load average at the end {load}; "
          f"median of {args.repeat} interleaved rounds (texts: 3); {args.precision_images} images, "
          f"{args.precision_texts} texts")
    print(f"command: .venv/bin/python bench/linker.py {' '.join(sys.argv[1:])}".rstrip())
    for model, result in results.items():
        print(f"auto on {model}: {result['auto']}")
    print()
    for line in lp.table(results):
        print(line)
    if index_note:
        print()
        print(index_note)
    print()


if __name__ == "__main__":
    main()
