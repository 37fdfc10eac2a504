"""The item hierarchy over P31 ∪ P279: ancestors within 1, 2 and 3 hops, stored compactly.

Items are **nodes** numbered 0..n-1 (a label set puts its kept items first, in index order).
The ancestors of every node are precomputed up to ``max_hops`` and stored as a CSR table of
three flat arrays::

    offsets[i] .. offsets[i+1]   the slice of node i
    ancestors[slice]             ancestor node numbers, sorted ascending (int32)
    hops[slice]                  shortest distance to each (int8, 1..max_hops)

so "is A an ancestor of B within n hops" is a binary search in B's slice, and a batch of
pairs is one vectorised search (:meth:`Hierarchy.hops_many`). Cycles (Wikidata has some) are
harmless: a node is never its own ancestor and the shortest distance wins.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

MAX_HOPS = 3
# Sources expanded at once when computing the closure; bounds the temporary arrays.
_CHUNK = 1 << 17
# Above this many nodes, single lookups binary-search instead of building a dict.
_DICT_LIMIT = 1_000_000


def parent_table(n_nodes: int, children: np.ndarray, parents: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Direct parents as CSR: (offsets int64 [n+1], parents int32), duplicates removed.

    :param n_nodes: number of nodes.
    :param children: node numbers of the edges' children.
    :param parents: node numbers of the edges' parents.
    """
    children = np.asarray(children, dtype=np.int64)
    parents = np.asarray(parents, dtype=np.int64)
    keep = children != parents
    keys = np.unique(children[keep] * n_nodes + parents[keep])
    child = keys // n_nodes
    offsets = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(child, minlength=n_nodes), out=offsets[1:])
    return offsets, (keys % n_nodes).astype(np.int32)


def _expand(
    src: np.ndarray, mid: np.ndarray, offsets: np.ndarray, targets: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    # For every pair (s, m): the pairs (s, p) for each parent p of m.
    starts = offsets[mid]
    degree = offsets[mid + 1] - starts
    total = int(degree.sum())
    if total == 0:
        return src[:0], mid[:0]
    first = np.cumsum(degree) - degree
    within = np.arange(total, dtype=np.int64) - np.repeat(first, degree)
    return np.repeat(src, degree), targets[np.repeat(starts, degree) + within].astype(np.int64)


def _closure_chunk(
    sources: np.ndarray, n: int, offsets: np.ndarray, targets: np.ndarray, max_hops: int
) -> Tuple[np.ndarray, np.ndarray]:
    src, dst = _expand(sources, sources, offsets, targets)
    keys_by_hop = []
    seen = np.empty(0, dtype=np.int64)
    for hop in range(1, max_hops + 1):
        if hop > 1:
            src, dst = _expand(src, dst, offsets, targets)
        keep = src != dst
        keys = np.unique(src[keep] * n + dst[keep])
        if seen.size:
            keys = keys[~np.isin(keys, seen, assume_unique=True)]
        if keys.size == 0:
            break
        keys_by_hop.append((keys, hop))
        seen = np.union1d(seen, keys)
        src, dst = keys // n, keys % n
    if not keys_by_hop:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int8)
    keys = np.concatenate([k for k, _ in keys_by_hop])
    hops = np.concatenate([np.full(k.size, h, dtype=np.int8) for k, h in keys_by_hop])
    order = np.argsort(keys, kind="stable")
    return keys[order], hops[order]


