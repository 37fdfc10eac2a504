"""A challenger against the running model, judged as every learning round judges it.

One function, :func:`contest`, that the round (``learning.cycle``) and the SYNTHETIC benches
(``bench/learning*.py``) share, so the benches measure the rule that runs:

1. the evaluation pairs are capped per reviewer (``learning.reviewers.evaluation_cap``);
2. a challenger is fine-tuned from the running model on the ``train`` decisions;
3. both models are calibrated on their own suggestions of the ``calibration`` files (the
   running model with the same weights: its recalibration, which the round then runs, so the
   challenger is compared with what would run without it). A calibration set of one class
   only gives no fit: that model keeps the threshold it had (``current``) and the contest says so;
4. both are judged on the capped evaluation decisions (``learning.judge``);
5. a win must survive leaving out any one reviewer (``learning.reviewers.leave_one_out``):
   the challenger that would run, judged without that reviewer's evaluation decisions, and a
   challenger fine-tuned, calibrated and judged without any of that reviewer's decisions,
   must both still come out ahead (:func:`_lost`: the gain keeps its direction; the interval
   is asked of all the decisions in step 4). The first that does not turns the verdict into a
   keep, naming the reviewer.

It imports no torch: ``learner`` does the fitting (``train.decisions.learners``: ``champion``,
``fine_tune``, ``calibrate``, ``judged``) and ``data`` is its decided pairs
(``train.decisions.heads.DecisionTensors``: ``split``, ``reviewers()``, ``keep(mask)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from wikivel_bot.learning.judge import Verdict, judge
from wikivel_bot.learning.metrics import METRICS, FileScores
from wikivel_bot.learning.reviewers import EVALUATION_SHARE, evaluation_cap, leave_one_out, without


@dataclass(frozen=True)
class Rules:
    """How a contest is run: the round's settings (``learning.*``) and the guard rails."""

    threshold: float = 0.5
    top_k: int = 10
    epochs: int = 30
    lr: float = 1e-3
    seed: int = 0
    resamples: int = 1000
    share: float = EVALUATION_SHARE
    leave_one_out: bool = True
    min_files: int = 20
    # What a left-out judgement must keep of the win: "direction" or "full" (see _lost).
    survive: str = "direction"


@dataclass(frozen=True)
class Contest:
    """What a contest gave.

    :param calibration: the challenger's (None: its calibration files were of one kind).
    :param champion_calibration: the running model's, re-fitted here (None: likewise).
    :param capped: evaluation pairs left out per reviewer by the share cap.
    :param checks: the leave-one-reviewer-out judgements, in the order run.
    """

    verdict: Verdict
    challenger: Any
    calibration: Optional[Any]
    champion_calibration: Optional[Any]
    capped: Dict[str, int] = field(default_factory=dict)
    checks: List[Dict[str, Any]] = field(default_factory=list)

    def report(self) -> Dict[str, Any]:
        return {"capped": dict(self.capped), "leave_one_reviewer_out": list(self.checks)}


def contest(learner: Any, data: Any, rules: Rules, *, current: Optional[Any] = None,
            challenger: Any = None) -> Contest:
    """Run the five steps of the module docstring.

    :param learner: what fits (``champion`` is the running model).
    :param data: the round's decided pairs.
    :param current: the running model's calibration as it runs now, used when it cannot be
        re-fitted; None: it has none (an uncalibrated linker), and then nothing is judged.
    :param challenger: one already fine-tuned on ``data`` (the benches judge one challenger
        under two sets of rules); None: fine-tune it here.
    """
    if challenger is None:
        challenger = learner.fine_tune(data, rules.epochs, rules.lr, rules.seed)
    champion_cal = learner.calibrate(learner.champion, data, rules.top_k)
    challenger_cal = learner.calibrate(challenger, data, rules.top_k)
    keep, capped = evaluation_cap(data.split, data.reviewers(), share=rules.share)
    judged = data.keep(keep) if capped else data
    baseline = champion_cal if champion_cal is not None else current
    verdict = _judged(learner, challenger, baseline, challenger_cal, judged, rules)
    checks: List[Dict[str, Any]] = []
    if verdict.promote and rules.leave_one_out:
        for name in leave_one_out(data.reviewers()):
            verdict = _survives(learner, data, judged, name, challenger, baseline, challenger_cal, rules,
                                verdict, checks, current)
            if not verdict.promote:
                break
    return Contest(verdict, challenger, challenger_cal, champion_cal, capped, checks)


