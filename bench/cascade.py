"""The cascade's cost beside its first stage, per image on CPU (issue budget: at most +30 %).

    .venv/bin/python bench/cascade.py [--threads 2] [--images 48] [--models wikivel-tiny,ViT-B-32]
                                      [--text-tokens 32[,24,16]]

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

sys.path[0] = str(Path(__file__).resolve().parents[1])

import importlib.util  # noqa: E402

import torch  # noqa: E402

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
    parser.add_argument("--text-tokens", default="32", help="file-text tokens, comma-separated lengths")
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
    print("| model | file-text tokens | naive-mlp alone, CPU ms/image | cascade K=50, CPU ms/image "
          "| added by re-ranking | naive-mlp + verifier, CPU ms/image | added by the verifier |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model in args.models.split(","):
        for tokens in (int(t) for t in args.text_tokens.split(",")):
            alone, cascade, verified = bench_cascade(model, images, args.threads, str(tmp / "cache"), text_tokens=tokens)
            print(f"| {model} | {tokens} | {1000 * alone:.1f} | {1000 * cascade:.1f} | {100 * (cascade / alone - 1):+.0f} % "
                  f"| {1000 * verified:.1f} | {100 * (verified / alone - 1):+.0f} % |", flush=True)
    print(f"\nload average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
