"""Does the file's own evidence, checked against the image, beat what the evidence's kinds say alone? (SYNTHETIC)

    .venv/bin/python bench/evidence.py [--files 1200] [--data-seeds 0] [--train-seeds 0] [--hard]
                                       [--misleading 0.3] [--test-misleading 0.1,0.5] [--test-lookalike 0,1]
                                       [--fractions 0.6,0.2,0.2] [--epochs 30] [--cascade-epochs 10] [--threads 2]
                                       [--out /tmp/evidence-bench] [--results DIR]
    .venv/bin/python bench/evidence.py --summarize DIR      # the seeds table of saved runs
    .venv/bin/python bench/evidence.py --baselines-only [--hard] --data-seeds 0,1,2   # seconds, no model

Commons' own evidence measured in one command (``evaluation.runs.evidence.run_evidence_bench``):
a synthetic evidence set (``dataset synthetic-evidence``; with ``--hard`` every kind can be
wrong at its own rate, errors co-occur, wrong items look like the right ones, presence and
reliability depend on the item: ``train/synthetic/evidence_errors.py``), zero-shot,
naive-mlp, fusion and the cascade (tiny open_clip model, random init, heads trained briefly),
each linked through the bot's own path without and with the evidence, the evidence model
fitted (cross-fitted) on validation files the heads never saw; the image-free baselines
(evidence alone, evidence kinds only: the rule and a model); with ``--test-misleading`` /
``--test-lookalike``, the same files with other evidence, linked with what was fitted.

Every data seed × training seed pair is one run; each run's raw result is written as JSON to
``--results`` (``evidence-d<data>-t<train>.json``), and with more than one run the summary
gives mean ± a 95 % interval over runs and claims an order only where the paired interval
excludes 0. Prints Markdown for docs/benchmarks.md with the command, the date and the CPU.
Every figure is SYNTHETIC: generated data, random weights.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import sys
from pathlib import Path
from typing import Dict, List, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

from wikivel_bot.evaluation.runs.evidence import EvidenceBenchOptions, make_sets, run_evidence_bench  # noqa: E402
from wikivel_bot.evaluation.runs.evidence_report import (  # noqa: E402
    comparison_markdown,
    conditions_markdown,
    load_runs,
    seeds_markdown,
)
from wikivel_bot.train.synthetic.evidence_errors import HARD_SHARES  # noqa: E402


def cpu_line() -> str:
    """The CPU's model name and its bf16 flags (/proc/cpuinfo): ``auto`` precision depends on them."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    has = [f for f in ("avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    return f"{model}; avx512_bf16/amx: {', '.join(has) if has else 'none'}"


