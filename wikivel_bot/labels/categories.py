"""Super-categories (human, animal, plant, building, artwork, vehicle, landscape, ...) for reports.

The paper (§3.3) groups items into "arbitrary selections of generic classes". Here the
selection is data, ``data/super_categories.tsv``: a name and the root items of each category,
in priority order. An item gets the category of the nearest root among itself and its
ancestors within 3 hops; at equal distance the earlier row wins. Items with none are "other".
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Dict, List, Tuple

import numpy as np

from wikivel_bot.labels.hierarchy import Hierarchy

OTHER = "other"


@lru_cache(maxsize=1)
def super_categories() -> Tuple[Tuple[str, Tuple[int, ...]], ...]:
    """(name, root numeric QIDs) in priority order, from the package data file."""
    text = resources.files("wikivel_bot.labels").joinpath("data/super_categories.tsv").read_text("utf-8")
    rows: List[Tuple[str, Tuple[int, ...]]] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, roots = line.split("\t")
        rows.append((name.strip(), tuple(int(q.strip()[1:]) for q in roots.split(","))))
    return tuple(rows)


def category_names() -> Tuple[str, ...]:
    """Names by code: code i is ``category_names()[i]``; the last one is "other"."""
    return tuple(name for name, _ in super_categories()) + (OTHER,)


def assign(hierarchy: Hierarchy) -> np.ndarray:
    """Super-category code of every node (int8; ``len(super_categories())`` = other)."""
    rows = super_categories()
    other = len(rows)
    priority: Dict[int, int] = {}
    for code, (_name, roots) in enumerate(rows):
        for root in roots:
            priority.setdefault(root, code)
    root_qids = np.fromiter(priority.keys(), dtype=np.int64)
    root_codes = np.fromiter(priority.values(), dtype=np.int64)
    root_nodes = hierarchy.nodes(root_qids)
    code_of_node = np.full(hierarchy.n_nodes, -1, dtype=np.int64)
    present = root_nodes >= 0
    code_of_node[root_nodes[present]] = root_codes[present]
    # Score = hops * (other + 1) + code: the smallest wins (nearest, then priority).
    width = other + 1
    best = np.full(hierarchy.n_nodes, 4 * width, dtype=np.int64)
    is_root = code_of_node >= 0
    best[is_root] = code_of_node[is_root]
    owners, ancestors, hops = hierarchy.pair_arrays()
    codes = code_of_node[ancestors]
    hit = codes >= 0
    np.minimum.at(best, owners[hit], hops[hit].astype(np.int64) * width + codes[hit])
    result = np.where(best < 4 * width, best % width, other)
    return result.astype(np.int8)
