"""No single reviewer decides a promotion (docs/learning.md, "Guard rails"): the evaluation
share cap, leave-one-reviewer-out, and the round's contest against one poisoning account;
and a calibration set of one class keeps the running model's threshold. Fixed geometry on
the unit circle (items and files as angles), the round's own learner and judge."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from wikivel_bot.learning.contest import Rules, contest, recalibration_refused  # noqa: E402
from wikivel_bot.learning.reviewers import evaluation_cap, leave_one_out, share_cap  # noqa: E402
from wikivel_bot.train.decisions.heads import DecisionTensors, Platt  # noqa: E402
from wikivel_bot.train.decisions.learners import HeadsLearner  # noqa: E402


def test_no_reviewer_holds_more_than_a_quarter_of_the_evaluation() -> None:
    split = ["train"] * 10 + ["evaluation"] * 120
    reviewer = ["ada"] * 10 + ["ada"] * 60 + ["ben"] * 20 + ["chen"] * 20 + ["dara"] * 20
    keep, dropped = evaluation_cap(split, reviewer)
    assert dropped == {"ada": 40} and keep[:10] == [True] * 10          # training is never capped
    kept = [r for r, k, s in zip(reviewer, keep, split) if k and s == "evaluation"]
    assert kept.count("ada") == 20 and len(kept) == 80                  # 20 of 80: a quarter
    # The newest of ada's evaluation pairs are the ones kept.
    assert keep[10:50] == [False] * 40 and keep[50:70] == [True] * 20


def test_a_small_team_shares_the_evaluation_equally_and_one_reviewer_is_not_capped() -> None:
    assert share_cap(2) == 0.5 and share_cap(4) == 0.25 and share_cap(9) == 0.25
    keep, dropped = evaluation_cap(["evaluation"] * 40, ["ada"] * 30 + ["ben"] * 10)
    assert dropped == {"ada": 20} and sum(keep) == 20
    alone, none = evaluation_cap(["evaluation"] * 5, ["ada"] * 5)
    assert none == {} and all(alone)
    assert leave_one_out(["ada"] * 5) == [] and leave_one_out(["ben", "ada", "ada", ""]) == ["ada", "ben"]


def _unit(degrees) -> torch.Tensor:
    a = np.radians(np.asarray(degrees, dtype=float))
    return torch.tensor(np.stack([np.cos(a), np.sin(a)], axis=-1), dtype=torch.float32)


def _heads(turn: float) -> SimpleNamespace:
    """Heads that turn the image by ``turn`` degrees (0: the identity)."""
    r = np.radians(turn)
    rotation = torch.tensor([[np.cos(r), np.sin(r)], [-np.sin(r), np.cos(r)]], dtype=torch.float32)
    return SimpleNamespace(image_head=lambda x: x @ rotation, text_head=lambda x: x, eval=lambda: None)


def _poisoned_world(files: int = 500) -> DecisionTensors:
    """Six true items 60° apart and a decoy 25° past each; every file lies within 5° of its true
    item and has two decided pairs, its true item and the decoy. Honest reviewers approve the
    true item and reject the decoy; mallory decides 70 % of the files and says the opposite —
    in every split, the evaluation included."""
    rng = np.random.default_rng(0)
    true = [60.0 * k for k in range(6)]
    items = true + [t + 25.0 for t in true]
    rows = rng.integers(0, 6, size=files)
    angles = [true[k] + float(rng.uniform(-5, 5)) for k in rows]
    honest = ["ada", "ben", "chen", "dara"]
    pair_file, pair_item, label, split, reviewer = [], [], [], [], []
    for f, k in enumerate(rows):
        poisoner = f % 10 < 7
        part = "train" if f < 0.6 * files else "calibration" if f < 0.8 * files else "evaluation"
        for item, right in ((int(k), True), (int(k) + 6, False)):
            pair_file.append(f)
            pair_item.append(item)
            label.append(float(right != poisoner))
            split.append(part)
            reviewer.append("mallory" if poisoner else honest[f % 4])
    return DecisionTensors(_unit(angles), _unit(items), list(range(files)), [f"Q{i}" for i in range(12)],
                           torch.tensor(pair_file), torch.tensor(pair_item), torch.tensor(label), split,
                           reviewer=reviewer)


def test_one_poisoning_account_is_refused_by_the_cap_or_by_leaving_it_out() -> None:
    """The challenger turns every file to its decoy: worse on the truth, better on mallory's
    decisions. Without the guard rails it is promoted; with the cap, or with
    leave-one-reviewer-out alone, it is refused, and the verdict names why."""
    data = _poisoned_world()
    learner = HeadsLearner(None, _heads(0.0), None)
    decoys = _heads(25.0)
    bare = contest(learner, data, Rules(top_k=1, share=1.0, leave_one_out=False, resamples=300), challenger=decoys)
    assert bare.verdict.promote, bare.verdict.reasons                 # the attack works without them
    assert bare.verdict.challenger["utility"] > 0 and bare.capped == {}

    capped = contest(learner, data, Rules(top_k=1, leave_one_out=False, resamples=300), challenger=decoys)
    assert capped.capped == {"mallory": 120} and not capped.verdict.promote    # pairs: 140 kept to 20 of 80
    assert capped.verdict.challenger["utility"] < 0

    left_out = contest(learner, data, Rules(top_k=1, share=1.0, resamples=300), challenger=decoys)
    assert not left_out.verdict.promote
    assert "without reviewer mallory's evaluation decisions the challenger does not win" in left_out.verdict.reasons[0]
    assert left_out.checks[0]["without"] == "mallory" and left_out.checks[0]["outcome"] == "keep"
    assert left_out.report()["leave_one_reviewer_out"] == left_out.checks


def test_a_calibration_set_of_one_class_keeps_the_running_threshold_and_says_so() -> None:
    """Every calibration decision rejected: no Platt map for either model. The contest keeps
    the champion and says why, and the running model is not recalibrated."""
    data = _poisoned_world(100)
    data.label[torch.tensor([i for i, s in enumerate(data.split) if s == "calibration"])] = 0.0
    learner = HeadsLearner(None, _heads(0.0), None)
    outcome = contest(learner, data, Rules(top_k=1, resamples=100), challenger=_heads(25.0))
    assert outcome.calibration is None and outcome.champion_calibration is None
    assert not outcome.verdict.promote and "of one kind" in outcome.verdict.reasons[0]
    assert "of one kind" in recalibration_refused(outcome.champion_calibration, data)
    # With a usable map the running model is recalibrated only on enough calibration files.
    assert recalibration_refused(Platt(5.0, -2.0), data) == ""
    assert "does not rise" in recalibration_refused(Platt(-1.0, 0.0), data)
    assert recalibration_refused(Platt(5.0, -2.0), data, min_files=21).startswith("only 20 calibration files")