def _numbers(text: str) -> List[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _seeds(text: str) -> List[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1200)
    parser.add_argument("--data-seeds", type=_seeds, default=[0], help="comma-separated data seeds")
    parser.add_argument("--train-seeds", type=_seeds, default=[0], help="comma-separated training seeds")
    parser.add_argument("--hard", action="store_true", help="the harder set (evidence_errors.HARD_SHARES)")
    parser.add_argument("--misleading", type=float, default=None, help="share of files with a misleading category")
    parser.add_argument("--lookalike", type=float, default=None, help="share of wrong items that look alike")
    parser.add_argument("--test-misleading", type=_numbers, default=[], help="further test sets at these shares")
    parser.add_argument("--test-lookalike", type=_numbers, default=[],
                        help="further test sets at these look-alike shares")
    parser.add_argument("--fractions", type=_numbers, default=[0.6, 0.2, 0.2], help="train,validation,test shares")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--cascade-epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--out", type=Path, default=Path("/tmp/evidence-bench"))
    parser.add_argument("--results", type=Path, default=None, help="write each run's raw result (JSON) here")
    parser.add_argument("--summarize", type=Path, default=None, help="print the seeds table of the runs saved here")
    parser.add_argument("--baselines-only", action="store_true",
                        help="only the image-free rows (evidence alone, the kinds rule) per data seed: seconds")
    args = parser.parse_args()
    if args.summarize is not None:
        _summarize(sorted(args.summarize.glob("evidence-d*-t*.json")))
        return
    shares: Dict[str, float] = dict(HARD_SHARES) if args.hard else {}
    for name in ("misleading", "lookalike"):
        if getattr(args, name) is not None:
            shares[name] = getattr(args, name)
    tests: List[Tuple[str, Dict[str, float]]] = [(f"misleading-{v:g}", {"misleading": v}) for v in args.test_misleading]
    tests += [(f"lookalike-{v:g}", {"lookalike": v}) for v in args.test_lookalike]
    base = EvidenceBenchOptions(files=args.files, shares=shares, test_shares=tuple(tests), epochs=args.epochs,
                                fractions=tuple(args.fractions),
                                cascade_epochs=args.cascade_epochs, threads=args.threads, precision=args.precision)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f".venv/bin/python bench/evidence.py {' '.join(sys.argv[1:])}".rstrip()
    print(f"command: {command}")
    print(f"date: {when}; CPU: {cpu_line()}; {args.threads} torch threads; precision {args.precision}")
    if args.baselines_only:
        _baselines(args, base)
        return
    results = []
    for data_seed in args.data_seeds:
        sets = make_sets(args.out / f"d{data_seed}", dataclasses.replace(base, seed=data_seed))
        for train_seed in args.train_seeds:
            options = dataclasses.replace(base, seed=data_seed, train_seed=train_seed)
            result = run_evidence_bench(args.out / f"d{data_seed}" / f"t{train_seed}", options, sets)
            doc = {**result.as_dict(), "command": command, "date": when, "cpu": cpu_line()}
            results.append(doc)
            if args.results is not None:
                args.results.mkdir(parents=True, exist_ok=True)
                path = args.results / f"evidence-d{data_seed}-t{train_seed}.json"
                path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            print(f"\n### data seed {data_seed}, training seed {train_seed} ({args.files} files; training "
                  f"{result.seconds['training']:.0f} s, everything {result.seconds['total']:.0f} s)\n", flush=True)
            print(comparison_markdown(result), end="", flush=True)
    if len(results) > 1:
        print()
        _print_seeds(results)


def _baselines(args: argparse.Namespace, base: EvidenceBenchOptions) -> None:
    """The image-free rows on each data seed's test split (no model is trained)."""
    from wikivel_bot.evaluation.runs.evidence_baselines import SetSplits, evidence_alone, kinds_rule
    from wikivel_bot.evaluation.runs.evidence_linking import split_files
    from wikivel_bot.evaluation.runs.evidence_measures import row_of
    from wikivel_bot.train.data.dataset import image_store, load_dataset
    from wikivel_bot.train.synthetic.evidence import load_evidence

    print("\n| data seed | test files | row | precision | R@1 |\n| ---: | ---: | --- | ---: | ---: |")
    for data_seed in args.data_seeds:
        path = make_sets(args.out / f"d{data_seed}", dataclasses.replace(base, seed=data_seed, test_shares=()))[""]
        dataset = load_dataset(path)
        split = SetSplits(load_evidence(path), {"test": split_files(dataset, image_store(dataset), "test")}, {})
        for outcome in (evidence_alone(split), kinds_rule(split)):
            row = row_of(outcome, split.truth("test"))
            right = round((row["precision"] or 0.0) * row["suggestions"])
            print(f"| {data_seed} | {len(outcome.files)} | {outcome.mode} | {100 * (row['precision'] or 0):.1f} "
                  f"({right}/{row['suggestions']}) | {100 * row['R@1']:.1f} |")


def _summarize(paths: List[Path]) -> None:
    if not paths:
        raise SystemExit("error: no evidence-d*-t*.json results there")
    runs = load_runs(paths)
    for command in dict.fromkeys(str(r.get("command", "?")) for r in runs):
        print(f"command: {command}")
    print(f"CPU: {'; '.join(dict.fromkeys(str(r.get('cpu', '?')) for r in runs))}; {len(runs)} runs: "
          + ", ".join(f"d{r['options']['data_seed']}-t{r['options']['train_seed']}" for r in runs))
    _print_seeds(runs)


def _print_seeds(runs: List[dict]) -> None:
    if runs[0]["conditions"]:
        print("### Fitted at one evidence mix, tested at others (over seeds)\n")
        print(conditions_markdown(runs))
    print("### Over seeds\n")
    print(seeds_markdown(runs), end="")
    for name in runs[0]["conditions"]:
        print(f"\n### Over seeds, test set `{name}` (fitted on the first set)\n")
        print(seeds_markdown(runs, name), end="")


if __name__ == "__main__":
    main()
