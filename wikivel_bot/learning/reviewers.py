"""No single reviewer decides a promotion (docs/learning.md, "Guard rails").

Every decided pair is attributed to its reviewer. One account that approves everything, or
rejects what is right, poisons the training decisions *and* the later decisions the judge
scores on — the bench's uniform label flips, confined to training, never tested that. Two
defences, both here as pure functions over the pairs' splits and reviewers:

* :func:`evaluation_cap` — no reviewer holds more than :data:`EVALUATION_SHARE` of the
  evaluation pairs (a quarter by default, or an equal share ``1 / reviewers`` when there are
  fewer than four of them, so a small team is not left without an evaluation). A reviewer's
  pairs beyond the cap are left out of the judgement, the latest files first kept (the
  evaluation is about the newest uploads); training and calibration are untouched;
* :func:`leave_one_out` — the names to leave out in turn: a promotion must survive removing
  any one reviewer's decisions from training and evaluation (``learning.contest``).

What this does not catch: several coordinated accounts, each below the cap, poisoning
together — leaving one out leaves the others in. Nor a reviewer who is wrong in the same way
as everyone else.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Sequence, Tuple

# The largest share of the evaluation pairs one reviewer may hold (when there are at least
# 1 / EVALUATION_SHARE reviewers; fewer share it equally).
EVALUATION_SHARE = 0.25


def share_cap(reviewers: int, share: float = EVALUATION_SHARE) -> float:
    """The cap for ``reviewers`` distinct reviewers: ``share``, or 1 / reviewers when larger."""
    return max(share, 1.0 / reviewers) if reviewers else 1.0


def evaluation_cap(split: Sequence[str], reviewer: Sequence[str], *, share: float = EVALUATION_SHARE
                   ) -> Tuple[List[bool], Dict[str, int]]:
    """Which pairs to keep so that no reviewer holds more than the cap of the evaluation pairs.

    :param split: per pair, its split; only ``evaluation`` pairs are ever dropped.
    :param reviewer: per pair, who decided it (an empty name is nobody's and never capped).
    :returns: (a keep mask, pairs dropped per reviewer). A reviewer's evaluation pairs are
        kept from the last (newest file) backwards.
    """
    held = [i for i, s in enumerate(split) if s == "evaluation"]
    counts = Counter(reviewer[i] for i in held if reviewer[i])
    cap = share_cap(len(counts), share)
    allowed = dict(counts)
    # Dropping one reviewer's pairs shrinks the whole, so shrink to a fixed point: a reviewer
    # may keep k pairs when k <= cap * (everyone's kept pairs).
    while True:  # every pass lowers some whole number or stops: it ends
        total = sum(allowed.values()) + sum(1 for i in held if not reviewer[i])
        changed = False
        for name, n in allowed.items():
            others = total - n
            limit = n if cap >= 1.0 else min(n, int(cap * others / (1.0 - cap) + 1e-9))
            if limit < n:
                allowed[name], changed = limit, True
        if not changed:
            break
    keep = [True] * len(split)
    seen: Counter = Counter()
    for i in reversed(held):
        name = reviewer[i]
        if not name:
            continue
        seen[name] += 1
        if seen[name] > allowed[name]:
            keep[i] = False
    dropped = {name: counts[name] - allowed[name] for name in sorted(counts) if counts[name] > allowed[name]}
    return keep, dropped


def leave_one_out(reviewer: Sequence[str]) -> List[str]:
    """The reviewers to leave out in turn, most decisions first (the likeliest to matter).
    Empty when fewer than two reviewers decided: leaving the only one out leaves nothing."""
    counts = Counter(name for name in reviewer if name)
    if len(counts) < 2:
        return []
    return [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def without(reviewer: Sequence[str], name: str) -> List[bool]:
    """A keep mask with every pair of ``name`` left out."""
    return [who != name for who in reviewer]
