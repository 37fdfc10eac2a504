"""Which in-batch pairs are loss targets, and with what weight (paper §4.3).

``targets[i, j]`` for row i (a file) and column j (an item):

* 1.0 when item j is one of file i's ground-truth items (not only j == i: another row of
  the same item, or another item of the same file, counts too);
* ``hop_weight ** h`` when item j is h hops above or below one of file i's items in the
  P31/P279 hierarchy, for 1 <= h <= ``target_hops``;
* 0.0 otherwise.

Batches are built many thousands of times, so nothing here loops over pairs in Python: the
file's items and the hierarchy's related pairs are integer codes (``a * n_items + b``) in
sorted tensors, and a batch is a few ``searchsorted`` calls and one matrix product on the
training device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import torch

from wikivel_bot.core.labelset import LabelSetView


@dataclass
class Truth:
    """Ground-truth items of every file, as CSR arrays over label-set positions.

    :param offsets: (files + 1,) int64; file f's items are ``items[offsets[f]:offsets[f + 1]]``.
    :param items: int64 label-set positions.
    :param n_items: size of the label set (the code base for pairs).
    """

    offsets: np.ndarray
    items: np.ndarray
    n_items: int

    @classmethod
    def from_lists(cls, lists: Sequence[Sequence[int]], n_items: int) -> "Truth":
        """From one list of label-set positions per file."""
        sizes = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        items = np.fromiter((i for x in lists for i in x), dtype=np.int64, count=int(offsets[-1]))
        return cls(offsets, items, n_items)

    def of(self, file: int) -> np.ndarray:
        """Items of one file."""
        return self.items[self.offsets[file]:self.offsets[file + 1]]

    def pair_codes(self) -> np.ndarray:
        """Sorted ``file * n_items + item`` codes of every (file, item) pair."""
        files = np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int64), np.diff(self.offsets))
        return np.sort(files * self.n_items + self.items)


def related_pairs(
    label_set: LabelSetView, positions: Iterable[int], max_hops: int
) -> Dict[int, np.ndarray]:
    """Sorted codes ``a * n + b`` of item pairs exactly h hops apart, for h = 1..max_hops.

    Symmetric (both ``a, b`` and ``b, a``); only pairs whose two items are both in
    ``positions`` (the items the dataset uses) are kept, so a generic item such as *human*
    does not bring its thousands of descendants.

    :param label_set: the label set (``qids``, ``index_of``, ``ancestors``).
    :param positions: label-set positions of the dataset's items.
    :param max_hops: the largest h wanted (0 returns an empty dict).
    """
    if max_hops <= 0:
        return {}
    qids = label_set.qids
    n = len(qids)
    wanted = {int(p) for p in positions}
    nearest: Dict[Tuple[int, int], int] = {}
    for a in wanted:
        for qid, hops in label_set.ancestors(qids[a], max_hops).items():
            b = label_set.index_of(qid)
            if b is None or b not in wanted or b == a or hops > max_hops:
                continue
            for pair in ((a, b), (b, a)):
                if hops < nearest.get(pair, max_hops + 1):
                    nearest[pair] = hops
    levels: Dict[int, List[int]] = {h: [] for h in range(1, max_hops + 1)}
    for (a, b), hops in nearest.items():
        levels[hops].append(a * n + b)
    return {h: np.sort(np.asarray(codes, dtype=np.int64)) for h, codes in levels.items()}


class TargetBuilder:
    """Builds the (B, B) target matrix of a batch on one device.

    :param truth: the files' ground-truth items.
    :param relations: :func:`related_pairs` output ({} for exact targets only).
    :param hop_weight: weight of a target h hops away is ``hop_weight ** h``.
    :param device: where batches are built (the training device).
    """

    def __init__(self, truth: Truth, relations: Optional[Dict[int, np.ndarray]] = None,
                 hop_weight: float = 0.5, device: Optional[torch.device] = None) -> None:
        self.n = int(truth.n_items)
        self.device = device = device or torch.device("cpu")
        self.offsets = torch.from_numpy(truth.offsets).to(device)
        self.items = torch.from_numpy(truth.items).to(device)
        self.pair_codes = torch.from_numpy(truth.pair_codes()).to(device)
        self.levels = [
            (hop_weight ** h, torch.from_numpy(codes).to(device))
            for h, codes in sorted((relations or {}).items()) if codes.size
        ]

    def __call__(self, files: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Targets of a batch of rows.

        :param files: (B,) file index of each row (into the ``Truth`` arrays).
        :param items: (B,) label-set position of each row's item.
        :returns: (B, B) float32 weights on the builder's device.
        """
        files = files.to(self.device)
        items = items.to(self.device)
        exact = _member(files[:, None] * self.n + items[None, :], self.pair_codes)
        targets = exact.to(torch.float32)
        if not self.levels:
            return targets
        # Hierarchy targets: the batch files' own items G (with a file x G incidence matrix),
        # related to the batch's distinct items U, level by level; then back to rows.
        starts, stops = self.offsets[files], self.offsets[files + 1]
        lengths = stops - starts
        row_of = torch.repeat_interleave(torch.arange(files.numel(), device=self.device), lengths)
        within = torch.arange(int(lengths.sum()), device=self.device) - torch.repeat_interleave(
            torch.cumsum(lengths, 0) - lengths, lengths)
        own = self.items[torch.repeat_interleave(starts, lengths) + within]
        distinct_own, own_col = torch.unique(own, return_inverse=True)
        incidence = torch.zeros((files.numel(), distinct_own.numel()), device=self.device)
        incidence[row_of, own_col] = 1.0
        distinct_items, item_col = torch.unique(items, return_inverse=True)
        codes = distinct_own[:, None] * self.n + distinct_items[None, :]
        for weight, level_codes in self.levels:
            related = _member(codes, level_codes).to(torch.float32)
            reached = (incidence @ related)[:, item_col] > 0
            targets = torch.maximum(targets, reached.to(torch.float32) * weight)
        return targets


def _member(codes: torch.Tensor, sorted_codes: torch.Tensor) -> torch.Tensor:
    """Elementwise ``codes in sorted_codes`` (any shape) via binary search."""
    if sorted_codes.numel() == 0:
        return torch.zeros_like(codes, dtype=torch.bool)
    flat = codes.reshape(-1)
    where = torch.searchsorted(sorted_codes, flat).clamp(max=sorted_codes.numel() - 1)
    return (sorted_codes[where] == flat).reshape(codes.shape)
