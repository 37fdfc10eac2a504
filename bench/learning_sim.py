"""What the two learning simulations share (bench/learning.py: the heads; bench/learning_pair.py:
the cascade's pair model): the review queue, the simulated reviewers (honest ones, and one
who poisons), the rounds of learning, each judged by the round's own contest
(``learning.contest``), and the rule the judge used before, for comparison. A bench gives a
:class:`World` (its model, its ground truth); everything else is here. Every figure is SYNTHETIC.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.learning.contest import Contest, Rules, contest, recalibration_refused, scores
from wikivel_bot.learning.metrics import FileScores, file_counts

Pair = Tuple[int, int]            # (file row, item) shown to reviewers
Decision = Tuple[int, int, float]  # (file row, item, 1.0 approved / 0.0 rejected)
THRESHOLD, TOP = 0.5, 3
# Honest reviewers share the files; in a poisoning case one more account takes some of them.
REVIEWERS = ("ada", "ben", "chen", "dara", "eli", "fay")
POISONER = "mallory"
POISONS = ("approve-all", "flip-all")


@dataclass
class Running:
    """A model as it runs: its weights and its calibration (a Platt map)."""

    model: Any
    platt: Any


class World:
    """A bench's synthetic world (subclassed): ``truth`` per file row and the model's parts."""

    truth: np.ndarray

    def start(self, seed: int) -> Running: ...
    def top(self, model: Running, rows: np.ndarray) -> List[List[int]]: ...
    def probabilities(self, model: Running, pending: List[Pair]) -> np.ndarray: ...
    def test(self, model: Running) -> Dict[str, float]: ...
    def tensors(self, decisions: List[Decision], labels: List[float], split: List[str], reviewers: List[str]) -> Any: ...
    def learner(self, model: Running) -> Any: ...


def take_uncertain(pending: List[Pair], probabilities: Sequence[float], threshold: float,
                   files: int) -> Tuple[List[Pair], List[Pair]]:
    """The queue's uncertainty order (core/review_order.py): whole files, the one whose
    suggestion is nearest the threshold first; reviewers decide all of a file's suggestions."""
    gap = np.abs(np.asarray(probabilities, dtype=float) - threshold)
    nearest: Dict[int, float] = {}
    for (f, _), d in zip(pending, gap):
        nearest[f] = min(nearest.get(f, 1.0), float(d))
    chosen = set(sorted(nearest, key=lambda f: (nearest[f], f))[:files])
    return [p for p in pending if p[0] in chosen], [p for p in pending if p[0] not in chosen]


def decide(take: List[Pair], truth: np.ndarray, error: float, g: np.random.Generator,
           decisions: List[Decision]) -> int:
    """Honest reviewers decide ``take`` with the ground truth, wrong with probability ``error``;
    appended to ``decisions``. Returns the correct approvals."""
    correct_approved = 0
    for f, i in take:
        right = truth[f] == i
        says = right if g.random() >= error else not right
        decisions.append((f, i, 1.0 if says else 0.0))
        correct_approved += int(says and right)
    return correct_approved


@dataclass(frozen=True)
class Reviewers:
    """Who decides each file: an honest reviewer, and the files the poisoner takes in a poisoning case."""

    honest: List[str]
    poisoned: np.ndarray

    @staticmethod
    def draw(files: int, seed: int, share: float) -> "Reviewers":
        g = np.random.default_rng(seed + 7)
        return Reviewers([REVIEWERS[k] for k in g.integers(0, len(REVIEWERS), size=files)], g.random(files) < share)


