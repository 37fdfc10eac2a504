"""A label set seen together with items from outside it: what the ranking and safety rules
ask of the items a file's evidence names but the label set does not keep.

A file's own evidence (``core.evidence``) may name an item the label set does not keep — a
particular church, a painting, the photographer. The linker encodes such an item on the fly
and scores it like the others; the ranking rules (``core.ranking``) and the safety rules
(``core.safety``) then need its label, its classes and the classes above them.
:class:`WithOutsideItems` answers for both kinds of items: label-set items as the label set
does, outside items from what was read of them on Wikidata (label, description, aliases,
P31/P279, the person-only properties: a ``wikidata.entities.ItemInfo`` has them all), their
parents continuing in the label set's own graph.

A parent that neither knows (a class the label set's graph does not hold) is read through
``get`` when one is given (the Wikidata client's ``get``), bounded like the writer's
re-check (``core.item_view``): a walk that would read more raises
:class:`~wikivel_bot.core.classes.SafetyUnchecked` and the ranking withholds the item. Without
``get`` the walk ends there. Standard library only.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.classes import SafetyUnchecked, nearest_in, walk_up
from wikivel_bot.core.item_view import MAX_ITEMS, ItemGetter


class WithOutsideItems:
    """The label set ``labels`` plus ``items`` (qid → an item read from Wikidata).

    Positions, texts and the content hash are the label set's: outside items have no
    position (``index_of`` is None) and are told apart by :meth:`is_outside`.

    :param labels: a :class:`~wikivel_bot.core.labelset.LabelSetView`.
    :param items: the outside items; each has ``label``, ``description``, ``aliases``,
        ``instance_of``, ``subclass_of`` and may have ``person_properties``.
    :param get: reads further items (parents neither knows); None ends the walk there.
    :param limit: at most this many items are read for one walk up.
    """

    def __init__(self, labels: Any, items: Mapping[str, Any], get: Optional[ItemGetter] = None,
                 limit: int = MAX_ITEMS) -> None:
        self._labels = labels
        self._items = {q: item for q, item in items.items() if labels.index_of(q) is None}
        self._get = get
        self._limit = limit
        self._read: Dict[str, Any] = {}
        self._walks: Dict[str, Dict[str, int]] = {}

    def __getattr__(self, name: str) -> Any:
        # content_hash, qids, labels, descriptions, images, frequency, has_instance_of...
        labels = self.__dict__.get("_labels")
        if labels is None:  # half-built (copy, unpickling): nothing to delegate to yet
            raise AttributeError(name)
        return getattr(labels, name)

    def is_outside(self, qid: str) -> bool:
        """True for an item the label set does not keep that this view knows."""
        return qid in self._items

    def index_of(self, qid: str) -> Optional[int]:
        return self._labels.index_of(qid)

    # -- the graph -----------------------------------------------------------------------

    def _parents(self, batch: Sequence[str]) -> Dict[str, Tuple[str, ...]]:
        out: Dict[str, Tuple[str, ...]] = {}
        unknown: List[str] = []
        for qid in batch:
            item = self._items.get(qid) or self._read.get(qid)
            if item is not None:
                out[qid] = (*item.instance_of, *item.subclass_of)
                continue
            known = tuple(self._labels.ancestors(qid, 1))
            if known or self._labels.index_of(qid) is not None or self._get is None or qid in self._read:
                out[qid] = known
            else:
                unknown.append(qid)
        if unknown and self._get is not None:
            found = self._get(unknown)
            for qid in unknown:
                self._read[qid] = found.get(qid)
                item = self._read[qid]
                out[qid] = (*item.instance_of, *item.subclass_of) if item is not None else ()
        return out

    def _walk(self, qid: str) -> Dict[str, int]:
        """Every ancestor of an outside item (whole closure), read once per view."""
        if qid not in self._walks:
            ancestors, complete = walk_up(self._parents, qid, self._limit)
            if not complete:
                raise SafetyUnchecked(f"more than {self._limit} classes above it")
            self._walks[qid] = ancestors
        return self._walks[qid]

    def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]:
        if qid not in self._items:
            return self._labels.ancestors(qid, max_hops)
        # Within max_hops only: parents first, then the label set's own ancestors of each.
        found: Dict[str, int] = {}
        for parent in self._parents([qid])[qid]:
            found[parent] = 1
            for above, hops in self._labels.ancestors(parent, max_hops - 1).items():
                if above != qid and hops + 1 <= max_hops and hops + 1 < found.get(above, max_hops + 1):
                    found[above] = hops + 1
        return found

    def nearest_class(self, qid: str, classes: FrozenSet[str]) -> Optional[Tuple[str, int]]:
        if qid not in self._items:
            own: Optional[Callable[[str, FrozenSet[str]], Optional[Tuple[str, int]]]] = getattr(
                self._labels, "nearest_class", None)
            if own is not None:
                return own(qid, classes)
            ancestors, _ = walk_up(lambda batch: {q: tuple(self._labels.ancestors(q, 1)) for q in batch}, qid)
            return nearest_in(ancestors, classes)
        return nearest_in(self._walk(qid), classes) if classes else None

    # -- what the safety rules and the ranking read ----------------------------------------

    def instance_of(self, qid: str) -> Optional[List[str]]:
        item = self._items.get(qid)
        if item is not None:
            return list(item.instance_of)
        lookup = getattr(self._labels, "instance_of", None)
        return lookup(qid) if lookup is not None else None

    def person_properties(self, qid: str) -> Optional[Tuple[str, ...]]:
        item = self._items.get(qid)
        if item is not None:
            found = getattr(item, "person_properties", None)
            return tuple(found) if found is not None else None
        lookup = getattr(self._labels, "person_properties", None)
        return lookup(qid) if lookup is not None else None

    def label_of(self, qid: str) -> str:
        item = self._items.get(qid)
        if item is not None:
            return str(item.label)
        lookup = getattr(self._labels, "label_of", None)
        return lookup(qid) if lookup is not None else ""

    def aliases_of(self, qid: str) -> List[str]:
        item = self._items.get(qid)
        if item is not None:
            return [str(a) for a in item.aliases]
        lookup = getattr(self._labels, "aliases_of", None)
        return list(lookup(qid)) if lookup is not None else []

    def describe_outside(self, qid: str) -> Tuple[str, str]:
        """(label, description) of an outside item (``core.ranking.describe_item`` asks)."""
        item = self._items.get(qid)
        return (str(item.label), str(item.description)) if item is not None else ("", "")
