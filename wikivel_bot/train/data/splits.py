"""The split of a dataset, drawn before any frequency filtering (paper §3.2-3.3).

"[The dataset] is created by randomly shuffling the order of the intermediate file ... split
into 80% training, 10% validation, and 10% testing splits" (§3.3), and f is counted "in the
training split generated from the intermediate data" (§3.2): so the split comes first and is
written to ``splits/{train,validation,test}.txt`` for ``labels build --count-files``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.errors import UsageError

# Records are ``dataset.FileRecord`` (typed as Any here: dataset.py imports this module).
FileRecord = Any

SPLITS = ("train", "validation", "test")
SPLITS_DIR = "splits"
DEFAULT_FRACTIONS = (0.8, 0.1, 0.1)


def split_assignment(n: int, fractions: Sequence[float], seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """A seeded shuffle of ``n`` files and the split code (0, 1, 2) of each shuffled position.

    :returns: (order, codes): file ``order[p]`` lands in split ``codes[p]``.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not 0.999 <= sum(fractions) <= 1.001:
        raise UsageError(f"split fractions must be three non-negative numbers summing to 1, not {list(fractions)}")
    order = np.random.default_rng(seed).permutation(n)
    train_end = int(round(fractions[0] * n))
    val_end = train_end + int(round(fractions[1] * n))
    codes = np.full(n, 2, dtype=np.int8)
    codes[:train_end] = 0
    codes[train_end:val_end] = 1
    return order, codes


def assign_splits(records: Iterable[FileRecord], counts: Any, *, seed: int = 0,
                  fractions: Sequence[float] = DEFAULT_FRACTIONS, max_files: Optional[int] = None,
                  assigned: Optional[Mapping[int, str]] = None,
                  ) -> Tuple[List[FileRecord], np.ndarray, np.ndarray]:
    """Shuffle (seeded), sample and split the files *before* any frequency filtering (§3.2-3.3).

    :param records: the files with at least one depicts item (as read).
    :param counts: ``records_in`` and ``sampled_out`` are counted here.
    :param assigned: page id -> split given (the published dataset's) instead of drawn.
    :returns: (records sorted by page id, order, split codes): record ``order[p]`` lands in
        split ``codes[p]``.
    """
    kept: List[FileRecord] = []
    for record in records:
        counts.records_in += 1
        source = record.source_items or record.items
        if source:
            kept.append(replace(record, source_items=tuple(source)))
    # Sorted by page id first, so the shuffle depends only on the seed and the set of files,
    # not on the order a dump happened to list them in.
    kept.sort(key=lambda r: r.page_id)
    order, codes = split_assignment(len(kept), fractions, seed)
    if max_files is not None and max_files < len(kept):
        counts.sampled_out = len(kept) - max_files
        order = order[:max_files]
        _, codes = split_assignment(max_files, fractions, seed)
    if assigned is not None:
        order = np.asarray([i for i in order.tolist() if kept[i].page_id in assigned], dtype=np.int64)
        codes = np.asarray([SPLITS.index(assigned[kept[i].page_id]) for i in order.tolist()], dtype=np.int8)
    return kept, order, codes


def write_splits(out_dir: Path, kept: Sequence[FileRecord], order: np.ndarray, codes: np.ndarray) -> Dict[str, List[int]]:
    """``OUT/splits/{train,validation,test}.txt``: page ids per split, before filtering.

    ``train.txt`` is the list ``labels build --count-files`` counts f on (§3.2).
    """
    pages: Dict[str, List[int]] = {name: [] for name in SPLITS}
    for position, index in enumerate(order.tolist()):
        pages[SPLITS[int(codes[position])]].append(kept[index].page_id)
    directory = Path(out_dir) / SPLITS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, ids in pages.items():
        (directory / f"{name}.txt").write_text("".join(f"{p}\n" for p in sorted(ids)), encoding="utf-8")
    return pages
