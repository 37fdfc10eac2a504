"""Labels and descriptions of the kept items in several languages, for the review page.

The linker reads one text per item (``items.arrow``: the first language of the fallback chain
that has one). Reviewers read in their own language, so a label set also keeps each kept
item's label and description in the display languages (``labels.languages``), as they are,
without fallback, in ``texts.arrow``: one row per (item, language), sorted by item::

    item          int32   position of the item in the set (row of items.arrow)
    lang          string  language code, e.g. "de"
    label         string  '' when the item has only a description in that language
    description   string  '' when it has only a label

The table is not part of the content hash: it changes nothing the linker encodes or ranks
on, so adding or dropping a display language keeps label indexes and checkpoints valid. It
has its own hash in the manifest (``texts_hash``), checked when a set is verified. Sets
written before it existed load without it and show the linker's text (English by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Protocol, Sequence, Tuple

import numpy as np
import pyarrow as pa

from wikivel_bot.labels.artifact import TEXTS_SCHEMA

# The last resort before the linker's own text.
FALLBACK = "en"


@dataclass(frozen=True)
class ItemText:
    """An item as the review page shows it; each text says which language it is in."""

    qid: str
    label: str = ""
    label_lang: str = ""
    description: str = ""
    description_lang: str = ""
    # The P18 file name without ``File:`` ('' when none).
    image: str = ""


def texts_table(per_item: pa.ChunkedArray) -> pa.Table:
    """The ``texts.arrow`` table from the kept items' ``texts`` lists (item i = list i)."""
    lists = per_item.combine_chunks() if isinstance(per_item, pa.ChunkedArray) else per_item
    lengths = np.asarray(lists.value_lengths().fill_null(0), dtype=np.int64)
    flat = lists.flatten()
    return pa.table(
        {
            "item": np.repeat(np.arange(len(lists), dtype=np.int32), lengths),
            "lang": flat.field("lang"),
            "label": flat.field("label"),
            "description": flat.field("description"),
        },
        schema=TEXTS_SCHEMA,
    )


def language_order(lang: str) -> Tuple[str, ...]:
    """Where to look for a reviewer's language: itself, its base language ("de-at" → "de"),
    then English."""
    lang = (lang or "").strip().lower()
    return tuple(dict.fromkeys(x for x in (lang, lang.split("-")[0], FALLBACK) if x))


class DisplayTexts:
    """Look-ups in a ``texts.arrow`` table (memory-mapped; only the rows asked for are read)."""

    def __init__(self, table: Optional[pa.Table]) -> None:
        self._table = table
        self._items = table.column("item").to_numpy() if table is not None else np.empty(0, np.int32)

    def of(self, row: int) -> Dict[str, Tuple[str, str]]:
        """{lang: (label, description)} of the item in ``row``."""
        start, end = np.searchsorted(self._items, [row, row + 1])
        if self._table is None or start == end:
            return {}
        rows = self._table.slice(int(start), int(end - start)).to_pylist()
        return {r["lang"]: (r["label"], r["description"]) for r in rows}


class TextSource(Protocol):
    """What :func:`texts_in` reads of a label set (``LabelSet`` implements it).

    A protocol rather than an import of ``LabelSet`` so that this module stays below
    ``labelset.py``, which builds its ``texts_in`` on this one.
    """

    @property
    def display_texts(self) -> DisplayTexts: ...

    def index_of(self, qid: str) -> Optional[int]: ...

    def label_of(self, qid: str) -> str: ...

    def label_lang_of(self, qid: str) -> str: ...

    def description_of(self, qid: str) -> str: ...

    def description_lang_of(self, qid: str) -> str: ...

    def image_of(self, qid: str) -> str: ...


def texts_in(label_set: TextSource, qids: Iterable[str], lang: str) -> Dict[str, ItemText]:
    """The kept items among ``qids`` in ``lang``, else English, else the linker's text.

    Label and description fall back separately (an item may have a German label and only an
    English description); items the set did not keep are left out.
    """
    order = language_order(lang)
    display = label_set.display_texts
    out: Dict[str, ItemText] = {}
    for qid in dict.fromkeys(qids):
        row = label_set.index_of(qid)
        if row is None:
            continue
        known = display.of(row)
        label, label_lang = _first(known, order, 0)
        description, description_lang = _first(known, order, 1)
        if not label:
            label, label_lang = label_set.label_of(qid), label_set.label_lang_of(qid)
        if not description:
            description, description_lang = label_set.description_of(qid), label_set.description_lang_of(qid)
        out[qid] = ItemText(qid, label, label_lang, description, description_lang, label_set.image_of(qid))
    return out


def _first(known: Dict[str, Tuple[str, str]], order: Sequence[str], which: int) -> Tuple[str, str]:
    for lang in order:
        value = known.get(lang, ("", ""))[which]
        if value:
            return value, lang
    return "", ""
