"""What computing only the pooled rows in each tower's last block saves (``linker/backbone/pooled.py``).

    .venv/bin/python bench/pooled.py [--model ViT-B-32] [--precisions fp32,int8] [--images 32]
                                     [--texts 256] [--threads 2] [--repeat 5]

For each precision, in one process and interleaved rounds, the same linker with the cut and
without it (the last block's original forward restored, the text path forced whole):
images/s end to end (``link_files``: decode, preprocess, encode, search over 18,522 random
unit vectors, ranking rules) and label-index texts/s (``text_tower.encode_texts``), by wall and
by process CPU time; and the largest difference between the two sides' embeddings. Random
weights (the cost of trained ones). Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

# The repository root instead of bench/ on the path: bench/queue.py would shadow the
# standard library's queue, which torch imports.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import torch  # noqa: E402

from bench import linker_precision as lp  # noqa: E402
from bench.linker import SMALL_ITEMS, SyntheticLabels, random_index, thumbnails  # noqa: E402
from wikivel_bot.core.ranking import RankingRules  # noqa: E402
from wikivel_bot.linker.backbone import text_tower  # noqa: E402
from wikivel_bot.linker.link import link_files  # noqa: E402
from wikivel_bot.linker.backbone.precision import cpu_flags, cpu_model, named_flags  # noqa: E402
from wikivel_bot.linker.texts import render_item_text  # noqa: E402
from wikivel_bot.types import MediaFile  # noqa: E402


def uncut(fn: Callable[[], Any], linker: Any) -> Callable[[], Any]:
    """``fn`` with the linker's towers whole: the image block's own forward, the text path uncut."""
    block = linker.backbone.model.visual.transformer.resblocks[-1]

    def run() -> Any:
        cut_forward = block.__dict__.pop("forward", None)
        saved = text_tower.standard_block
        text_tower.standard_block = lambda _block: False
        try:
            return fn()
        finally:
            text_tower.standard_block = saved
            if cut_forward is not None:
                block.forward = cut_forward
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--precisions", default="fp32,int8")
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import tempfile

    cache = tempfile.mkdtemp(prefix="wikivel-bench-pooled-")
    labels = SyntheticLabels(SMALL_ITEMS)
    source = SyntheticLabels(args.texts, seed=1)
    texts = [render_item_text("{label}, {description}", a, b) for a, b in zip(source.labels, source.descriptions)]
    import open_clip

    vectors = random_index(SMALL_ITEMS, int(open_clip.get_model_config(args.model)["embed_dim"]))
    images = thumbnails(args.images)
    files = [(MediaFile(page_id=i + 1, title=f"File:Bench {i}.jpg"), data) for i, data in enumerate(images)]
    rules = RankingRules(top_k=10)
    rows = []
    for precision in args.precisions.split(","):
        linker = lp.zero_shot(args.model, precision, args.threads, cache, labels, vectors)
        backbone = linker.backbone
        pixels = torch.randn(4, 3, backbone.image_size, backbone.image_size).to(backbone.input_dtype)
        with torch.inference_mode():
            cut_image = backbone.model.encode_image(pixels).float()
            whole_image = uncut(lambda: backbone.model.encode_image(pixels), linker)().float()
        cut_text = text_tower.encode_texts(backbone, texts[:64])
        whole_text = uncut(lambda: text_tower.encode_texts(backbone, texts[:64]), linker)()
        diff = max(float((cut_image - whole_image).abs().max()), float((cut_text - whole_text).abs().max()))
        link = lambda: link_files(linker, files, rules=rules)  # noqa: E731
        encode = lambda: text_tower.encode_texts(backbone, texts)  # noqa: E731
        link(), uncut(link, linker)()  # warm-up: oneDNN picks and caches its kernels
        image_s = lp.medians({"cut": link, "whole": uncut(link, linker)}, args.repeat)
        text_s = lp.medians({"cut": encode, "whole": uncut(encode, linker)}, args.repeat)
        rows.append((precision, {k: (len(files) / w, len(files) / c) for k, (w, c) in image_s.items()},
                     {k: (len(texts) / w, len(texts) / c) for k, (w, c) in text_s.items()}, diff))

    print(f"CPU: {cpu_model() or '?'}; flags: {named_flags(cpu_flags())}; {os.cpu_count()} CPUs, torch threads "
          f"{args.threads}, torch {torch.__version__}; {args.model}, random weights; median of {args.repeat} "
          f"interleaved rounds; load average at the end {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"command: .venv/bin/python bench/pooled.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| precision | what | whole last block | pooled rows only | ratio | ratio by CPU time | max abs difference |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for precision, image, text, diff in rows:
        for what, rates in (("images/s end to end", image), ("label-index texts/s", text)):
            print(f"| {precision} | {what} | {rates['whole'][0]:.1f} | {rates['cut'][0]:.1f} | "
                  f"{rates['cut'][0] / rates['whole'][0]:.3f}x | {rates['cut'][1] / rates['whole'][1]:.3f}x | "
                  f"{diff:.1e} |")


if __name__ == "__main__":
    main()
