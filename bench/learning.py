"""Does the bot learn from its reviewers? A simulation on SYNTHETIC embeddings.

    .venv/bin/python bench/learning.py [--rounds 6] [--per-round 500] [--error 0.05] [--seeds 0,1,2]

Synthetic world (no images, no open_clip: the heads train on frozen embeddings, as they do on
real CLIP ones): 200 items with latent vectors; a file's "image embedding" and an item's
"text embedding" are noisy, differently rotated views of the latent vectors, so the identity
heads (zero-shot) rank poorly and trained heads can learn the map. Files arrive in upload
order, items by a Zipf-like frequency. The running model proposes its top 3 per file;
simulated reviewers decide them with the ground truth, wrong with probability ``--error``.

After every ``--per-round`` decisions a challenger is fine-tuned from the running heads on
all decisions so far (``train.decisions.heads.fine_tune``: contrastive + rejections as
negatives). Each model is calibrated on its *own* top-3 suggestions of the held-out middle
files (``train.decisions.own_suggestions``: undecided ones count as not approved), and both are judged
on the decided pairs of the latest files, each at its own operating threshold and able to
select only what it would itself suggest (``learning.judge``: bootstrap, seeded); the
challenger runs only if it wins, and its operating threshold comes with it (a kept one
changes nothing). The start is the untrained heads with a fixed, uncalibrated probability
(``Platt(10, -3)``: cosine 0.3 is p = 0.5). Three strategies:

* ``no learning`` — the running heads never change; the decisions only recalibrate their
  threshold (what decisions did before learning);
* ``queue order`` — reviewers take files in upload order, and the model learns;
* ``uncertainty`` — reviewers take first the waiting file whose suggestion is nearest the
  threshold (the queue's uncertainty order), and decide all of its suggestions.

Per round: precision at the threshold and R@1 over all items, on 1000 later test files with
full ground truth, and the reviewer decisions spent per correct statement approved that
round. Finally a challenger trained on the same decisions with 30 % of the labels flipped is
judged against the final running model of ``queue order``: the rule must refuse it.
Every figure is SYNTHETIC.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench.evidence import cpu_line  # noqa: E402
from bench.learning_sim import (  # noqa: E402
    challenger_cell, decide, print_corrupted, print_final, print_rounds, simulation_parser, split_labels, take_uncertain,
    verdict_cell)
from wikivel_bot.learning.judge import judge  # noqa: E402
from wikivel_bot.learning.metrics import FileScores  # noqa: E402
from wikivel_bot.linker.heads import NaiveHeads  # noqa: E402
from wikivel_bot.train.decisions.heads import DecisionTensors, FineTuneConfig, Platt, fine_tune  # noqa: E402
from wikivel_bot.train.decisions.own_suggestions import calibrate_own, judged_files  # noqa: E402

DIM, ITEMS, TOP = 32, 200, 3
STYLE, NOISE = 2.0, 1.0
THRESHOLD = 0.5


@dataclass
class World:
    items: torch.Tensor        # (ITEMS, DIM) item text embeddings
    files: torch.Tensor        # (N, DIM) file image embeddings, in upload order
    truth: np.ndarray          # (N,) the item each file depicts


def make_world(n_files: int, seed: int) -> World:
    g = np.random.default_rng(seed)
    latent = g.normal(size=(ITEMS, DIM)) / np.sqrt(DIM)
    # A shared "photo" direction in every image embedding: zero-shot then favours the items
    # that lean towards it (the generic tags reviewers reject); heads can learn it away.
    style = g.normal(size=DIM) / np.sqrt(DIM)
    text = latent + 0.3 * g.normal(size=(ITEMS, DIM)) / np.sqrt(DIM)
    freq = 1.0 / np.arange(1, ITEMS + 1) ** 0.7
    truth = g.choice(ITEMS, size=n_files, p=freq / freq.sum())
    image = latent[truth] + STYLE * style + NOISE * g.normal(size=(n_files, DIM)) / np.sqrt(DIM)

    def norm(a: np.ndarray) -> torch.Tensor:
        return F.normalize(torch.tensor(a, dtype=torch.float32), dim=-1)
    return World(norm(text), norm(image), truth)


@dataclass
class Running:
    heads: torch.nn.Module
    platt: Platt = field(default_factory=lambda: Platt(10.0, -3.0))


def cosines(heads: torch.nn.Module, world: World, rows: np.ndarray) -> torch.Tensor:
    heads.eval()
    with torch.no_grad():
        q = F.normalize(heads.image_head(world.files[rows]), dim=-1)
        e = F.normalize(heads.text_head(world.items), dim=-1)
        return q @ e.T


def test_metrics(model: Running, world: World, test_rows: np.ndarray) -> Tuple[float, float, float]:
    """Precision and recall of the top-3 suggestions at the threshold (recall: files whose
    item is among the selected), and R@1, on fully labelled files."""
    sims = cosines(model.heads, world, test_rows)
    top = sims.topk(TOP, dim=1)
    probs = model.platt(top.values).numpy()
    correct = (top.indices.numpy() == world.truth[test_rows][:, None])
    chosen = probs >= THRESHOLD
    precision = float(correct[chosen].mean()) if chosen.any() else float("nan")
    recall = float((correct & chosen).any(axis=1).mean())
    r1 = float(correct[:, 0].mean())
    return precision, recall, r1


@dataclass
class Log:
    pairs: List[Tuple[int, int, float]] = field(default_factory=list)   # (file row, item, label)


def tensors(world: World, log: Log, flip: float = 0.0, seed: int = 0) -> DecisionTensors:
    """The decisions so far, split by file in upload order 0.6/0.2/0.2 (evaluation latest);
    ``flip``: share of train and calibration labels flipped (corrupted reviewers)."""
    rows, labels, split = split_labels(log.pairs, flip, seed)
    position = {f: i for i, f in enumerate(rows)}
    return DecisionTensors(world.files[rows], world.items, rows, [str(i) for i in range(ITEMS)],
                           torch.tensor([position[f] for f, _, _ in log.pairs]),
                           torch.tensor([i for _, i, _ in log.pairs]), torch.tensor(labels), split)


def own_files(heads: torch.nn.Module, data: DecisionTensors, platt: Platt) -> List[FileScores]:
    """The evaluation files' decided pairs under the model, as the learning round judges them."""
    return [FileScores(p, tuple(ps), tuple(ys), tuple(ss)) for p, ps, ys, ss in judged_files(heads, data, platt, TOP)]