def _survives(learner: Any, data: Any, judged: Any, name: str, challenger: Any, champion_cal: Any,
              challenger_cal: Any, rules: Rules, verdict: Verdict, checks: List[Dict[str, Any]],
              current: Optional[Any]) -> Verdict:
    """The two leave-``name``-out judgements (module docstring, step 5); the verdict kept on a loss."""
    as_trained = _judged(learner, challenger, champion_cal, challenger_cal,
                         judged.keep(without(judged.reviewers(), name)), rules)
    checks.append(_check(name, "the challenger as trained, judged without them", as_trained, rules))
    why = _lost(as_trained, rules)
    if why:
        return verdict.kept(f"without reviewer {name}'s evaluation decisions the challenger does not win: {why}")
    rest = data.keep(without(data.reviewers(), name))
    retrained = learner.fine_tune(rest, rules.epochs, rules.lr, rules.seed)
    keep, _ = evaluation_cap(rest.split, rest.reviewers(), share=rules.share)
    refit = learner.calibrate(learner.champion, rest, rules.top_k)
    again = _judged(learner, retrained, refit if refit is not None else current,
                    learner.calibrate(retrained, rest, rules.top_k), rest.keep(keep), rules)
    checks.append(_check(name, "a challenger trained and judged without them", again, rules))
    why = _lost(again, rules)
    if why:
        return verdict.kept(f"a challenger trained and judged without reviewer {name}'s decisions does not win: {why}")
    return verdict


def _lost(verdict: Verdict, rules: Rules) -> str:
    """Why a left-out judgement does not hold the win, or "".

    ``survive="direction"`` (the default): the win must keep its direction — a utility gain
    above 0, the challenger still selecting, its precision not below the champion's by more
    than the margin — while its significance is asked of all the decisions at once. Asking
    every left-out judgement for a significant win of its own (``survive="full"``) tests the
    same question a dozen times on less data: on the SYNTHETIC heads bench it let 9 of 150
    learning rounds promote, and held back 33 challengers the rule before promoted that were
    far better on the full truth (docs/learning.md, "Measured").
    """
    if rules.survive == "full":
        return "" if verdict.promote else "; ".join(verdict.reasons)
    utility, precision = verdict.deltas["utility"]["delta"], verdict.deltas["precision"]["delta"]
    if not verdict.challenger.get("selected"):
        return "it selects nothing"
    if not utility > 0:
        return f"utility change {utility:+.3f} per file"
    if precision < -verdict.settings.get("margin", 0.0):
        return f"precision change {precision:+.3f}"
    return ""


def _check(name: str, what: str, verdict: Verdict, rules: Rules) -> Dict[str, Any]:
    d = verdict.deltas.get("utility", {})
    why = _lost(verdict, rules)
    return {"without": name, "what": what, "holds": not why, "why": why, "outcome": verdict.outcome,
            "reasons": list(verdict.reasons), "utility": {k: d.get(k) for k in ("delta", "low", "high")}}


def _judged(learner: Any, challenger: Any, champion_cal: Optional[Any], challenger_cal: Optional[Any], data: Any,
            rules: Rules) -> Verdict:
    """Both models judged on ``data``'s evaluation pairs, each with its calibration; a keep
    saying why when either has none."""
    files = len({p for p, s in zip(data.pair_file.tolist(), data.split) if s == "evaluation"})
    if challenger_cal is None:
        return unjudged("the challenger's own suggestions on the calibration files are of one kind: no calibration "
                        "to run it at", files, rules.threshold)
    if champion_cal is None:
        return unjudged("the running model has no calibration and its own suggestions on the calibration files are "
                        "of one kind: nothing to judge against", files, rules.threshold)
    return judge(scores(learner.judged(learner.champion, data, champion_cal, rules.top_k)),
                 scores(learner.judged(challenger, data, challenger_cal, rules.top_k)),
                 threshold=rules.threshold, resamples=rules.resamples, seed=rules.seed, min_files=rules.min_files)


def unjudged(reason: str, files: int, threshold: float) -> Verdict:
    """A keep with no numbers (every metric n/a), for a contest that could not be judged."""
    nothing = {name: math.nan for name in METRICS}
    return Verdict("keep", [reason], dict(nothing), dict(nothing),
                   {name: {"delta": math.nan, "low": math.nan, "high": math.nan} for name in METRICS}, files, threshold)


def scores(rows: Sequence[Any]) -> List[FileScores]:
    """``learner.judged`` rows (page, probabilities, labels, suggested) as the judge reads them."""
    return [FileScores(page, tuple(ps), tuple(ys), tuple(ss)) for page, ps, ys, ss in sorted(rows, key=lambda r: r[0])]


# A running model is recalibrated only on at least this many calibration files (the judge's own
# minimum of evaluation files): a Platt fit on a handful of pairs would move its threshold at random.
RECALIBRATION_MIN_FILES = 20


def recalibration_refused(platt: Optional[Any], data: Any, min_files: Optional[int] = None) -> str:
    """Why the running model keeps its threshold this round, or "" when it is recalibrated
    (``learning.cycle``): no map (the calibration files' own suggestions of one kind), a map
    that falls as the score rises, or too few calibration files."""
    if platt is None:
        return "its own suggestions on the calibration files are of one kind"
    if not platt.a > 0:
        return f"on the calibration files its score does not rise with approval (Platt slope {platt.a:.3g})"
    files = len({int(f) for f, s in zip(data.pair_file.tolist(), data.split) if s == "calibration"})
    min_files = RECALIBRATION_MIN_FILES if min_files is None else min_files
    if files < min_files:
        return f"only {files} calibration files (at least {min_files} needed)"
    return ""
