"""Ancestors within 3 hops: the compact closure against a plain breadth-first search."""

from __future__ import annotations

import random
from collections import deque
from typing import Dict, List

import numpy as np

from wikivel_bot.labels.hierarchy import Hierarchy, compute_closure, parent_table


def _bfs(parents: Dict[int, List[int]], start: int, max_hops: int = 3) -> Dict[int, int]:
    seen = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if seen[node] == max_hops:
            continue
        for parent in parents.get(node, ()):
            if parent not in seen:
                seen[parent] = seen[node] + 1
                queue.append(parent)
    del seen[start]
    return seen


def _random_graph(seed: int, n: int = 300, edges: int = 700) -> Dict[int, List[int]]:
    rng = random.Random(seed)
    parents: Dict[int, List[int]] = {}
    for _ in range(edges):
        child, parent = rng.randrange(n), rng.randrange(n)  # cycles and self-loops included
        parents.setdefault(child, []).append(parent)
    return parents


def _hierarchy(parents: Dict[int, List[int]], n: int) -> Hierarchy:
    pairs = [(c, p) for c, ps in parents.items() for p in ps]
    children = np.array([c for c, _ in pairs], dtype=np.int64)
    targets = np.array([p for _, p in pairs], dtype=np.int64)
    offsets, table = parent_table(n, children, targets)
    # Node i stands for QID 1000 + i: node numbers and QIDs must not be confused.
    return Hierarchy(np.arange(n, dtype=np.int64) + 1000, *compute_closure(n, offsets, table))


def test_closure_matches_breadth_first_search() -> None:
    for seed in range(5):
        parents = _random_graph(seed)
        hierarchy = _hierarchy(parents, 300)
        for node in range(300):
            ancestors, hops = hierarchy.ancestors_of(node)
            assert dict(zip(ancestors.tolist(), hops.tolist())) == _bfs(parents, node), (seed, node)
            assert list(ancestors) == sorted(ancestors)


def test_hop_lookups_agree_scalar_and_vectorised() -> None:
    parents = _random_graph(7)
    hierarchy = _hierarchy(parents, 300)
    rng = np.random.default_rng(0)
    a = rng.integers(-1, 300, 5000)
    d = rng.integers(-1, 300, 5000)
    vector = hierarchy.hops_many(a, d)
    for x, y, h in zip(a.tolist(), d.tolist(), vector.tolist()):
        expected = 0 if x == y and x >= 0 else _bfs(parents, y).get(x, -1) if x >= 0 and y >= 0 else -1
        assert hierarchy.hop(x, y) == expected == h


def test_max_hops_filter_and_node_lookup() -> None:
    parents = {0: [1], 1: [2], 2: [3], 3: [4]}
    hierarchy = _hierarchy(parents, 5)
    assert hierarchy.ancestors_of(0)[0].tolist() == [1, 2, 3]  # 4 is 4 hops up
    assert hierarchy.ancestors_of(0, max_hops=2)[0].tolist() == [1, 2]
    assert hierarchy.node(1003) == 3 and hierarchy.node(7) == -1
    assert hierarchy.nodes(np.array([1004, 5, 1000])).tolist() == [4, -1, 0]


def test_sources_limit_what_is_stored() -> None:
    parents = {0: [1], 1: [2], 2: [3]}
    offsets, table = parent_table(4, np.array([0, 1, 2]), np.array([1, 2, 3]))
    closure = compute_closure(4, offsets, table, sources=np.array([0]))
    hierarchy = Hierarchy(np.arange(4, dtype=np.int64), *closure)
    assert hierarchy.ancestors_of(0)[0].tolist() == [1, 2, 3]
    assert hierarchy.ancestors_of(1)[0].tolist() == []
    assert parents  # the graph the arrays were written from


def test_large_sets_look_up_without_a_dict(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from wikivel_bot.labels import hierarchy as module

    monkeypatch.setattr(module, "_DICT_LIMIT", 2)
    parents = {0: [1], 1: [2]}
    big = _hierarchy(parents, 5)
    assert [big.node(q) for q in (1000, 1002, 1004, 999, 2000)] == [0, 2, 4, -1, -1]
    assert big._index is None