def judged(champion: Running, data: DecisionTensors, config: FineTuneConfig, seed: int):
    """A challenger fine-tuned from the running heads, each model calibrated on its own
    suggestions of the calibration files and judged on its own suggestions of the evaluation
    files at its own operating threshold (``train.decisions.own_suggestions``), as ``learning.cycle`` does."""
    challenger = fine_tune(champion.heads, data, config)
    pa, pb = calibrate_own(champion.heads, data, TOP), calibrate_own(challenger, data, TOP)
    verdict = judge(own_files(champion.heads, data, pa), own_files(challenger, data, pb), threshold=THRESHOLD,
                    resamples=1000, seed=seed)
    return verdict, Running(challenger, pb), pa


def simulate(strategy: str, world: World, args: argparse.Namespace, test_rows: np.ndarray):
    g = np.random.default_rng(args.seed + 1)
    torch.manual_seed(args.seed)   # the heads' first layers: the same start for every strategy
    model = Running(NaiveHeads(DIM, dropout=0.1).eval())
    log, next_file, pending = Log(), 0, []   # pending: (file row, item) shown, not decided
    config = FineTuneConfig(epochs=args.epochs, lr=args.lr, batch_size=128, seed=args.seed)
    out: List[Dict[str, object]] = []
    flipped: list = []
    for round_no in range(1, args.rounds + 1):
        # Uploads arrive: enough files for the round's decisions (twice as many for the
        # uncertainty order, which picks among what is waiting).
        arriving = args.per_round // TOP * (2 if strategy == "uncertainty" else 1)
        new = np.arange(next_file, next_file + arriving)
        next_file += arriving
        sims = cosines(model.heads, world, new)
        top = sims.topk(TOP, dim=1).indices.numpy()
        pending += [(int(f), int(i)) for f, row in zip(new, top) for i in row]
        if strategy == "uncertainty":
            # As the queue's uncertainty order does (core/review_order.py): whole files, the
            # one whose suggestion is nearest the threshold first; reviewers decide all of it.
            rows = np.array([f for f, _ in pending])
            items = torch.tensor([i for _, i in pending])
            with torch.no_grad():
                q = F.normalize(model.heads.image_head(world.files[rows]), dim=-1)
                e = F.normalize(model.heads.text_head(world.items[items]), dim=-1)
                probabilities = model.platt((q * e).sum(dim=-1)).numpy()
            take, pending = take_uncertain(pending, probabilities, THRESHOLD, args.per_round // TOP)
        else:
            take, pending = pending[:args.per_round], pending[args.per_round:]
        correct_approved = decide(take, world.truth, args.error, g, log.pairs)
        promoted, trained = "—", None
        if strategy != "no learning":
            verdict, challenger, _ = judged(model, tensors(world, log), config, args.seed)
            # The round's challenger on the test files, promoted or not: what learning gave.
            trained = test_metrics(challenger, world, test_rows)
            if strategy == "queue order":
                # The same round's challenger trained on corrupted decisions (a share of the
                # training and calibration labels flipped), judged on the honest later ones.
                bad, corrupted, _ = judged(model, tensors(world, log, flip=args.flip, seed=args.seed + round_no),
                                           config, args.seed)
                # With full truth on the test files: is the refused one really worse?
                flipped.append((bad, test_metrics(model, world, test_rows), test_metrics(corrupted, world, test_rows)))
            # The operating threshold is part of the promoted model (as in the real linker):
            # a kept challenger changes nothing, not even the running threshold.
            if verdict.promote:
                model = challenger
            promoted = verdict_cell(verdict)
        else:
            model = Running(model.heads, calibrate_own(model.heads, tensors(world, log), TOP))
        precision, recall, r1 = test_metrics(model, world, test_rows)
        out.append({"round": round_no, "decisions": len(log.pairs), "precision": precision, "recall": recall,
                    "R@1": r1, "challenger": challenger_cell(trained),
                    "per_correct": len(take) / max(1, correct_approved), "promoted": promoted})
    return out, model, flipped, log


def main() -> None:
    parser = simulation_parser(__doc__.split("\n\n")[0], rounds=6, epochs=20, lr=3e-3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"command: .venv/bin/python bench/learning.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"date: {when}; CPU: {cpu_line()}; {args.threads} torch threads")
    print(f"SYNTHETIC: {ITEMS} items, embeddings of dim {DIM}, reviewers wrong {100 * args.error:.0f} % of the time, "
          f"{args.per_round} decisions per round, threshold {THRESHOLD} on each model's own calibrated probability; "
          "test: 1000 later files with full truth")
    for seed in [int(x) for x in args.seeds.split(",") if x.strip()]:
        args.seed = seed
        run_seed(args)
    print()
    print(f"{time.perf_counter() - started:.0f} s in all")


def run_seed(args: argparse.Namespace) -> None:
    n_files = 20000
    world = make_world(n_files, args.seed)
    test_rows = np.arange(n_files - 1000, n_files)
    results, final = {}, {}
    for strategy in ("no learning", "queue order", "uncertainty"):
        results[strategy], final[strategy], flips, log = simulate(strategy, world, args, test_rows)
        if strategy == "queue order":
            corrupted, queue_log = flips, log
    base = test_metrics(Running(NaiveHeads(DIM, dropout=0.1).eval()), world, test_rows)
    print()
    print(f"### Seed {args.seed} (zero-shot R@1 {100 * base[2]:.1f})")
    print()
    print_rounds(results)
    print()
    print_corrupted(corrupted, args.flip)
    config = FineTuneConfig(epochs=args.epochs, lr=args.lr, batch_size=128, seed=args.seed)
    honest = tensors(world, queue_log)
    final_verdict, _, _ = judged(final["queue order"], tensors(world, queue_log, flip=args.flip, seed=args.seed),
                                 config, args.seed)
    print_final(final_verdict, len(honest.split), args.flip)


if __name__ == "__main__":
    main()
