"""How the synthetic evidence goes wrong: per-kind error rates, look-alikes, co-occurring errors.

The first synthetic evidence set had the answer built in: category-label, link and identifier
evidence always named the depicted leaf, only a linked category was ever wrong, and the wrong
leaf was drawn uniformly. A rule using no image at all (drop items named by one linked
category only) then reached 100 % precision. These knobs (shares in [0, 1], all 0 by
default, so the default set is drawn exactly as before) make the set one where kinds alone
cannot sort right from wrong:

* ``wrong_category``, ``wrong_category_label``, ``wrong_link``, ``wrong_identifier`` — each
  kind, when present, names a wrong leaf instead of the depicted one at its own rate;
* ``co_link`` — a misleading category ("Photographs by X", the photographer) comes with a
  description link to the same X at this rate: errors that co-occur, so two kinds agreeing
  is no proof; a file's wrong evidence all names the same wrong leaf;
* ``lookalike`` — the share of wrong leaves that look like the depicted one (same colour or
  same shape; the similarity swept from 0, uniform as before, to 1, always a look-alike), so
  the image cannot refute them as easily;
* ``item_spread`` — presence and reliability depend on the item: each leaf draws two factors
  exp(spread · N(0, 1)), one multiplying every kind's presence share, one its error rates
  (both capped at 1), as some topics are well categorised and others carelessly.

:data:`HARD_SHARES` is the harder set the evidence bench runs (``bench/evidence.py --hard``).
Every draw comes from its own random stream, so the default set's draws do not move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

# Evidence kinds as the shares name them (``evidence.DEFAULT_SHARES``).
SHARE_KINDS = ("category", "category_label", "link", "identifier")
ERROR_SHARES: Dict[str, float] = {
    "wrong_category": 0.0, "wrong_category_label": 0.0, "wrong_link": 0.0, "wrong_identifier": 0.0,
    "co_link": 0.0, "lookalike": 0.0, "item_spread": 0.0,
}
# The harder set: every kind can be wrong, the photographer is linked too half the time, half
# the wrong leaves look like the depicted one, and topics differ. Judgement, not measurement:
# links and identifiers are rarer wrong than categories, as on Commons.
HARD_SHARES: Dict[str, float] = {
    "misleading": 0.3, "wrong_category": 0.12, "wrong_category_label": 0.25, "wrong_link": 0.08,
    "wrong_identifier": 0.05, "co_link": 0.5, "lookalike": 0.5, "item_spread": 0.6,
}


@dataclass(frozen=True)
class FileErrors:
    """What one file's evidence does wrong.

    :param presence: the factor on every kind's presence share (item-dependent).
    :param wrong: the kinds (of :data:`SHARE_KINDS`) that name ``other`` instead of the leaf.
    :param other: the wrong leaf (colour, shape) for this file, shared by all its wrong evidence.
    :param co_link: whether a misleading category comes with a link to the same leaf.
    """

    presence: float
    wrong: Tuple[str, ...]
    other: Tuple[int, int]
    co_link: bool


class ErrorDraws:
    """Draws :class:`FileErrors` per file from its own stream (seed, 28)."""

    def __init__(self, seed: int, shares: Mapping[str, float], leaves: Sequence[Tuple[int, int]]) -> None:
        self.shares = {k: float(shares.get(k, v)) for k, v in ERROR_SHARES.items()}
        self.leaves = tuple(leaves)
        self.rng = np.random.default_rng([seed, 28])
        spread = self.shares["item_spread"]
        factors = np.random.default_rng([seed, 29]).normal(size=(len(self.leaves), 2))
        self.presence = {leaf: math.exp(spread * float(p)) for leaf, (p, _) in zip(self.leaves, factors)}
        self.unreliability = {leaf: math.exp(spread * float(r)) for leaf, (_, r) in zip(self.leaves, factors)}

    @property
    def active(self) -> bool:
        """Whether any knob is set (the default set draws nothing from this stream)."""
        return any(self.shares.values())

    def draw(self, leaf: Tuple[int, int], uniform_other: Tuple[int, int]) -> FileErrors:
        """The errors of a file depicting ``leaf``; ``uniform_other`` is the default set's
        uniformly drawn wrong leaf, kept unless a look-alike is drawn instead."""
        draws = self.rng.random(len(SHARE_KINDS) + 3)
        scale = self.unreliability[leaf]
        wrong = tuple(kind for kind, u in zip(SHARE_KINDS, draws)
                      if u < min(1.0, self.shares[f"wrong_{kind}"] * scale))
        other = uniform_other
        if draws[len(SHARE_KINDS)] < self.shares["lookalike"]:
            alike = [x for x in self.leaves if x != leaf and (x[0] == leaf[0] or x[1] == leaf[1])]
            other = alike[int(draws[len(SHARE_KINDS) + 1] * len(alike)) % len(alike)]
        return FileErrors(presence=self.presence[leaf], wrong=wrong, other=other,
                          co_link=bool(draws[len(SHARE_KINDS) + 2] < self.shares["co_link"]))


def present(share: float, errors: Optional[FileErrors]) -> float:
    """A kind's presence share for a file, with its item's factor (capped at 1)."""
    return share if errors is None else min(1.0, share * errors.presence)
