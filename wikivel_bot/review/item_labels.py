"""A label beside every QID people read (audit lines, wikitext, the review's "depicts now").

Labels come from what the queue stored with the linker's candidates, then from the label
set the linker uses (the starter set by default): both local, so no request leaves the
machine. An item known to neither is shown by its QID alone.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

LabelOf = Callable[[str], str]


def label_lookup(known: Optional[Mapping[str, str]] = None, label_set: Any = None) -> LabelOf:
    """qid -> label ('' when unknown), from ``known`` first, then ``label_set``.

    :param known: labels already at hand (e.g. ``queue.item_labels.stored_labels``).
    :param label_set: a ``core.labelset.LabelSetView`` (``index_of`` and ``labels``).
    """
    cache: Dict[str, str] = dict(known or {})

    def label_of(qid: str) -> str:
        if qid not in cache:
            label = ""
            if label_set is not None:
                index = label_set.index_of(qid)
                if index is not None:
                    label = str(label_set.labels[index])
            cache[qid] = label
        return cache[qid]

    return label_of


def with_label(qid: str, label_of: Optional[LabelOf]) -> str:
    """``Q146 (house cat)``, or ``Q146`` when the label is unknown."""
    label = label_of(qid) if label_of is not None else ""
    return f"{qid} ({label})" if label else qid
