"""What the two learning simulations share (bench/learning.py: the heads; bench/learning_pair.py:
the cascade's pair model): the review queue, the simulated reviewers, the split of their
decisions and how a verdict is shown. Every figure they give is SYNTHETIC."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

Pair = Tuple[int, int]            # (file row, item) shown to reviewers
Decision = Tuple[int, int, float]  # (file row, item, 1.0 approved / 0.0 rejected)


def take_uncertain(pending: List[Pair], probabilities: Sequence[float], threshold: float,
                   files: int) -> Tuple[List[Pair], List[Pair]]:
    """The queue's uncertainty order (core/review_order.py): whole files, the one whose
    suggestion is nearest the threshold first; reviewers decide all of a file's suggestions.

    :returns: (the ``files`` files' pairs to decide, what still waits)."""
    gap = np.abs(np.asarray(probabilities, dtype=float) - threshold)
    nearest: Dict[int, float] = {}
    for (f, _), d in zip(pending, gap):
        nearest[f] = min(nearest.get(f, 1.0), float(d))
    chosen = set(sorted(nearest, key=lambda f: (nearest[f], f))[:files])
    return [p for p in pending if p[0] in chosen], [p for p in pending if p[0] not in chosen]


def decide(take: List[Pair], truth: np.ndarray, error: float, g: np.random.Generator,
           decisions: List[Decision]) -> int:
    """Simulated reviewers decide ``take`` with the ground truth, wrong with probability
    ``error``; their decisions are appended to ``decisions``. Returns the correct approvals."""
    correct_approved = 0
    for f, i in take:
        right = truth[f] == i
        says = right if g.random() >= error else not right
        decisions.append((f, i, 1.0 if says else 0.0))
        correct_approved += int(says and right)
    return correct_approved


def split_labels(decisions: List[Decision], flip: float = 0.0,
                 seed: int = 0) -> Tuple[List[int], List[float], List[str]]:
    """The decided files in upload order, and per decision its label and split: by file,
    0.6/0.2/0.2 (evaluation latest); ``flip``: share of train and calibration labels flipped
    (corrupted reviewers)."""
    rows = sorted({f for f, _, _ in decisions})
    cut1, cut2 = rows[int(len(rows) * 0.6)], rows[int(len(rows) * 0.8)]
    g = np.random.default_rng(seed)
    labels, split = [], []
    for f, _, y in decisions:
        name = "train" if f < cut1 else "calibration" if f < cut2 else "evaluation"
        if name != "evaluation" and g.random() < flip:
            y = 1.0 - y
        labels.append(y)
        split.append(name)
    return rows, labels, split


def verdict_cell(verdict: Any) -> str:
    """"yes/no (precision change [95% interval]; the reason a win on precision was kept)"."""
    d = verdict.deltas["precision"]
    promote = verdict.promote
    return ("yes" if promote else "no") + f" ({d['delta']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]" + (
        "" if promote or d["low"] <= 0 else "; " + verdict.reasons[-1]) + ")"


def print_rounds(results: Dict[str, List[Dict[str, Any]]]) -> None:
    """The per-round table of every strategy (rows as the simulations collect them)."""
    print("| strategy | round | decisions | precision at threshold | recall at threshold | R@1 | "
          "decisions per correct statement | promoted (precision change, 95% interval) | "
          "the round's challenger: precision / R@1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for strategy, rows in results.items():
        for r in rows:
            print(f"| {strategy} | {r['round']} | {r['decisions']} | {100 * r['precision']:.1f} | "
                  f"{100 * r['recall']:.1f} | {100 * r['R@1']:.1f} | {r['per_correct']:.2f} | {r['promoted']} | "
                  f"{r['challenger']} |")


def challenger_cell(metrics: Any) -> str:
    """A challenger's (precision, recall, R@1) on the test files as "precision / R@1"; "—": none."""
    if metrics is None:
        return "—"
    precision, _, r1 = metrics
    return f"{100 * precision:.1f} / {100 * r1:.1f}"


def print_corrupted(corrupted: List[Tuple[Any, Tuple[float, ...], Tuple[float, ...]]], flip: float) -> None:
    """Each round's challenger trained on flipped labels: its verdict, and both models on the test files."""
    print(f"Challengers trained on the same decisions with {100 * flip:.0f} % of the training and calibration "
          "labels flipped, judged on the honest later decisions (queue order, each round), and, with full truth "
          "on the test files, precision at threshold / R@1 of the running model and of the corrupted challenger:")
    print()
    print("| round | verdict | precision change [95% interval] | test: running | test: corrupted | why |")
    print("|---|---|---|---|---|---|")
    for round_no, (verdict, champ, bad) in enumerate(corrupted, 1):
        d = verdict.deltas["precision"]
        print(f"| {round_no} | {verdict.outcome} | {d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] | "
              f"{100 * champ[0]:.1f} / {100 * champ[2]:.1f} | {100 * bad[0]:.1f} / {100 * bad[2]:.1f} | "
              f"{'; '.join(verdict.reasons)} |")
    print()
    print(f"Corrupted challengers refused: {sum(not v.promote for v, _, _ in corrupted)} of {len(corrupted)}.")


def print_final(verdict: Any, decisions: int, flip: float) -> None:
    """The verdict on a challenger trained on all decisions with ``flip`` of them flipped."""
    d = verdict.deltas["precision"]
    print(f"Against the final `queue order` model, a challenger trained on all {decisions} decisions with "
          f"{100 * flip:.0f} % flipped: **{verdict.outcome}** — precision change {d['delta']:+.3f} "
          f"[{d['low']:+.3f}, {d['high']:+.3f}]; " + "; ".join(verdict.reasons))


def simulation_parser(description: str, *, rounds: int, epochs: int, lr: float) -> Any:
    """The options both simulations take (each adds its own): rounds, decisions per round,
    reviewers' error rate, the corrupted challenger's flipped share, fine-tuning, seeds, threads."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--per-round", type=int, default=500)
    parser.add_argument("--error", type=float, default=0.05, help="reviewers' error rate")
    parser.add_argument("--flip", type=float, default=0.3, help="share of flipped labels for the corrupted challenger")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--lr", type=float, default=lr)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds: one synthetic world each")
    parser.add_argument("--threads", type=int, default=1)
    return parser
