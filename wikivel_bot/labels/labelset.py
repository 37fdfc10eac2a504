"""``LabelSet``: a frozen, ordered set of items with their hierarchy and counts.

Implements :class:`wikivel_bot.core.labelset.LabelSetView` over a :class:`LabelSetData`
(memory-mapped from an artifact directory or built in memory). Item ``i`` of the set is node
``i`` of the hierarchy; nodes after the kept items are items the set knows but did not keep
(depicted ones that were replaced or dropped, and ancestors), so ``ancestors`` and
``frequency`` answer for them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from wikivel_bot.core.safety import PERSON_PROPERTIES
from wikivel_bot.labels.categories import category_names
from wikivel_bot.labels.closure import ClassReach, child_table, parents_from_closure
from wikivel_bot.labels.frequency import REASON_NAMES, STATUS_NAMES
from wikivel_bot.labels.hierarchy import MAX_HOPS, Hierarchy
from wikivel_bot.labels.artifact import LabelSetData
from wikivel_bot.labels.texts import DisplayTexts, ItemText, texts_in
from wikivel_bot.types import is_qid


def column_array(column: pa.ChunkedArray) -> np.ndarray:
    """A numeric column as a numpy array, read straight from its Arrow buffers.

    pyarrow's own ``to_numpy`` imports pandas on first use (~0.15 s of every start that
    opens a label set); a fixed-width column without nulls is just its values buffer, so a
    single chunk is returned zero-copy (memory-mapped) and several are concatenated.
    """
    dtype = column.type
    if column.null_count or not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype)):
        return column.to_numpy()
    numpy_dtype = np.dtype(dtype.to_pandas_dtype())
    parts = [np.frombuffer(c.buffers()[1], dtype=numpy_dtype, count=len(c), offset=c.offset * numpy_dtype.itemsize)
             for c in column.chunks]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=numpy_dtype)


def _number(qid: str) -> int:
    # Hot path (called millions of times by ranking): no regex, no exceptions for good input.
    return int(qid[1:]) if is_qid(qid) else -1


class LabelSet:
    """A label set; see the module docstring. Build with ``load_label_set`` or ``assemble``.

    :param data: the tables and arrays.
    :param path: the artifact directory it was loaded from (None when built in memory).
    """

    def __init__(self, data: LabelSetData, path: Optional[Path] = None) -> None:
        self._data = data
        self.path = path
        arrays = data.arrays
        self._node_qids = column_array(data.nodes.column("qid"))
        self.hierarchy = Hierarchy(
            self._node_qids, arrays["closure_offsets"], arrays["closure_ancestors"], arrays["closure_hops"]
        )
        self._n_items = data.items.num_rows
        self._cache: Dict[Any, Any] = {}

    # -- LabelSetView ---------------------------------------------------------------------
    @property
    def content_hash(self) -> str:
        return str(self._data.manifest.get("content_hash", ""))

    @property
    def qids(self) -> Sequence[str]:
        return self._list("qids", lambda: [f"Q{q}" for q in self._node_qids[: self._n_items].tolist()])

    @property
    def labels(self) -> Sequence[str]:
        return self._list("labels", lambda: self._data.items.column("label").to_pylist())

    @property
    def descriptions(self) -> Sequence[str]:
        return self._list("descriptions", lambda: self._data.items.column("description").to_pylist())

    @property
    def images(self) -> Sequence[str]:
        return self._list("images", lambda: self._data.items.column("image").to_pylist())

    def index_of(self, qid: str) -> Optional[int]:
        node = self.hierarchy.node(_number(qid))
        return node if 0 <= node < self._n_items else None

    def ancestors(self, qid: str, max_hops: int = MAX_HOPS) -> Mapping[str, int]:
        node = self.hierarchy.node(_number(qid))
        if node < 0:
            return {}
        nodes, hops = self.hierarchy.ancestors_of(node, max_hops)
        # Nearest first, then in node order (kept items first, by QID).
        order = np.lexsort((nodes, hops))
        qids = self._node_qids[nodes[order]]
        return {f"Q{q}": h for q, h in zip(qids.tolist(), hops[order].tolist())}

    def frequency(self, qid: str) -> int:
        node = self.hierarchy.node(_number(qid))
        return int(self._column("accumulated")[node]) if node >= 0 else 0

    # -- for the safety rules (core/safety.py) ---------------------------------------------
    @property
    def has_instance_of(self) -> bool:
        """True when the set stores P31 targets (sets built before they were added do not)."""
        return "instance_offsets" in self._data.arrays

    def instance_of(self, qid: str) -> Optional[List[str]]:
        """P31 (instance of) targets of any known item; [] for unknown items; None when the
        set stores no instance-of data."""
        if not self.has_instance_of:
            return None
        node = self.hierarchy.node(_number(qid))
        if node < 0:
            return []
        offsets = self._data.arrays["instance_offsets"]
        targets = self._data.arrays["instance_of"][int(offsets[node]) : int(offsets[node + 1])]
        return [f"Q{q}" for q in self._node_qids[np.asarray(targets, dtype=np.int64)].tolist()]

    @property
    def has_parents(self) -> bool:
        """True when the set stores every node's direct parents up to the top of the graph
        (sets written before: the parents within their 3-hop closure)."""
        return "parent_offsets" in self._data.arrays

    def nearest_class(self, qid: str, classes: FrozenSet[str]) -> Optional[Tuple[str, int]]:
        """(class, hops) of the nearest of ``classes`` strictly above ``qid`` over the whole
        P31 ∪ P279 graph (no hop ceiling), or None; equally near: the smallest QID.

        The nodes under ``classes`` are computed on the first call for that group of classes
        and kept (:class:`~wikivel_bot.labels.closure.ClassReach`: one entry per node under
        the group, not per pair).
        """
        node = self.node_of(qid)
        if node < 0 or not classes:
            return None
        found = self._reach(frozenset(classes)).find(node)
        if found is None:
            return None
        return f"Q{int(self._node_qids[found[0]])}", found[1]

    def _reach(self, classes: FrozenSet[str]) -> ClassReach:
        key = ("reach", classes)
        reach = self._cache.get(key)
        if reach is None:
            if "children" not in self._cache:
                arrays = self._data.arrays
                if self.has_parents:
                    parents = (arrays["parent_offsets"], arrays["parents"])
                else:
                    parents = parents_from_closure(arrays["closure_offsets"], arrays["closure_hops"],
                                                   arrays["closure_ancestors"])
                self._cache["children"] = child_table(*parents)
            nodes = np.asarray([self.node_of(q) for q in sorted(classes)], dtype=np.int64)
            child_offsets, children = self._cache["children"]
            reach = ClassReach.compute(child_offsets, children, nodes, class_keys=self._node_qids)
            self._cache[key] = reach
        return reach

    @property
    def has_person_properties(self) -> bool:
        """True when the set stores which items without P31 have person-only properties."""
        return "person_properties" in self._data.arrays

    def person_properties(self, qid: str) -> Optional[Tuple[str, ...]]:
        """The person-only properties (``core.safety.PERSON_PROPERTIES``) of a known item
        without P31: () when it has P31 or none of them; None when the set does not store
        them or does not know the item."""
        node = self.node_of(qid)
        if node < 0 or not self.has_person_properties:
            return None
        bits = int(self._data.arrays["person_properties"][node])
        return tuple(pid for bit, pid in enumerate(PERSON_PROPERTIES) if bits >> bit & 1)

    def aliases_of(self, qid: str) -> List[str]:
        """Aliases of a kept item (empty when the set was built without aliases)."""
        index = self.index_of(qid)
        if index is None:
            return []
        return [str(a) for a in (self._data.items.column("aliases")[index].as_py() or ())]

    # -- beyond the view ------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n_items

    def __contains__(self, qid: object) -> bool:
        return isinstance(qid, str) and self.index_of(qid) is not None

    @property
    def manifest(self) -> Mapping[str, Any]:
        return self._data.manifest

    @property
    def languages(self) -> Sequence[str]:
        return tuple(self._data.manifest.get("languages", ()))

    @property
    def min_freq(self) -> int:
        return int(self._data.manifest.get("min_freq", 0))

    @property
    def data(self) -> LabelSetData:
        return self._data

    def node_of(self, qid: str) -> int:
        """Hierarchy node number of any known item (-1 when unknown); kept items: = index."""
        return self.hierarchy.node(_number(qid))

    def direct_frequency(self, qid: str) -> int:
        """Files depicting exactly this item (no hops); 0 for unknown items."""
        node = self.node_of(qid)
        return int(self._column("direct")[node]) if node >= 0 else 0

    def super_category(self, qid: str) -> str:
        """"human", "animal", ... for a known item ("other" when none fits; "" if unknown)."""
        node = self.node_of(qid)
        if node < 0:
            return ""
        return category_names()[int(self._column("super_category")[node])]

    def is_ancestor(self, ancestor: str, descendant: str, max_hops: int = MAX_HOPS) -> bool:
        """True when ``ancestor`` is reached from ``descendant`` within ``max_hops`` (not itself)."""
        hops = self.hierarchy.hop(self.node_of(ancestor), self.node_of(descendant))
        return 0 < hops <= max_hops

    def hops(self, a: str, b: str) -> Optional[int]:
        """Distance between two items in either direction: 0 when equal, n when one is an
        ancestor of the other within n <= 3 hops, None otherwise (or when one is unknown)."""
        if a == b:
            return 0
        na, nb = self.node_of(a), self.node_of(b)
        if na < 0 or nb < 0:
            return None
        up = self.hierarchy.hop(na, nb)
        down = self.hierarchy.hop(nb, na)
        found = [h for h in (up, down) if h > 0]
        return min(found) if found else None

    def label_of(self, qid: str) -> str:
        """Label of any known item, kept or not ('' when none was stored)."""
        node = self.node_of(qid)
        if node < 0:
            return ""
        if node < self._n_items:
            return self._cell("labels", "label", node)
        return str(self._data.nodes.column("label")[node].as_py())

    def description_of(self, qid: str) -> str:
        """Description of a kept item ('' otherwise)."""
        index = self.index_of(qid)
        return "" if index is None else self._cell("descriptions", "description", index)

    def label_lang_of(self, qid: str) -> str:
        """Language of a kept item's label (the linker's text; '' otherwise)."""
        index = self.index_of(qid)
        return "" if index is None else str(self._data.items.column("label_lang")[index].as_py() or "")

    def description_lang_of(self, qid: str) -> str:
        """Language of a kept item's description (the linker's text; '' otherwise)."""
        index = self.index_of(qid)
        return "" if index is None else str(self._data.items.column("description_lang")[index].as_py() or "")

    @property
    def display_languages(self) -> Sequence[str]:
        """Languages kept for reviewers (``texts.arrow``); () for sets written before them."""
        return tuple(self._data.manifest.get("display_languages", ()))

    @property
    def display_texts(self) -> DisplayTexts:
        if "display" not in self._cache:
            self._cache["display"] = DisplayTexts(self._data.texts)
        return self._cache["display"]

    def texts_in(self, qids: Sequence[str], lang: str) -> Dict[str, ItemText]:
        """Kept items in the reviewer's language, else English, else the linker's text."""
        return texts_in(self, qids, lang)

    def image_of(self, qid: str) -> str:
        """P18 image of a kept item ('' otherwise)."""
        index = self.index_of(qid)
        return "" if index is None else self._cell("images", "image", index)

    def _cell(self, key: str, column: str, row: int) -> str:
        # One value without turning a column of millions of strings into a list.
        if key in self._cache:
            return self._cache[key][row]
        return str(self._data.items.column(column)[row].as_py())

    def status(self, qid: str) -> str:
        """"kept", "replaced", "dropped", "ancestor only", or "unknown"."""
        node = self.node_of(qid)
        return STATUS_NAMES[int(self._column("status")[node])] if node >= 0 else "unknown"

    def reason(self, qid: str) -> str:
        """Why a known item was not kept ('' when kept or unknown)."""
        node = self.node_of(qid)
        if node < 0:
            return ""
        text = REASON_NAMES[int(self._column("reason")[node])]
        blocked_by = int(self._column("blocked_by")[node])
        if blocked_by and "blocklisted class" in text:
            if blocked_by == int(self._node_qids[node]):
                return "not depictable: a blocklisted class of non-depictable items"
            name = self.label_of(f"Q{blocked_by}")
            text = f"not depictable: instance of {name + ' ' if name else ''}(Q{blocked_by})"
        return text

    def replacements(self, qid: str) -> List[str]:
        """Kept items that replace a depicted item that was not kept (nearest ancestors)."""
        node = self.node_of(qid)
        if node < 0:
            return []
        offsets = self._data.arrays["replaced_offsets"]
        nodes = self._data.arrays["replaced_by"][int(offsets[node]) : int(offsets[node + 1])]
        return [f"Q{q}" for q in self._node_qids[np.asarray(nodes, dtype=np.int64)].tolist()]

    def files(self) -> Optional[pa.Table]:
        """The files' depicts after filtering (page_id, qid, rank, source_qid), if stored."""
        return self._data.files

    def _list(self, key: str, build: Any) -> List[Any]:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def _column(self, key: str) -> np.ndarray:
        names = {
            "accumulated": "accumulated_count",
            "direct": "direct_count",
            "status": "status",
            "reason": "reason",
            "blocked_by": "blocked_by",
            "super_category": "super_category",
        }
        if key not in self._cache:
            self._cache[key] = column_array(self._data.nodes.column(names[key]))
        return self._cache[key]

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<LabelSet {self._n_items} items, {self.hierarchy.n_nodes} nodes{where} {self.content_hash[:19]}>"
