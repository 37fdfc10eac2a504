"""Does the bot learn from its reviewers? A simulation on SYNTHETIC embeddings.

    nice -n 10 .venv/bin/python bench/learning.py [--rounds 5] [--per-round 500] [--error 0.05]
        [--seeds 0,1,2] [--train-seeds 0,1,2,3,4] [--jobs 2] [--raw bench/results/learning.jsonl]

Synthetic world (no images, no open_clip: the heads train on frozen embeddings, as they do on
real CLIP ones): 200 items with latent vectors; a file's "image embedding" and an item's
"text embedding" are noisy, differently rotated views of the latent vectors, so the identity
heads (zero-shot) rank poorly and trained heads can learn the map. Files arrive in upload
order, items by a Zipf-like frequency. The running model proposes its top 3 per file; six
honest simulated reviewers decide them with the ground truth, wrong with probability ``--error``.

After every ``--per-round`` decisions a round runs exactly as ``learning.cycle`` runs it
(``learning.contest``): a challenger fine-tuned from the running heads on all decisions so
far, both calibrated on their own top-3 suggestions of the held-out middle files, judged on
the latest files by the utility rule (``learning.judge``) with each reviewer's share of the
evaluation capped and a win left to survive leaving out any one reviewer; a winner runs,
otherwise the running heads run recalibrated. The start is the untrained heads with a fixed,
uncalibrated probability (``Platt(10, -3)``: cosine 0.3 is p = 0.5). Strategies:
``no learning`` (recalibration only), ``queue order`` and ``uncertainty`` (the waiting file
whose suggestion is nearest the threshold first).

Measured on 1000 later test files with full ground truth: precision and recall of the top 3
at the threshold, R@1 and the utility per file (TP − FP at threshold 0.5). Each round of
``queue order`` also judges a challenger trained with ``--flip`` of the training and
calibration labels flipped, and two poisoning cases (one account deciding ``--poison-share``
of the files in every split, approving everything or flipping everything) with and without
the guard rails. Every run of the grid of data seeds × training seeds is kept raw (``--raw``);
the summary is mean ± a 95 % t-interval over the runs. Every figure is SYNTHETIC.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench.learning_report import main_of  # noqa: E402
from bench.learning_sim import THRESHOLD, TOP, Decision, Pair, Running, World  # noqa: E402
from wikivel_bot.linker.heads import NaiveHeads  # noqa: E402
from wikivel_bot.train.decisions.heads import DecisionTensors, Platt  # noqa: E402
from wikivel_bot.train.decisions.learners import HeadsLearner  # noqa: E402

DIM, ITEMS = 32, 200
STYLE, NOISE = 2.0, 1.0
FILES, TEST = 20000, 1000


class HeadsWorld(World):
    """Items and files as embeddings; the model is Naive CLIP's two heads."""

    def __init__(self, seed: int) -> None:
        g = np.random.default_rng(seed)
        latent = g.normal(size=(ITEMS, DIM)) / np.sqrt(DIM)
        # A shared "photo" direction in every image embedding: zero-shot then favours the items
        # that lean towards it (the generic tags reviewers reject); heads can learn it away.
        style = g.normal(size=DIM) / np.sqrt(DIM)
        text = latent + 0.3 * g.normal(size=(ITEMS, DIM)) / np.sqrt(DIM)
        freq = 1.0 / np.arange(1, ITEMS + 1) ** 0.7
        self.truth = g.choice(ITEMS, size=FILES, p=freq / freq.sum())
        image = latent[self.truth] + STYLE * style + NOISE * g.normal(size=(FILES, DIM)) / np.sqrt(DIM)
        self.items = F.normalize(torch.tensor(text, dtype=torch.float32), dim=-1)
        self.files = F.normalize(torch.tensor(image, dtype=torch.float32), dim=-1)
        self.test_rows = np.arange(FILES - TEST, FILES)

    def start(self, seed: int) -> Running:
        torch.manual_seed(seed)   # the heads' first layers: the same start for every strategy
        return Running(NaiveHeads(DIM, dropout=0.1).eval(), Platt(10.0, -3.0))

    def _cosines(self, heads: Any, rows: np.ndarray) -> torch.Tensor:
        heads.eval()
        with torch.no_grad():
            q = F.normalize(heads.image_head(self.files[rows]), dim=-1)
            e = F.normalize(heads.text_head(self.items), dim=-1)
            return q @ e.T

    def top(self, model: Running, rows: np.ndarray) -> List[List[int]]:
        return self._cosines(model.model, rows).topk(TOP, dim=1).indices.tolist()

    def probabilities(self, model: Running, pending: List[Pair]) -> np.ndarray:
        rows = np.array([f for f, _ in pending])
        items = torch.tensor([i for _, i in pending])
        with torch.no_grad():
            q = F.normalize(model.model.image_head(self.files[rows]), dim=-1)
            e = F.normalize(model.model.text_head(self.items[items]), dim=-1)
            return model.platt((q * e).sum(dim=-1)).numpy()

    def test(self, model: Running) -> Dict[str, float]:
        top = self._cosines(model.model, self.test_rows).topk(TOP, dim=1)
        probs = model.platt(top.values).numpy()
        return full_truth(top.indices.numpy(), probs, self.truth[self.test_rows])

    def tensors(self, decisions: List[Decision], labels: List[float], split: List[str],
                reviewers: List[str]) -> DecisionTensors:
        rows = sorted({f for f, _, _ in decisions})
        position = {f: i for i, f in enumerate(rows)}
        return DecisionTensors(self.files[rows], self.items, rows, [str(i) for i in range(ITEMS)],
                               torch.tensor([position[f] for f, _, _ in decisions]),
                               torch.tensor([i for _, i, _ in decisions]), torch.tensor(labels), split,
                               reviewer=reviewers)

    def learner(self, model: Running) -> HeadsLearner:
        # The round's own learner; only its linker-free parts run here (fine-tune, calibrate, judge).
        return HeadsLearner(None, model.model, None)


def full_truth(items: np.ndarray, probs: np.ndarray, truth: np.ndarray) -> Dict[str, float]:
    """Precision and recall of the top 3 at the threshold (recall: files whose item is among
    the selected), R@1, and the utility per file (TP − λ·FP, λ = 1 at threshold 0.5)."""
    correct = items == truth[:, None]
    chosen = probs >= THRESHOLD
    tp, fp = float((correct & chosen).sum()), float((chosen & ~correct).sum())
    return {"precision": tp / (tp + fp) if tp + fp else float("nan"),
            "recall": float((correct & chosen).any(axis=1).mean()), "R@1": float(correct[:, 0].mean()),
            "utility": (tp - THRESHOLD / (1 - THRESHOLD) * fp) / len(truth)}


def make_world(args: Any) -> HeadsWorld:
    return HeadsWorld(args.data_seed)


def describe(world: HeadsWorld, args: Any) -> str:
    base = world.test(world.start(args.train_seed))
    return f"zero-shot R@1 {100 * base['R@1']:.1f}"


if __name__ == "__main__":
    main_of("bench/learning.py", __doc__, make_world, describe, rounds=5, epochs=20, lr=3e-3,
            world_line=f"{ITEMS} items, embeddings of dim {DIM}; heads trained on frozen embeddings")
