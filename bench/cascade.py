"""The cascade's cost beside its first stage, per image on CPU (its budget: at most +30 %).

    .venv/bin/python bench/cascade.py [--threads 2] [--images 48] [--models wikivel-tiny,ViT-B-32]
                                      [--text-tokens 24[,32,16]] [--texts long[,mixed]] [--rounds 5] [--parts]

Runs ``bench/linker.py``'s :func:`bench_cascade` only (random weights: the cost of trained
ones) and prints a Markdown table for the "Cascade" section of docs/benchmarks.md: median
process-CPU milliseconds per image of ``link_files`` with naive-mlp alone and with the
cascade re-ranking naive-mlp's top 50, and the share the re-ranking adds; and naive-mlp with a
verifier beside it (``linker.verifier``), which scores the 10 kept suggestions. With several
``--text-tokens`` (``cascade.text_tokens``: how much of the file's text the pair model reads),
one row per length: reading the file's text is most of what the cascade adds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

import importlib.util  # noqa: E402

import torch  # noqa: E402

from wikivel_bot.config import CascadeSettings  # noqa: E402

# bench/linker.py as a module by path (putting bench/ on sys.path would let bench/queue.py
# shadow the standard library's queue, which torch imports).
_spec = importlib.util.spec_from_file_location("bench_linker", Path(__file__).resolve().parent / "linker.py")
assert _spec is not None and _spec.loader is not None
bench_linker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_linker)
TINY, bench_cascade, thumbnails = bench_linker.TINY, bench_linker.bench_cascade, bench_linker.thumbnails


def cpu_flags() -> str:
    """The SIMD features that matter for CPU inference, read from /proc/cpuinfo."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    wanted = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni") if f in flags]
    return f"{model or platform.processor()}; flags: {', '.join(wanted) or 'none of avx2/avx512/amx'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--models", default="wikivel-tiny,ViT-B-32")
    parser.add_argument("--text-tokens", default="0",
                        help="file-text tokens, comma-separated lengths (0: cascade.text_tokens' default)")
    parser.add_argument("--texts", default="long", help="file texts: long (every file a name, a 25-word "
                        "description, categories) or mixed (an assumed mix: a quarter name only, a quarter "
                        "name and categories, half long); comma-separated for one row each")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per figure (median)")
    parser.add_argument("--parts", action="store_true",
                        help="also time each part of the cascade's search alone (where the added time goes)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tmp = Path(tempfile.mkdtemp(prefix="wikivel-bench-"))
    (tmp / "wikivel-tiny.json").write_text(json.dumps(TINY))
    import open_clip

    open_clip.add_model_config(tmp / "wikivel-tiny.json")
    images = thumbnails(args.images)
    print(f"CPU: {cpu_flags()}; {os.cpu_count()} CPUs, torch threads {args.threads}, torch {torch.__version__}")
    print(f"command: .venv/bin/python bench/cascade.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| model | file texts | file-text tokens | naive-mlp alone, CPU ms/image | cascade K=50, CPU ms/image "
          "| added by re-ranking | naive-mlp + verifier, CPU ms/image | added by the verifier |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    breakdowns: List[Tuple[str, Dict[str, float]]] = []
    for model in args.models.split(","):
        for texts in args.texts.split(","):
            for tokens in (int(t) or CascadeSettings().text_tokens for t in args.text_tokens.split(",")):
                parts: Dict[str, float] = {}
                alone, cascade, verified = bench_cascade(model, images, args.threads, str(tmp / "cache"),
                                                         rounds=args.rounds, text_tokens=tokens, texts=texts,
                                                         parts=parts if args.parts else None)
                print(f"| {model} | {texts} | {tokens} | {1000 * alone:.1f} | {1000 * cascade:.1f} "
                      f"| {100 * (cascade / alone - 1):+.0f} % | {1000 * verified:.1f} "
                      f"| {100 * (verified / alone - 1):+.0f} % |", flush=True)
                if parts:
                    breakdowns.append((f"{model}, {texts} texts, {tokens} tokens", parts))
    if breakdowns:
        names = list(breakdowns[0][1])
        print("\nEach part of the cascade's search alone, median CPU ms per image (the same files):\n")
        print("| run | " + " | ".join(names) + " |")
        print("| --- |" + " ---: |" * len(names))
        for label, parts in breakdowns:
            print(f"| {label} | " + " | ".join(f"{1000 * parts[n]:.2f}" for n in names) + " |")
    print(f"\nload average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
