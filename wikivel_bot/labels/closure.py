"""Everything under a group of classes, over the whole P31 ∪ P279 graph (no hop ceiling).

The safety rules (``core/safety.py``) ask "which listed class is this item under, at any
depth?". The label set's closure table stops at 3 hops (what ranking and hop credit need), so
the rules read the direct parents instead and go down from the listed classes once per group
(sensitive, blocked, person classes), breadth first with a visited mask, so Wikidata's
cycles end and the shortest distance wins. What is kept is one compact table per group — the
nodes under it (sorted), the nearest class of each and its distance — never an all-pairs
table: memory is the number of items under the group's classes.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


def child_table(parent_offsets: np.ndarray, parents: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Direct children as CSR (offsets int64 [n+1], children int32) from the parents' CSR."""
    n = int(parent_offsets.shape[0]) - 1
    owners = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(parent_offsets, dtype=np.int64)).astype(np.int64))
    targets = np.asarray(parents, dtype=np.int64)
    order = np.argsort(targets, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(targets, minlength=n), out=offsets[1:])
    return offsets, owners[order].astype(np.int32)


def parents_from_closure(offsets: np.ndarray, hops: np.ndarray, ancestors: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The direct parents (the hop-1 entries) of a 3-hop closure table, as CSR.

    For label sets written before the parents were stored: complete for every node whose
    closure was computed, which is every node of a set built from records or the API.
    """
    n = int(offsets.shape[0]) - 1
    owners = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(offsets, dtype=np.int64)).astype(np.int64))
    direct = np.asarray(hops) == 1
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners[direct], minlength=n), out=new_offsets[1:])
    return new_offsets, np.asarray(ancestors)[direct].astype(np.int32)


class ClassReach:
    """The nodes under a group of classes, each with its nearest class and the distance.

    :param nodes: node numbers under the group (sorted, int32); a class is in it only when
        it is itself under another class of the group.
    :param classes: the nearest class of each (node number, int32).
    :param hops: the distance to it (int32, >= 1).
    """

    def __init__(self, nodes: np.ndarray, classes: np.ndarray, hops: np.ndarray) -> None:
        self.nodes = nodes
        self.classes = classes
        self.hops = hops

    def __len__(self) -> int:
        return int(self.nodes.shape[0])

    @classmethod
    def compute(cls, child_offsets: np.ndarray, children: np.ndarray, class_nodes: np.ndarray,
                class_keys: Optional[np.ndarray] = None) -> "ClassReach":
        """Go down from ``class_nodes`` until nothing new is reached.

        :param child_offsets: children CSR offsets (:func:`child_table`).
        :param children: children CSR targets.
        :param class_nodes: the group's classes (node numbers; unknown ones left out).
        :param class_keys: a tie-break per node (e.g. its numeric QID): of equally near
            classes the smallest key wins; default the node number.
        """
        n = int(child_offsets.shape[0]) - 1
        # Transient arrays over all nodes (n * 8 bytes); only the reached part is kept.
        owner = np.full(n, -1, dtype=np.int32)
        distance = np.zeros(n, dtype=np.int32)
        keys = np.arange(n, dtype=np.int64) if class_keys is None else np.asarray(class_keys, dtype=np.int64)
        frontier = np.unique(np.asarray(class_nodes, dtype=np.int64))
        frontier = frontier[(frontier >= 0) & (frontier < n)]
        # The classes go down first as their own owners, without being "reached" themselves:
        # a class under another listed class is reached (and counted) like any item.
        frontier_owner = frontier.astype(np.int32)
        level = 0
        while frontier.size:
            level += 1
            starts = child_offsets[frontier]
            degree = child_offsets[frontier + 1] - starts
            total = int(degree.sum())
            if total == 0:
                break
            first = np.cumsum(degree) - degree
            within = np.arange(total, dtype=np.int64) - np.repeat(first, degree)
            kids = np.asarray(children[np.repeat(starts, degree) + within], dtype=np.int64)
            via = np.repeat(frontier_owner, degree)
            fresh = (owner[kids] < 0) & (kids != via)
            kids, via = kids[fresh], via[fresh]
            if kids.size == 0:
                break
            # One owner per new node: the nearest class, then the smallest key.
            order = np.lexsort((keys[via], kids))
            kids, via = kids[order], via[order]
            kids, first_of = np.unique(kids, return_index=True)
            via = via[first_of]
            owner[kids] = via
            distance[kids] = level
            frontier, frontier_owner = kids, via
        reached = np.flatnonzero(owner >= 0)
        return cls(reached.astype(np.int32), owner[reached], distance[reached])

    def find(self, node: int) -> Optional[Tuple[int, int]]:
        """(nearest class node, hops) of ``node``, or None when it is not under the group."""
        if node < 0 or self.nodes.size == 0:
            return None
        # The key in the array's own dtype: a Python int would convert the whole array.
        pos = int(self.nodes.searchsorted(self.nodes.dtype.type(node)))
        if pos < self.nodes.shape[0] and int(self.nodes[pos]) == node:
            return int(self.classes[pos]), int(self.hops[pos])
        return None