def compute_closure(
    n_nodes: int,
    parent_offsets: np.ndarray,
    parents: np.ndarray,
    sources: Optional[np.ndarray] = None,
    max_hops: int = MAX_HOPS,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ancestors within ``max_hops`` of ``sources`` (all nodes by default), as CSR arrays.

    :returns: (offsets int64 [n+1], ancestors int32, hops int8); nodes not in ``sources``
        get empty slices.
    """
    if sources is None:
        sources = np.arange(n_nodes, dtype=np.int64)
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    key_parts, hop_parts = [], []
    for start in range(0, sources.size, _CHUNK):
        keys, hops = _closure_chunk(sources[start : start + _CHUNK], n_nodes, parent_offsets, parents, max_hops)
        key_parts.append(keys)
        hop_parts.append(hops)
    keys = np.concatenate(key_parts) if key_parts else np.empty(0, dtype=np.int64)
    hops = np.concatenate(hop_parts) if hop_parts else np.empty(0, dtype=np.int8)
    offsets = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n_nodes, minlength=n_nodes), out=offsets[1:])
    return offsets, (keys % n_nodes).astype(np.int32), hops


class Hierarchy:
    """Ancestor lookups over numbered nodes (see the module docstring for the layout).

    :param node_qids: numeric QID of each node (int64).
    :param offsets: CSR offsets (int64, n+1).
    :param ancestors: ancestor node numbers (int32), sorted within each slice.
    :param hops: shortest distance of each ancestor (int8).
    """

    def __init__(self, node_qids: np.ndarray, offsets: np.ndarray, ancestors: np.ndarray, hops: np.ndarray) -> None:
        self.node_qids = node_qids
        self.offsets = offsets
        self.ancestors = ancestors
        self.hops = hops
        self._index: Optional[Dict[int, int]] = None
        self._sorted: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self._pair_keys: Optional[np.ndarray] = None

    @property
    def n_nodes(self) -> int:
        return int(self.node_qids.shape[0])

    def node(self, qid: int) -> int:
        """Node number of a numeric QID, or -1 when the hierarchy does not know it."""
        if self._index is None:
            if self.n_nodes > _DICT_LIMIT:
                # A dict of millions of nodes costs hundreds of MB and a second to build;
                # a binary search costs ~1 µs a call (batches: use nodes()).
                values, order = self._sorted_index()
                pos = int(values.searchsorted(qid))
                return int(order[pos]) if pos < values.shape[0] and values[pos] == qid else -1
            # A dict answers one lookup ~10x faster than a numpy search; built on first use.
            self._index = dict(zip(self.node_qids.tolist(), range(self.n_nodes)))
        return self._index.get(qid, -1)

    def _sorted_index(self) -> Tuple[np.ndarray, np.ndarray]:
        if self._sorted is None:
            order = np.argsort(self.node_qids, kind="stable")
            self._sorted = (self.node_qids[order], order)
        return self._sorted

    def nodes(self, qids: np.ndarray) -> np.ndarray:
        """Node numbers of many numeric QIDs at once (-1 for unknown ones)."""
        values, order = self._sorted_index()
        qids = np.asarray(qids, dtype=np.int64)
        if values.size == 0:
            return np.full(qids.shape, -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(values, qids), values.size - 1)
        return np.where(values[pos] == qids, order[pos], -1).astype(np.int64)

    def ancestors_of(self, node: int, max_hops: int = MAX_HOPS) -> Tuple[np.ndarray, np.ndarray]:
        """(ancestor nodes, hops) of one node within ``max_hops``."""
        lo, hi = int(self.offsets[node]), int(self.offsets[node + 1])
        anc, hops = self.ancestors[lo:hi], self.hops[lo:hi]
        if max_hops < MAX_HOPS:
            keep = hops <= max_hops
            return anc[keep], hops[keep]
        return anc, hops

    def hop(self, ancestor: int, node: int) -> int:
        """Shortest hops from ``node`` up to ``ancestor`` (0 when equal), -1 when not within."""
        if ancestor < 0 or node < 0:
            return -1
        if ancestor == node:
            return 0
        lo, hi = int(self.offsets[node]), int(self.offsets[node + 1])
        if lo == hi:
            return -1
        segment = self.ancestors[lo:hi]
        pos = int(segment.searchsorted(ancestor))
        if pos < segment.shape[0] and segment[pos] == ancestor:
            return int(self.hops[lo + pos])
        return -1

    def hops_many(self, ancestors: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`hop` for many pairs (int8 array, -1 = not within 3 hops)."""
        ancestors = np.asarray(ancestors, dtype=np.int64)
        nodes = np.asarray(nodes, dtype=np.int64)
        out = np.full(ancestors.shape, -1, dtype=np.int8)
        out[(ancestors == nodes) & (ancestors >= 0)] = 0
        if self._pair_keys is None:
            # Slices are sorted and laid out by node, so node*n + ancestor is sorted too.
            owners = np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.offsets))
            self._pair_keys = owners * self.n_nodes + self.ancestors
        valid = (ancestors >= 0) & (nodes >= 0) & (ancestors != nodes)
        if self._pair_keys.size == 0 or not valid.any():
            return out
        keys = nodes[valid] * self.n_nodes + ancestors[valid]
        pos = np.minimum(np.searchsorted(self._pair_keys, keys), self._pair_keys.size - 1)
        found = self._pair_keys[pos] == keys
        result = np.where(found, self.hops[pos], -1).astype(np.int8)
        out[valid] = result
        return out

    def pair_arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The whole table as flat (node, ancestor, hops) arrays (int64, int64, int8)."""
        owners = np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.offsets))
        return owners, self.ancestors.astype(np.int64), self.hops
