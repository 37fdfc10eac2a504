"""Does the file's own evidence, checked against the image, beat the image alone? (SYNTHETIC)

    .venv/bin/python bench/evidence.py [--files 1200] [--seed 0] [--misleading 0.3] [--epochs 30]
                                       [--cascade-epochs 10] [--threads 2] [--out /tmp/evidence-bench]

Commons' own evidence measured in one command (``evaluation.runs.evidence.run_evidence_bench``): a
synthetic evidence set (``dataset synthetic-evidence``: category, link and identifier
evidence per file, a controlled share of misleading categories, a fifth of the leaves outside
the label set); zero-shot, naive-mlp, fusion and the cascade (tiny open_clip model, random
init, heads trained briefly as ``dataset reproduce-synthetic`` trains them); each linked
through the bot's own path (``build_ready_linker``, ``ReadyLinker.link``) without and with
the evidence, the evidence model fitted on the training split's linked candidates; and
"evidence alone". Prints Markdown for docs/benchmarks.md ("Commons' own evidence") with the
command, the date and the CPU. Every figure is SYNTHETIC: generated data, random weights.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
from pathlib import Path
from typing import Optional

sys.path[0] = str(Path(__file__).resolve().parents[1])

from wikivel_bot.evaluation.runs.evidence import (  # noqa: E402
    EVIDENCE_ALONE,
    IMAGE_ONLY,
    WITH_EVIDENCE,
    EvidenceBenchOptions,
    comparison_markdown,
    run_evidence_bench,
)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--misleading", type=float, default=None, help="share of files with a misleading category")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--cascade-epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--out", type=Path, default=Path("/tmp/evidence-bench"))
    args = parser.parse_args()
    shares = {} if args.misleading is None else {"misleading": args.misleading}
    options = EvidenceBenchOptions(files=args.files, seed=args.seed, shares=shares, epochs=args.epochs,
                                   cascade_epochs=args.cascade_epochs, threads=args.threads, precision=args.precision)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result = run_evidence_bench(args.out, options)
    print(f"command: .venv/bin/python bench/evidence.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"date: {when}; CPU: {cpu_line()}; {args.threads} torch threads; precision {args.precision}")
    print(f"synthetic evidence set: {args.files} files, seed {args.seed}; training {result.seconds['training']:.0f} s, "
          f"everything {result.seconds['total']:.0f} s")
    print()
    print(comparison_markdown(result), end="")
    print()
    print("Goals (SYNTHETIC):")
    alone = result.row("evidence", EVIDENCE_ALONE)
    for name in options.linkers:
        image, both = result.row(name, IMAGE_ONLY), result.row(name, WITH_EVIDENCE)
        print(f"- {name}: R@1 {100 * image['R@1']:.1f} -> {100 * both['R@1']:.1f} with evidence "
              f"({100 * (both['R@1'] - image['R@1']):+.1f} points); precision with evidence "
              f"{_pct(both['precision'])} vs evidence alone {_pct(alone['precision'])}: "
              f"{'beats' if (both['precision'] or 0) > (alone['precision'] or 0) else 'does NOT beat'} it")


def _pct(value: Optional[float]) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


if __name__ == "__main__":
    main()
