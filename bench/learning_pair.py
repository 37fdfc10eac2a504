"""Does the cascade's pair model learn from its reviewers? A simulation on SYNTHETIC embeddings.

    nice -n 10 .venv/bin/python bench/learning_pair.py [--rounds 4] [--per-round 500] [--error 0.05]
        [--seeds 0,1,2] [--train-seeds 0,1,2,3,4] [--jobs 2] [--raw bench/results/learning_pair.jsonl]

The companion of ``bench/learning.py`` (which fine-tunes Naive CLIP's heads) for the cascade
(``linker.cascade``): the first stage and every embedding stay frozen, and a learning round
fine-tunes only the pair model that re-ranks the first stage's candidates
(``train.decisions.pair``), calibrates it on its own suggestions and judges it against
the running one by the round's own contest (``learning.contest``: the utility rule, each
reviewer's share of the evaluation capped, leave-one-reviewer-out), as ``learning.cycle`` does.

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
challenger runs only if it wins, bringing its calibration, and otherwise the running pair
model runs recalibrated. The start is the untrained pair
model with a fixed, uncalibrated probability (``Platt(10, -5)``: score 0.5 is p = 0.5, about
the median top-1 first-stage cosine of this world). Strategies as in ``bench/learning.py``:
``no learning`` (the pair model never changes; the decisions only recalibrate it),
``queue order`` and ``uncertainty`` (the waiting file whose suggestion is nearest the
threshold first).

Per round: precision and recall of the top 3 at the threshold, R@1 and the utility per file
(TP − FP), on 1000 later test files with full ground truth. Each round of ``queue order``
also judges a challenger trained with ``--flip`` of the training and calibration labels
flipped, and the two poisoning cases of ``bench/learning.py``. The grid of data seeds ×
training seeds is run, kept raw (``--raw``) and summarised as in ``bench/learning.py``
(``bench/learning_report.py``). Every figure is SYNTHETIC.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench.learning import full_truth  # noqa: E402
from bench.learning_report import main_of  # noqa: E402
from bench.learning_sim import TOP, Decision, Pair, Running, World  # noqa: E402
from wikivel_bot.linker.cascade.pair import build_pair_model  # noqa: E402
from wikivel_bot.train.decisions.heads import Platt  # noqa: E402
from wikivel_bot.train.decisions.pair import (  # noqa: E402
    PairDecisions, PairTuneConfig, calibrate_own_pair, fine_tune_pair, judged_pair_files, pair_output)

DIM, ITEMS = 32, 200
STYLE, NOISE = 2.0, 1.0          # the image view, as in bench/learning.py (zero-shot R@1 25-34 %)
TEXT_NOISE = 0.5                 # the file text's view of the item it names
FILES, TEST = 20000, 1000
START = Platt(10.0, -5.0)


@dataclass
class PairLearner:
    """The round's pair-model learner without a linker (``train.decisions.learners.PairLearner``
    minus encoding and saving): the same fine-tune, calibration and judgement."""

    champion: Any

    def fine_tune(self, data: PairDecisions, epochs: int, lr: float, seed: int) -> Any:
        return fine_tune_pair(self.champion, data, PairTuneConfig(epochs=epochs, lr=lr, seed=seed))

    def calibrate(self, model: Any, data: PairDecisions, top_k: int) -> Any:
        return calibrate_own_pair(model, data, top_k)

    def judged(self, model: Any, data: PairDecisions, platt: Any, top_k: int) -> List[Any]:
        return judged_pair_files(model, data, platt, top_k)


class PairWorld(World):
    """Every embedding of the world; ``data`` holds them as one PairDecisions without pairs."""

    def __init__(self, seed: int, names: float, misleading: float, candidates: int) -> None:
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
        self.data = PairDecisions(
            files=files, items=item_text, page_ids=list(range(FILES)), qids=[str(i) for i in range(ITEMS)],
            pair_file=torch.zeros(0, dtype=torch.long), pair_item=torch.zeros(0, dtype=torch.long),
            label=torch.zeros(0), split=[], text=text, present=present, first_query=files, item_image=item_image,
            item_image_present=item_image_present, first_items=item_text, candidates=candidates)
        self.truth = truth
        self.names = present.numpy() & (named == truth)
        self.test_rows = np.arange(FILES - TEST, FILES)

    def start(self, seed: int) -> Running:
        """The untrained pair model, standardised from unlabelled files (the first 2000) and items."""
        torch.manual_seed(seed)
        pair = build_pair_model(DIM, {})
        d = self.data
        pair.set_statistics(d.files[:2000], d.text[:2000], d.items, d.item_image)
        return Running(pair.eval(), START)

    def _top(self, pair: Any, rows: np.ndarray) -> Any:
        """(scores, item rows) of the cascade's top 3 per file: the first stage's top
        ``candidates`` re-ranked by ``pair`` (as ``train.decisions.pair._own_top`` does)."""
        d, batch = self.data, torch.tensor(rows, dtype=torch.long)
        pair.eval()
        with torch.no_grad():
            first = d.first_query[batch] @ d.first_items.T
            index = first.topk(d.candidates, dim=1).indices
            top = pair_output(pair, d, batch, index).scores.topk(TOP, dim=1)
        return top.values, torch.gather(index, 1, top.indices)

    def top(self, model: Running, rows: np.ndarray) -> List[List[int]]:
        return self._top(model.model, rows)[1].tolist()

    def probabilities(self, model: Running, pending: List[Pair]) -> np.ndarray:
        rows = torch.tensor([f for f, _ in pending])
        with torch.no_grad():
            scores = pair_output(model.model, self.data, rows, torch.tensor([[i] for _, i in pending])).scores[:, 0]
        return model.platt(scores.double()).numpy()

    def test(self, model: Running) -> Dict[str, float]:
        scores, items = self._top(model.model, self.test_rows)
        return full_truth(items.numpy(), model.platt(scores.double()).numpy(), self.truth[self.test_rows])

    def tensors(self, decisions: List[Decision], labels: List[float], split: List[str],
                reviewers: List[str]) -> PairDecisions:
        rows = sorted({f for f, _, _ in decisions})
        position = {f: i for i, f in enumerate(rows)}
        d, at = self.data, torch.tensor(rows, dtype=torch.long)
        return PairDecisions(files=d.files[at], items=d.items, page_ids=rows, qids=d.qids,
                             pair_file=torch.tensor([position[f] for f, _, _ in decisions]),
                             pair_item=torch.tensor([i for _, i, _ in decisions]), label=torch.tensor(labels),
                             split=split, reviewer=reviewers, text=d.text[at], present=d.present[at],
                             first_query=d.first_query[at], item_image=d.item_image,
                             item_image_present=d.item_image_present, first_items=d.first_items,
                             candidates=d.candidates)

    def learner(self, model: Running) -> PairLearner:
        return PairLearner(model.model)


def make_world(args: Any) -> PairWorld:
    return PairWorld(args.data_seed, args.names, args.misleading, args.candidates)


def describe(world: PairWorld, args: Any) -> str:
    base = world.test(world.start(args.train_seed))
    return (f"first-stage R@1 {100 * base['R@1']:.1f}; test files whose text names their item: "
            f"{100 * world.names[world.test_rows].mean():.0f} %")


def _options(parser: Any) -> None:
    parser.add_argument("--candidates", type=int, default=20, help="the first stage's K")
    parser.add_argument("--names", type=float, default=0.6, help="share of files whose text names their item")
    parser.add_argument("--misleading", type=float, default=0.15, help="share whose text names another item")


def _check(parser: Any, args: Any) -> None:
    if not 0 <= args.names + args.misleading <= 1 or min(args.names, args.misleading) < 0:
        parser.error("--names and --misleading are shares that add up to at most 1")
    if not TOP <= args.candidates <= ITEMS:
        parser.error(f"--candidates must be between {TOP} and {ITEMS}")


if __name__ == "__main__":
    main_of("bench/learning_pair.py", __doc__, make_world, describe, rounds=4, epochs=30, lr=1e-3,
            world_line=f"{ITEMS} items, embeddings of dim {DIM}; the cascade's pair model re-ranks the first stage's "
                       "top candidates, the file text naming its item for some files and another for some",
            extra=_options, check=_check)