def labelled(decisions: List[Decision], truth: np.ndarray, who: Reviewers, *, flip: float = 0.0, seed: int = 0,
             poison: str = "") -> Tuple[List[int], List[float], List[str], List[str]]:
    """The decided files in upload order and, per decision, its label, split (by file,
    0.6/0.2/0.2, evaluation latest) and reviewer.

    :param flip: share of train and calibration labels flipped at random (corrupted reviewers,
        never in the evaluation split).
    :param poison: ``approve-all`` or ``flip-all``: one account decides its share of the files
        in every split — approving everything, or saying the opposite of the truth.
    """
    rows = sorted({f for f, _, _ in decisions})
    cut1, cut2 = rows[int(len(rows) * 0.6)], rows[int(len(rows) * 0.8)]
    g = np.random.default_rng(seed)
    labels, split, names = [], [], []
    for f, i, y in decisions:
        name = "train" if f < cut1 else "calibration" if f < cut2 else "evaluation"
        if name != "evaluation" and g.random() < flip:
            y = 1.0 - y
        reviewer = who.honest[f]
        if poison and who.poisoned[f]:
            reviewer, y = POISONER, 1.0 if poison == "approve-all" else float(truth[f] != i)
        labels.append(y)
        split.append(name)
        names.append(reviewer)
    return rows, labels, split, names


def rules(args: argparse.Namespace, defended: bool = True) -> Rules:
    """The round's rules; ``defended`` False: no reviewer cap, no leave-one-reviewer-out."""
    return Rules(threshold=THRESHOLD, top_k=TOP, epochs=args.epochs, lr=args.lr, seed=args.train_seed,
                 resamples=1000, share=0.25 if defended else 1.0, leave_one_out=defended, survive=args.survive)


def old_rule(champion: List[FileScores], challenger: List[FileScores], seed: int, resamples: int = 1000) -> bool:
    """The judge's rule before the utility: precision gain's 95 % interval above 0 (a model that
    selects nothing scored precision 0), recall and nDCG@5 not lower, at least 20 files."""
    a, b = file_counts(champion, THRESHOLD), file_counts(challenger, THRESHOLD)
    n = a.shape[0]
    if n < 20:
        return False

    def ratios(s: np.ndarray) -> Tuple[float, float, float]:
        return (s[1] / s[0] if s[0] else 0.0, s[1] / s[2] if s[2] else np.nan, s[5] / s[3] if s[3] else np.nan)

    w = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=resamples)
    gains = np.array([ratios(y)[0] - ratios(x)[0] for x, y in zip(w @ a, w @ b)])
    pa, pb = ratios(a.sum(axis=0)), ratios(b.sum(axis=0))
    return bool(np.quantile(gains, 0.025) > 0 and pb[1] >= pa[1] and pb[2] >= pa[2])


def judged(world: World, model: Running, data: Any, args: argparse.Namespace, *, defended: bool = True,
           challenger: Any = None) -> Contest:
    return contest(world.learner(model), data, rules(args, defended), current=model.platt, challenger=challenger)


