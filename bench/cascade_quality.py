"""Does the cascade help where the file's text carries part of the signal? (SYNTHETIC data)

    .venv/bin/python bench/cascade_quality.py [--files 1200] [--seed 0] [--out /tmp/cascade-quality]

Builds the synthetic set of ``train/synthetic/text.py`` (the colour of a shape is in the
picture for half of the files and in the file's name, description or categories for most),
trains naive-mlp (image only), fusion (image + description and categories) and the cascade
(naive-mlp's top 50 re-ranked by the pair model reading the image, the cleaned file name,
description and categories) on the tiny random-init open_clip model through the real CLI,
then scores zero-shot, naive-mlp, fusion and the cascade on the test split through the
linkers, and the verifier's calibrated probabilities on every (test file, candidate) pair.
Prints Markdown for the "Cascade" section of docs/benchmarks.md and writes the reliability
diagram. Every figure is from synthetic data and a random-init backbone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])

from click.testing import CliRunner  # noqa: E402

from wikivel_bot.cli import main as cli  # noqa: E402
from wikivel_bot.evaluation.runs.cascade import compare_cascade, comparison_markdown, write_reliability_plot  # noqa: E402
from wikivel_bot.train.synthetic.text import make_text_synthetic  # noqa: E402


def run(args: list) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"wikivel-bot {' '.join(args)} failed:\n{result.output}")
    return result.output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--out", type=Path, default=Path("/tmp/cascade-quality"))
    args = parser.parse_args()
    out = args.out
    syn = out / "syn"
    make_text_synthetic(syn, args.files, seed=args.seed, force=True)
    base = ["--data", str(syn), "--model", str(syn / "tiny-model.json"), "--weights", "random", "--device", "cpu",
            "--threads", args.threads, "--cache-dir", str(out / "cache"), "--no-progress", "--seed", str(args.seed)]
    started = time.perf_counter()
    for name in ("naive-mlp", "fusion"):
        run(["train", "--linker", name, *base, "--epochs", "30", "--batch-size", "128", "--lr", "0.01",
             "--patience", "100", "--out", str(out / name)])
    run(["train", "--variant", "cascade", *base, "--epochs", "10", "--batch-size", "32", "--lr", "0.003",
         "--patience", "100", "--candidates", "50", "--first-stage", str(out / "naive-mlp" / "best.pt"),
         "--out", str(out / "cascade")])
    trained = time.perf_counter() - started
    result = compare_cascade(out / "cascade" / "best.pt", syn, naive=out / "naive-mlp" / "best.pt",
                             fusion=out / "fusion" / "best.pt", cache_dir=str(out / "cache"))
    plot = write_reliability_plot(result, out / "reliability.png")
    print(f"command: .venv/bin/python bench/cascade_quality.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"synthetic set: {args.files} files, seed {args.seed}; tiny open_clip model, random init; "
          f"training all three took {trained:.0f} s; reliability diagram: {plot}")
    print()
    print(comparison_markdown(result), end="")


if __name__ == "__main__":
    main()
