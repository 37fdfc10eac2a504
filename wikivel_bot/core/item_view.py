"""The safety rules' view of items the label set does not keep, read on demand.

The writer re-checks every approved pair against the current safety rules; an item outside
the label set (a new label set, an item a reviewer added) is read from Wikidata through the
bot's item client. :class:`FetchedItems` presents such items as a
:class:`~wikivel_bot.core.safety.SafetyView`: its classes are walked up to the top of the
P31 ∪ P279 graph (no hop ceiling; a visited set ends Wikidata's cycles), and one check reads
at most ``limit`` items — past that the check raises
:class:`~wikivel_bot.core.classes.SafetyUnchecked` and the item is withheld, not written
unchecked. Standard library only: the client comes in as a function.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.classes import SafetyUnchecked, nearest_in, walk_up

# Items one check may read: Wikidata's upper ontology above an item is a few hundred classes.
MAX_ITEMS = 2000

# qids -> {qid: item}: an item has ``instance_of``, ``subclass_of``, ``label``, ``aliases``
# and, when the client reads it, ``person_properties`` (e.g. ``WikidataClient.get``).
ItemGetter = Callable[[Sequence[str]], Mapping[str, Any]]


class FetchedItems:
    """A :class:`~wikivel_bot.core.safety.SafetyView` over items read with ``get``.

    :param get: reads items in batches (missing ones left out).
    :param limit: at most this many items are read for one walk up.
    """

    labels: Sequence[str] = ()  # no positions: names come from label_of/aliases_of

    def __init__(self, get: ItemGetter, limit: int = MAX_ITEMS) -> None:
        self._get = get
        self.limit = limit
        self._items: Dict[str, Any] = {}

    def index_of(self, qid: str) -> Optional[int]:
        return None

    def _read(self, qids: Sequence[str]) -> Dict[str, Any]:
        missing = [q for q in dict.fromkeys(qids) if q not in self._items]
        if missing:
            found = self._get(missing)
            for qid in missing:
                self._items[qid] = found.get(qid)
        return {q: self._items[q] for q in qids if self._items.get(q) is not None}

    def _parents(self, batch: Sequence[str]) -> Dict[str, Tuple[str, ...]]:
        return {q: (*item.instance_of, *item.subclass_of) for q, item in self._read(batch).items()}

    def _walk(self, qid: str) -> Dict[str, int]:
        ancestors, complete = walk_up(self._parents, qid, self.limit)
        if not complete:
            raise SafetyUnchecked(f"more than {self.limit} classes above it on Wikidata")
        return ancestors

    def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]:
        return {q: hops for q, hops in self._walk(qid).items() if hops <= max_hops}

    def nearest_class(self, qid: str, classes: FrozenSet[str]) -> Optional[Tuple[str, int]]:
        return nearest_in(self._walk(qid), classes) if classes else None

    def instance_of(self, qid: str) -> List[str]:
        item = self._read([qid]).get(qid)
        return list(item.instance_of) if item is not None else []

    def person_properties(self, qid: str) -> Optional[Tuple[str, ...]]:
        item = self._read([qid]).get(qid)
        found = getattr(item, "person_properties", None) if item is not None else None
        return tuple(found) if found is not None else None

    def label_of(self, qid: str) -> str:
        item = self._read([qid]).get(qid)
        return str(item.label) if item is not None else ""

    def aliases_of(self, qid: str) -> List[str]:
        item = self._read([qid]).get(qid)
        return [str(a) for a in item.aliases] if item is not None else []


def fetched_items(get: ItemGetter, limit: int = MAX_ITEMS) -> Callable[[str], FetchedItems]:
    """``outside`` for :func:`~wikivel_bot.core.safety.item_check`: a fresh view per check
    (the client keeps its own cache of items across checks)."""
    return lambda qid: FetchedItems(get, limit)