def simulate(strategy: str, world: World, args: argparse.Namespace, who: Reviewers) -> Dict[str, Any]:
    """One strategy's rounds: reviewers decide the running model's suggestions, a challenger
    is judged (``learning.contest``), promoted on a win, else the running model recalibrated."""
    g = np.random.default_rng(args.data_seed + 1)
    model = world.start(args.train_seed)
    decisions: List[Decision] = []
    next_file, pending = 0, []   # pending: (file row, item) shown, not decided
    rows_out: List[Dict[str, Any]] = []
    corrupted: List[Dict[str, Any]] = []
    poisoned: Dict[str, List[Dict[str, Any]]] = {p: [] for p in POISONS}
    for round_no in range(1, args.rounds + 1):
        arriving = args.per_round // TOP * (2 if strategy == "uncertainty" else 1)
        new = np.arange(next_file, next_file + arriving)
        next_file += arriving
        pending += [(int(f), int(i)) for f, row in zip(new, world.top(model, new)) for i in row]
        if strategy == "uncertainty":
            take, pending = take_uncertain(pending, world.probabilities(model, pending), THRESHOLD,
                                           args.per_round // TOP)
        else:
            take, pending = pending[:args.per_round], pending[args.per_round:]
        correct_approved = decide(take, world.truth, args.error, g, decisions)
        data = world.tensors(decisions, *labelled(decisions, world.truth, who)[1:])
        running_now = world.test(model)
        row: Dict[str, Any] = {"round": round_no, "decisions": len(decisions), "before": running_now,
                               "per_correct": len(take) / max(1, correct_approved)}
        if strategy == "no learning":
            calibration = world.learner(model).calibrate(model.model, data, TOP)
            outcome = None
        else:
            outcome = judged(world, model, data, args)
            calibration = outcome.champion_calibration
            # What runs when the challenger is kept (the running model recalibrated, as the
            # round does): the baseline a promotion must beat on the full truth.
            alternative = running_now if recalibration_refused(calibration, data) else \
                world.test(Running(model.model, calibration))
            row["alternative"] = alternative
            chall = Running(outcome.challenger, outcome.calibration)
            row["challenger"] = world.test(chall) if outcome.calibration is not None else None
            row["promoted"] = outcome.verdict.promote
            row["utility_gain"] = outcome.verdict.deltas["utility"]
            row["reasons"] = outcome.verdict.reasons
            row["old_rule"] = _old(world, model, outcome, data, args)
            if strategy == "queue order":
                bad = judged(world, model, world.tensors(decisions, *labelled(
                    decisions, world.truth, who, flip=args.flip, seed=args.data_seed + round_no)[1:]), args)
                corrupted.append({"round": round_no, "promoted": bad.verdict.promote, "running": alternative,
                                  "challenger": world.test(Running(bad.challenger, bad.calibration))
                                  if bad.calibration is not None else None})
                for poison in POISONS:
                    poisoned[poison].append(_poisoned(world, model, decisions, who, poison, args, alternative))
        if outcome is not None and outcome.verdict.promote:
            model = Running(outcome.challenger, outcome.calibration)
        elif not recalibration_refused(calibration, data):
            # As the round does: the running model's weights with this round's calibration.
            model = Running(model.model, calibration)
            row["recalibrated"] = {"before": running_now, "after": world.test(model)}
        row["running"] = world.test(model)
        rows_out.append(row)
    return {"rounds": rows_out, "corrupted": corrupted, "poisoned": poisoned, "model": model,
            "decisions": decisions}


def _old(world: World, model: Running, outcome: Contest, data: Any, args: argparse.Namespace) -> Optional[bool]:
    """Whether the rule before would have promoted the same challenger, on the same decisions."""
    if outcome.calibration is None:
        return None
    learner = world.learner(model)
    champion_cal = outcome.champion_calibration if outcome.champion_calibration is not None else model.platt
    return old_rule(scores(learner.judged(model.model, data, champion_cal, TOP)),
                    scores(learner.judged(outcome.challenger, data, outcome.calibration, TOP)), args.train_seed)


def _poisoned(world: World, model: Running, decisions: List[Decision], who: Reviewers, poison: str,
              args: argparse.Namespace, running_now: Dict[str, float]) -> Dict[str, Any]:
    """One account poisons its share of the files in every split: the challenger trained on
    that, judged with the guard rails (reviewer cap, leave-one-reviewer-out) and without."""
    data = world.tensors(decisions, *labelled(decisions, world.truth, who, poison=poison)[1:])
    defended = judged(world, model, data, args)
    bare = judged(world, model, data, args, defended=False, challenger=defended.challenger)
    truth = world.test(Running(defended.challenger, defended.calibration)) if defended.calibration is not None else None
    return {"defended": defended.verdict.promote, "undefended": bare.verdict.promote, "running": running_now,
            "challenger": truth, "why": defended.verdict.reasons[0] if defended.verdict.reasons else ""}


def simulation_parser(description: str, *, rounds: int, epochs: int, lr: float) -> Any:
    """The options both simulations take (each adds its own)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--per-round", type=int, default=500)
    parser.add_argument("--error", type=float, default=0.05, help="honest reviewers' error rate")
    parser.add_argument("--flip", type=float, default=0.3, help="share of flipped labels for the corrupted challenger")
    parser.add_argument("--poison-share", type=float, default=0.3,
                        help="share of the files the poisoning account decides, in every split")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--lr", type=float, default=lr)
    parser.add_argument("--seeds", default="0,1,2", help="data seeds: one synthetic world each")
    parser.add_argument("--train-seeds", default="0,1,2,3,4", help="training seeds (fine-tuning, bootstrap)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel processes (one torch thread each)")
    parser.add_argument("--raw", default="", help="write each run's raw results here (JSON lines)")
    parser.add_argument("--survive", choices=("direction", "full"), default="direction",
                        help="what a leave-one-reviewer-out judgement must keep of a win (learning.contest)")
    return parser
