"""Which order of the file text's parts, and how many tokens of it, should the cascade read? (SYNTHETIC)

    .venv/bin/python bench/cascade_text.py [--files 1200] [--seeds 0[,1,2]] [--budgets 24,32,48,77]
                                           [--orders name,description,categories/categories,name,description/...]
                                           [--threads 2] [--out /tmp/cascade-text]

One run; per seed (``--seeds``, each a whole replicate) one synthetic set:
``train/synthetic/text.py`` with ``long_texts`` (the colour of a shape is in the picture for
half of the files and in the file name, description or a category for most, and the texts
are as long as a real Commons file's, 52-74 tokens), the tiny random-init open_clip model,
naive-mlp trained once as the first stage through the CLI (as
``tests/test_cascade_learning.py`` does), then for every order × budget a cascade trained
with ``train.cascade.fit.train_cascade`` (the function ``train --variant cascade`` calls) and
scored on the test split through the linkers (``evaluation.runs.cascade.compare_cascade``).
Three seeds took 7.2 minutes on 2 shared cores (load average 3-4; docs/cascade.md).

Reported per order and budget (mean and range over the seeds): R@1 and nDCG@5 of the
cascade (hop 0), the share of test
files whose cut text still names the colour where their full text does ("signal kept"),
the tokens the text tower reads per file (mean, with start and end tokens), and the median
milliseconds per file of encoding the test files' cut texts with the ViT-B-32 text tower
(random weights: the cost of trained ones) in the precision the cascade would run in on this
CPU. Prints Markdown for docs/cascade.md. Every quality figure is SYNTHETIC: a random-init
tiny model on coloured shapes, nothing about Commons.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

from click.testing import CliRunner  # noqa: E402

from wikivel_bot.cli import main as cli  # noqa: E402
from wikivel_bot.linker.cascade.text import LEGACY_ORDER, cascade_file_text, check_order  # noqa: E402
from wikivel_bot.train.synthetic.shapes import COLOURS  # noqa: E402
from wikivel_bot.train.synthetic.text import make_text_synthetic  # noqa: E402

ORDERS = "name,description,categories/categories,name,description/name,categories,description"
ROUNDS = 5


def cpu_line() -> str:
    """The CPU's model name and whether it has the bf16 paths (/proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    lines = text.splitlines()
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    has = [f for f in ("avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    return f"{model}; avx512_bf16/amx: {', '.join(has) if has else 'none'}"


def run(args: List[str]) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"wikivel-bot {' '.join(args)} failed:\n{result.output}")
    return result.output


def test_texts(syn: Path) -> Tuple[List[Tuple[str, str, Tuple[str, ...]]], List[str]]:
    """(title, description, categories) of the test files, and each one's colour word."""
    from wikivel_bot.train.data.dataset import load_dataset

    dataset = load_dataset(syn)
    table = dataset.table
    descriptions = table.column("description").to_pylist()
    categories = table.column("categories").to_pylist()
    names = [c for c, _ in COLOURS]
    parts, colours = [], []
    for row in dataset.split_rows("test").tolist():
        parts.append((dataset.titles[row], descriptions[row] or "", tuple(categories[row] or ())))
        # The leaf item's label starts with the colour ("red circle"): the truth, not the text.
        leaf = max(dataset.items()[row])
        colours.append(names[(int(leaf[1:]) - 9001000) // 100])
    return parts, colours


def names(colour: str, text: str) -> bool:
    """Whether ``text`` names ``colour`` (as a word: "red", not the "red" in "centred")."""
    return re.search(rf"\b{colour}\b", text, re.IGNORECASE) is not None


def cut_texts(tokenizer, texts: Sequence[str], budget: int) -> Tuple[List[str], List[int]]:
    """What the pair model reads of each text at ``budget`` tokens, and how many tokens that is."""
    import torch

    from wikivel_bot.linker.cascade.linker import short_tokens

    tokens = short_tokens(tokenizer, list(texts), budget)
    lengths = (tokens != 0).sum(dim=1).tolist()
    decode = getattr(tokenizer, "decode", None) or tokenizer.tokenizer.decode
    out = []
    for row, n in zip(tokens, lengths):
        inner = [int(t) for t in row[1:n - 1] if int(t) != 0]  # without start and end tokens
        out.append(decode(torch.tensor(inner).tolist()) if inner else "")
    return out, [int(n) for n in lengths]


def encode_costs(backbone, texts: Dict[Tuple[str, ...], List[str]], budgets: Sequence[int]) -> Dict[Tuple, float]:
    """Median ms per file of encoding each order's texts cut at each budget.

    Measured after all training, in interleaved rounds (every order and budget once per
    round), so a change in the machine's load touches every configuration alike.
    """
    import torch

    from wikivel_bot.linker.cascade.linker import encode_file_texts

    timings: Dict[Tuple, List[float]] = {(o, b): [] for o in texts for b in budgets}
    with torch.inference_mode():
        for order in texts:
            encode_file_texts(backbone, texts[order][:8], max(budgets))  # warm-up
        for _ in range(ROUNDS):
            for (order, budget), found in timings.items():
                started = time.perf_counter()
                encode_file_texts(backbone, texts[order], budget)
                found.append(1000 * (time.perf_counter() - started) / len(texts[order]))
    return {key: statistics.median(values) for key, values in timings.items()}


def one_seed(seed: int, args: argparse.Namespace, orders: Sequence[Tuple[str, ...]], budgets: Sequence[int],
             tokenizer) -> Tuple[Dict[Tuple, Dict[str, float]], Dict[str, float], int, Dict[Tuple[str, ...], List[str]]]:
    """Data, first stage and one cascade per order and budget for ``seed``: their scores."""
    from wikivel_bot.train.cascade.fit import CascadeTrainConfig, train_cascade
    from wikivel_bot.evaluation.runs.cascade import compare_cascade

    out = args.out / f"seed-{seed}"
    syn = out / "syn"
    make_text_synthetic(syn, args.files, seed=seed, force=True, long_texts=True)
    cache = str(out / "cache")
    base = ["--data", str(syn), "--model", str(syn / "tiny-model.json"), "--weights", "random", "--device", "cpu",
            "--threads", str(args.threads), "--cache-dir", cache, "--no-progress", "--seed", str(seed)]
    run(["train", "--linker", "naive-mlp", *base, "--epochs", "30", "--batch-size", "128", "--lr", "0.01",
         "--patience", "100", "--out", str(out / "naive-mlp")])
    first = out / "naive-mlp" / "best.pt"
    parts, colours = test_texts(syn)
    scores: Dict[Tuple, Dict[str, float]] = {}
    first_stage: Dict[str, float] = {}
    files = 0
    all_texts: Dict[Tuple[str, ...], List[str]] = {}
    for order in orders:
        texts = all_texts[order] = [cascade_file_text(t, d, c, order) for t, d, c in parts]
        # "Signal kept": of the files whose whole text names the colour, the share whose cut text still does.
        named = [i for i, (text, colour) in enumerate(zip(texts, colours)) if names(colour, text)]
        for budget in budgets:
            run_dir = out / "runs" / f"{'-'.join(p[:4] for p in order)}-{budget}"
            train_cascade(CascadeTrainConfig(
                data=str(syn), out=str(run_dir), first_stage=str(first), cache_dir=cache,
                model=str(syn / "tiny-model.json"), pretrained="", weights="random", device="cpu",
                threads=args.threads, candidates=20, text_tokens=budget, text_order=order, epochs=args.epochs,
                batch_size=32, lr=0.003, patience=100, seed=seed))
            result = compare_cascade(run_dir / "best.pt", syn, naive=first, cache_dir=cache, precision="fp32")
            found = {name: metrics for name, _, metrics in result.rows}
            first_stage, files = found["naive-mlp"], result.files
            cut, lengths = cut_texts(tokenizer, texts, budget)
            scores[(order, budget)] = {"R@1": found["cascade"]["R@1"], "nDCG@5": found["cascade"]["nDCG@5"],
                                       "kept": sum(names(colours[i], cut[i]) for i in named) / max(1, len(named)),
                                       "tokens": statistics.mean(lengths)}
            print(f"# seed {seed}, {' > '.join(order)} @ {budget}: R@1 {scores[(order, budget)]['R@1']:.3f} "
                  f"nDCG@5 {scores[(order, budget)]['nDCG@5']:.3f}", file=sys.stderr, flush=True)
    return scores, first_stage, files, all_texts


def spread(values: Sequence[float]) -> str:
    """``mean (min-max)`` in percent; the mean alone for one value."""
    mean = 100 * statistics.mean(values)
    if len(values) == 1:
        return f"{mean:.1f}"
    return f"{mean:.1f} ({100 * min(values):.1f}-{100 * max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1200)
    parser.add_argument("--seeds", default="0", help="seeds of the data and training, comma-separated; each a "
                                                      "whole replicate (the table shows their mean and range)")
    parser.add_argument("--budgets", default="24,32,48,77")
    parser.add_argument("--orders", default=ORDERS, help="orders separated by '/', parts by ','")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=6, help="cascade epochs per order and budget")
    parser.add_argument("--out", type=Path, default=Path("/tmp/cascade-text"))
    args = parser.parse_args()
    import torch

    from wikivel_bot.config import LinkerSettings
    from wikivel_bot.linker.cascade.linker import INT8_REASON, PAIR_PRECISIONS
    from wikivel_bot.linker.clip import load_inference_backbone

    torch.set_num_threads(args.threads)
    orders = [check_order(o.split(",")) for o in args.orders.split("/")]
    budgets = [int(b) for b in args.budgets.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    started = time.perf_counter()
    cost_backbone = load_inference_backbone(
        LinkerSettings(model="ViT-B-32", pretrained="", weights="random", device="cpu", threads=args.threads,
                       precision="auto"), PAIR_PRECISIONS, INT8_REASON)
    per_seed = []
    first_stages = []
    texts: Dict[Tuple[str, ...], List[str]] = {}
    files = []
    for seed in seeds:
        scores, first_stage, n, seed_texts = one_seed(seed, args, orders, budgets, cost_backbone.tokenizer)
        per_seed.append(scores)
        first_stages.append(first_stage)
        files.append(n)
        texts = texts or seed_texts  # the cost is measured on the first seed's test files
    costs = encode_costs(cost_backbone, texts, budgets)
    seconds = time.perf_counter() - started
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"command: .venv/bin/python bench/cascade_text.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"CPU: {cpu_line()}; {os.cpu_count()} cores, load average {load} at the end; torch threads: "
          f"{args.threads}; text-tower cost: ViT-B-32 (random weights) at {cost_backbone.precision}, "
          f"median of {ROUNDS} interleaved rounds over {len(next(iter(texts.values())))} texts")
    print(f"SYNTHETIC: {args.files} files (long texts) per seed, seeds {args.seeds}, tiny random-init open_clip "
          f"model; {', '.join(map(str, files))} test files; whole run {seconds / 60:.1f} min")
    print()
    print("| order | budget | tokens read / file | signal kept | R@1 | nDCG@5 | encode ms / file (median) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for order in orders:
        for budget in budgets:
            found = [scores[(order, budget)] for scores in per_seed]
            legacy = " (before)" if order == LEGACY_ORDER else ""
            print(f"| {' > '.join(order)}{legacy} | {budget} | {statistics.mean(f['tokens'] for f in found):.1f} | "
                  f"{100 * statistics.mean(f['kept'] for f in found):.0f} % | {spread([f['R@1'] for f in found])} | "
                  f"{spread([f['nDCG@5'] for f in found])} | {costs[(order, budget)]:.2f} |")
    print(f"| naive-mlp alone (first stage) | — | — | — | {spread([f['R@1'] for f in first_stages])} | "
          f"{spread([f['nDCG@5'] for f in first_stages])} | — |")


if __name__ == "__main__":
    main()
