"""What is above an item, at any depth: the walk to the top and the nearest listed class.

The safety rules (``core/safety.py``) ask whether an item is under a listed class anywhere in
the P31 ∪ P279 closure — no hop ceiling. A label set answers from its own graph
(``nearest_class``); any other view is walked up breadth first (:func:`walk_up`), with a
visited set (Wikidata has cycles) and, for items fetched on demand, a bound on how many are
read (:class:`SafetyUnchecked` when it is reached).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.types import is_qid

class SafetyUnchecked(Exception):
    """The classes above an item could not all be read (more than a view's bound)."""


def walk_up(parents_of: Callable[[Sequence[str]], Mapping[str, Sequence[str]]], start: str,
            limit: Optional[int] = None) -> Tuple[Dict[str, int], bool]:
    """Every ancestor of ``start`` with its shortest distance, walking until the top.

    :param parents_of: direct parents (P31 ∪ P279) of a batch of items (missing: none).
    :param start: the item; never its own ancestor, even through a cycle.
    :param limit: at most this many items are asked about (the walk's bound); None: no bound.
    :returns: ({ancestor: hops}, complete): ``complete`` is False when the bound cut the walk.
    """
    found: Dict[str, int] = {}
    seen = {start}
    frontier: List[str] = [start]
    hops = 0
    while frontier:
        if limit is not None and len(seen) > limit:
            return found, False
        hops += 1
        parents = parents_of(frontier)
        following: List[str] = []
        for qid in frontier:
            for parent in parents.get(qid, ()):
                if parent not in seen:
                    seen.add(parent)
                    found[parent] = hops
                    following.append(parent)
        frontier = following
    return found, True


def nearest_listed(labels: Any, qid: str, classes: FrozenSet[str]) -> Optional[Tuple[str, int]]:
    """(class, hops) of the nearest of ``classes`` strictly above ``qid``, or None.

    The whole P31 ∪ P279 closure counts; equally near classes: the smallest QID wins.
    """
    if not classes:
        return None
    own: Optional[Callable[[str, FrozenSet[str]], Optional[Tuple[str, int]]]] = getattr(labels, "nearest_class", None)
    if own is not None:
        return own(qid, classes)
    ancestors, _ = walk_up(lambda batch: {q: tuple(labels.ancestors(q, 1)) for q in batch}, qid)
    return nearest_in(ancestors, classes)


def nearest_in(ancestors: Mapping[str, int], classes: FrozenSet[str]) -> Optional[Tuple[str, int]]:
    """(class, hops) of the nearest of ``classes`` among ``{ancestor: hops}``; ties: smallest QID."""
    found = [(hops, cls) for cls, hops in ancestors.items() if cls in classes]
    if not found:
        return None
    hops, cls = min(found, key=lambda pair: (pair[0], _qid_key(pair[1])))
    return cls, hops


def _qid_key(qid: str) -> Tuple[int, str]:
    return (int(qid[1:]), qid) if is_qid(qid) else (0, qid)
