"""Does the cascade's pair model learn from its reviewers? A simulation on SYNTHETIC embeddings.

    .venv/bin/python bench/learning_pair.py [--rounds 4] [--per-round 500] [--error 0.05] [--seeds 0,1,2]

The companion of ``bench/learning.py`` (which fine-tunes Naive CLIP's heads) for the cascade
(``linker.cascade``): the first stage and every embedding stay frozen, and a learning round
fine-tunes only the pair model that re-ranks the first stage's candidates
(``train.decisions.pair``), calibrates it on its own suggestions and judges it against
the running one (``learning.judge``), as ``learning.cycle`` does.

Synthetic world (no images, no open_clip): 200 items with latent vectors, drawn by a Zipf-like
frequency; files arrive in upload order. Per file, an *image embedding* — the latent vector
of its item plus a shared "photo" direction and noise, as in ``bench/learning.py``, so the
first stage (a frozen cosine of the image against the item's text embedding) ranks poorly —
and a *file text embedding*, standing for its title, description and categories: it names
the true item with probability ``--names`` (a noisy view of the item's latent vector),
another item with probability ``--misleading``, and is absent otherwise (``present``). Per
item, a text embedding and, for most items, an image embedding (P18), noisy views of the
latent vector. The pair model starts untrained (``build_pair_model(dim, {})`` with its
standardisation set from unlabelled files and items), so it ranks exactly like the first
stage; it can learn that the file text naming an item is evidence for it.

The running cascade proposes its top 3 per file: the first stage's top ``--candidates``
re-ranked by the running pair model. Simulated reviewers decide them with the ground truth,
wrong with probability ``--error``. After every ``--per-round`` decisions a challenger is
fine-tuned from the running pair model on all decisions so far (``fine_tune_pair``: files
split in upload order 60/20/20 into train, calibration, evaluation), each model is
calibrated on its own top-3 suggestions of the calibration files (``calibrate_own_pair``)
and both are judged on the decided pairs of the evaluation files, each at its own operating
threshold and able to select only what it would itself suggest (``judged_pair_files``); the
challenger runs only if it wins, bringing its calibration. The start is the untrained pair
model with a fixed, uncalibrated probability (``Platt(10, -5)``: score 0.5 is p = 0.5, about
the median top-1 first-stage cosine of this world). Strategies as in ``bench/learning.py``:
``no learning`` (the pair model never changes; the decisions only recalibrate it),
``queue order`` and ``uncertainty`` (the waiting file whose suggestion is nearest the
threshold first).

Per round: precision and recall of the top 3 at the threshold, and R@1, on 1000 later test
files with full ground truth; reviewer decisions per correct statement approved that round.
Each round of ``queue order`` also judges a challenger trained on the same decisions with
``--flip`` of the training and calibration labels flipped, and finally one trained on all of
them against the final running model: the rule must refuse it. Every figure is SYNTHETIC.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench.evidence import cpu_line  # noqa: E402
from bench.learning_sim import (  # noqa: E402
    challenger_cell, decide, print_corrupted, print_final, print_rounds, simulation_parser, split_labels, take_uncertain,
    verdict_cell)
from wikivel_bot.learning.judge import Verdict, judge  # noqa: E402
from wikivel_bot.learning.metrics import FileScores  # noqa: E402
from wikivel_bot.linker.cascade.pair import build_pair_model  # noqa: E402
from wikivel_bot.train.decisions.heads import Platt  # noqa: E402
from wikivel_bot.train.decisions.pair import (  # noqa: E402
    PairDecisions, PairTuneConfig, calibrate_own_pair, fine_tune_pair, judged_pair_files, pair_output)

DIM, ITEMS, TOP = 32, 200, 3
STYLE, NOISE = 2.0, 1.0          # the image view, as in bench/learning.py (zero-shot R@1 25-34 %)
TEXT_NOISE = 0.5                 # the file text's view of the item it names
FILES, TEST = 20000, 1000
THRESHOLD = 0.5
START = Platt(10.0, -5.0)


@dataclass
class World:
    """Every embedding of the world; ``data`` holds them as one PairDecisions without pairs."""

    data: PairDecisions
    truth: np.ndarray          # (FILES,) the item each file depicts
    names: np.ndarray          # (FILES,) the file text names the true item


def make_world(seed: int, names: float, misleading: float, candidates: int) -> World:
    g = np.random.default_rng(seed)
    latent = g.normal(size=(ITEMS, DIM)) / np.sqrt(DIM)
    style = g.normal(size=DIM) / np.sqrt(DIM)

    def view(rows: Any, noise: float) -> np.ndarray:
        return latent[rows] + noise * g.normal(size=(len(rows), DIM)) / np.sqrt(DIM)

    def norm(a: np.ndarray) -> torch.Tensor:
        return F.normalize(torch.tensor(a, dtype=torch.float32), dim=-1)

    freq = 1.0 / np.arange(1, ITEMS + 1) ** 0.7
    truth = g.choice(ITEMS, size=FILES, p=freq / freq.sum())
    image = view(truth, NOISE) + STYLE * style
    item_text = norm(view(np.arange(ITEMS), 0.3))
    item_image = norm(view(np.arange(ITEMS), 0.5))
    item_image_present = torch.tensor(g.random(ITEMS) < 0.7)
    item_image[~item_image_present] = 0.0
    # The file text: names the true item, or (misleading) a random other one, or is absent.
    draw = g.random(FILES)
    named = np.where(draw < names, truth, (truth + g.integers(1, ITEMS, size=FILES)) % ITEMS)
    present = torch.tensor(draw < names + misleading)
    text = norm(view(named, TEXT_NOISE))
    text[~present] = 0.0
    files = norm(image)
    data = PairDecisions(files=files, items=item_text, page_ids=list(range(FILES)),
                         qids=[str(i) for i in range(ITEMS)], pair_file=torch.zeros(0, dtype=torch.long),
                         pair_item=torch.zeros(0, dtype=torch.long), label=torch.zeros(0), split=[], text=text,
                         present=present, first_query=files, item_image=item_image,
                         item_image_present=item_image_present, first_items=item_text, candidates=candidates)
    return World(data, truth, present.numpy() & (named == truth))


def fresh_pair(world: World, seed: int) -> torch.nn.Module:
    """The untrained pair model, standardised from unlabelled files (the first 2000) and items."""
    torch.manual_seed(seed)
    pair = build_pair_model(DIM, {})
    d = world.data
    pair.set_statistics(d.files[:2000], d.text[:2000], d.items, d.item_image)
    return pair.eval()


@dataclass
class Running:
    pair: torch.nn.Module
    platt: Platt = START


def cascade_top(pair: torch.nn.Module, world: World, rows: np.ndarray, k: int = TOP) -> Tuple[torch.Tensor, ...]:
    """(scores, item rows) of the cascade's top ``k`` per file: the first stage's top
    ``candidates`` re-ranked by ``pair`` (as ``train.decisions.pair._own_top`` does)."""
    d, batch = world.data, torch.tensor(rows, dtype=torch.long)
    pair.eval()
    with torch.no_grad():
        first = d.first_query[batch] @ d.first_items.T
        index = first.topk(d.candidates, dim=1).indices
        top = pair_output(pair, d, batch, index).scores.topk(k, dim=1)
    return top.values, torch.gather(index, 1, top.indices)


def test_metrics(model: Running, world: World, test_rows: np.ndarray) -> Tuple[float, float, float]:
    """Precision and recall of the top 3 at the threshold (recall: files whose item is among
    the selected), and R@1, on fully labelled files."""
    scores, items = cascade_top(model.pair, world, test_rows)
    probs = model.platt(scores.double()).numpy()
    correct = items.numpy() == world.truth[test_rows][:, None]
    chosen = probs >= THRESHOLD
    precision = float(correct[chosen].mean()) if chosen.any() else float("nan")
    return precision, float((correct & chosen).any(axis=1).mean()), float(correct[:, 0].mean())


def tensors(world: World, pairs: List[Tuple[int, int, float]], flip: float = 0.0, seed: int = 0) -> PairDecisions:
    """The decisions so far, split by file in upload order 0.6/0.2/0.2 (evaluation latest);
    ``flip``: share of train and calibration labels flipped (corrupted reviewers)."""
    rows, labels, split = split_labels(pairs, flip, seed)
    position = {f: i for i, f in enumerate(rows)}
    d, at = world.data, torch.tensor(rows, dtype=torch.long)
    return PairDecisions(files=d.files[at], items=d.items, page_ids=rows, qids=d.qids,
                         pair_file=torch.tensor([position[f] for f, _, _ in pairs]),
                         pair_item=torch.tensor([i for _, i, _ in pairs]), label=torch.tensor(labels), split=split,
                         text=d.text[at], present=d.present[at], first_query=d.first_query[at], item_image=d.item_image,
                         item_image_present=d.item_image_present, first_items=d.first_items, candidates=d.candidates)


def own_files(pair: torch.nn.Module, data: PairDecisions, platt: Platt) -> List[FileScores]:
    return [FileScores(p, tuple(ps), tuple(ys), tuple(ss)) for p, ps, ys, ss in judged_pair_files(pair, data, platt, TOP)]


def judged(champion: Running, data: PairDecisions, config: PairTuneConfig, seed: int) -> Tuple[Verdict, Running]:
    """A challenger fine-tuned from the running pair model, both calibrated and judged on
    their own suggestions (``train.decisions.pair``), as ``learning.cycle`` does."""
    challenger = fine_tune_pair(champion.pair, data, config)
    pa, pb = calibrate_own_pair(champion.pair, data, TOP), calibrate_own_pair(challenger, data, TOP)
    verdict = judge(own_files(champion.pair, data, pa), own_files(challenger, data, pb), threshold=THRESHOLD,
                    resamples=1000, seed=seed)
    return verdict, Running(challenger, pb)


def simulate(strategy: str, world: World, args: argparse.Namespace, test_rows: np.ndarray):
    g = np.random.default_rng(args.seed + 1)
    model = Running(fresh_pair(world, args.seed))
    pairs: List[Tuple[int, int, float]] = []
    next_file, pending = 0, []   # pending: (file row, item) shown, not decided
    config = PairTuneConfig(epochs=args.epochs, lr=args.lr, seed=args.seed)
    out: List[Dict[str, object]] = []
    flipped: list = []
    for round_no in range(1, args.rounds + 1):
        arriving = args.per_round // TOP * (2 if strategy == "uncertainty" else 1)
        new = np.arange(next_file, next_file + arriving)
        next_file += arriving
        _, top = cascade_top(model.pair, world, new)
        pending += [(int(f), int(i)) for f, row in zip(new, top.tolist()) for i in row]
        if strategy == "uncertainty":
            # The queue's uncertainty order, as bench/learning.py (learning_sim.take_uncertain).
            rows = torch.tensor([f for f, _ in pending])
            with torch.no_grad():
                scores = pair_output(model.pair, world.data, rows, torch.tensor([[i] for _, i in pending])).scores[:, 0]
            take, pending = take_uncertain(pending, model.platt(scores.double()).numpy(), THRESHOLD,
                                           args.per_round // TOP)
        else:
            take, pending = pending[:args.per_round], pending[args.per_round:]
        correct_approved = decide(take, world.truth, args.error, g, pairs)
        promoted, tried = "—", None
        if strategy != "no learning":
            verdict, challenger = judged(model, tensors(world, pairs), config, args.seed)
            if strategy == "queue order":
                bad_verdict, bad = judged(model, tensors(world, pairs, flip=args.flip, seed=args.seed + round_no),
                                          config, args.seed)
                flipped.append((bad_verdict, test_metrics(model, world, test_rows), test_metrics(bad, world, test_rows)))
            tried = test_metrics(challenger, world, test_rows)
            if verdict.promote:
                model = challenger
            promoted = verdict_cell(verdict)
        else:
            model = Running(model.pair, calibrate_own_pair(model.pair, tensors(world, pairs), TOP))
        precision, recall, r1 = test_metrics(model, world, test_rows)
        out.append({"round": round_no, "decisions": len(pairs), "precision": precision, "recall": recall, "R@1": r1,
                    "per_correct": len(take) / max(1, correct_approved), "promoted": promoted,
                    "challenger": challenger_cell(tried)})
    return out, model, flipped, pairs


def main() -> None:
    parser = simulation_parser(__doc__.split("\n\n")[0], rounds=4, epochs=30, lr=1e-3)
    parser.add_argument("--candidates", type=int, default=20, help="the first stage's K")
    parser.add_argument("--names", type=float, default=0.6, help="share of files whose text names their item")
    parser.add_argument("--misleading", type=float, default=0.15, help="share whose text names another item")
    parser.add_argument("--strategies", default="no learning,queue order,uncertainty")
    args = parser.parse_args()
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = sorted(set(strategies) - {"no learning", "queue order", "uncertainty"})
    if unknown or "queue order" not in strategies:
        parser.error(f"--strategies: unknown {unknown}" if unknown else "--strategies must include 'queue order'")
    if not 0 <= args.names + args.misleading <= 1 or min(args.names, args.misleading) < 0:
        parser.error("--names and --misleading are shares that add up to at most 1")
    if not TOP <= args.candidates <= ITEMS:
        parser.error(f"--candidates must be between {TOP} and {ITEMS}")
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"command: .venv/bin/python bench/learning_pair.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"date: {when}; CPU: {cpu_line()}; {args.threads} torch threads")
    print(f"SYNTHETIC: {ITEMS} items, embeddings of dim {DIM}; file text names the item for "
          f"{100 * args.names:.0f} % of files, another item for {100 * args.misleading:.0f} %, absent otherwise; "
          f"first stage's top {args.candidates} re-ranked by the pair model; reviewers wrong "
          f"{100 * args.error:.0f} % of the time, {args.per_round} decisions per round, threshold {THRESHOLD} on each "
          f"model's own calibrated probability; test: {TEST} later files with full truth")
    for seed in [int(x) for x in args.seeds.split(",") if x.strip()]:
        args.seed = seed
        run_seed(args, strategies)
    print()
    print(f"{time.perf_counter() - started:.0f} s in all")


def run_seed(args: argparse.Namespace, strategies: List[str]) -> None:
    world = make_world(args.seed, args.names, args.misleading, args.candidates)
    test_rows = np.arange(FILES - TEST, FILES)
    results, final = {}, {}
    for strategy in strategies:
        results[strategy], final[strategy], flips, pairs = simulate(strategy, world, args, test_rows)
        if strategy == "queue order":
            corrupted, queue_pairs = flips, pairs
    base = test_metrics(Running(fresh_pair(world, args.seed)), world, test_rows)
    print()
    print(f"### Seed {args.seed} (first-stage R@1 {100 * base[2]:.1f}; test files whose text names "
          f"their item: {100 * world.names[test_rows].mean():.0f} %)")
    print()
    print_rounds(results)
    print()
    print_corrupted(corrupted, args.flip)
    config = PairTuneConfig(epochs=args.epochs, lr=args.lr, seed=args.seed)
    final_verdict, _ = judged(final["queue order"], tensors(world, queue_pairs, flip=args.flip, seed=args.seed),
                              config, args.seed)
    print_final(final_verdict, len(queue_pairs), args.flip)


if __name__ == "__main__":
    main()
