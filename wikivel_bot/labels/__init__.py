"""Hierarchy-aware label sets: the Wikidata items a file may be linked to.

Public API::

    load_label_set(path) -> LabelSet            open an artifact directory (memory-mapped)
    default_label_set(labels_dir="") -> LabelSet the given set, or the starter set when empty
    starter_label_set_path() -> Path             the starter set shipped with the package
    label_set_from_records(records, counts=None, *, min_freq=0, languages=("en",))
                                                 a small set in memory, for tests and tools
    write_label_set(label_set, out_dir, overwrite=False) -> Path

``LabelSet`` implements :class:`wikivel_bot.core.labelset.LabelSetView` (``content_hash``,
``qids``, ``labels``, ``descriptions``, ``images``, ``index_of``, ``ancestors``,
``frequency``) and adds ``super_category(qid)``, ``is_ancestor(a, d, max_hops=3)``,
``hops(a, b)``, ``direct_frequency``, ``status``/``reason``/``replacements`` (what happened
to a depicted item that was not kept), ``hierarchy`` (vectorised lookups by node number) and
``texts_in(qids, lang)`` (kept items' labels and descriptions in a reviewer's language, from
the display languages of ``labels.languages``, else English; ``texts.py``).

Building a set in memory for a test elsewhere::

    from wikivel_bot.labels import label_set_from_records
    labels = label_set_from_records([
        {"qid": "Q729", "label": "animal", "description": "kingdom of multicellular eukaryotic organisms"},
        {"qid": "Q146", "label": "house cat", "description": "domesticated feline", "p279": ["Q729"]},
        {"qid": "Q144", "label": "dog", "p279": ["Q729"]},
    ])
    labels.qids                      # ['Q144', 'Q146', 'Q729'] (kept items in QID order)
    labels.ancestors("Q146")         # {'Q729': 1}

Pass ``counts={"Q146": 12, ...}`` and ``min_freq=10`` to exercise the §3.2 filtering.
Building from dumps (``build.py``) and from the Wikidata API (``wikidata_api.py``, through
the bot's one Wikidata client in ``wikivel_bot.wikidata``) import their heavier machinery only
when called. An item's image (P18) is chosen by ``wikivel_bot.wikidata.entities.best_image``
here as everywhere else.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Union

from wikivel_bot.labels.artifact import read_artifact, write_artifact
from wikivel_bot.labels.labelset import LabelSet

__all__ = [
    "LabelSet",
    "default_label_set",
    "label_set_from_records",
    "load_label_set",
    "starter_label_set_path",
    "write_label_set",
]


def load_label_set(path: Union[str, Path], verify: bool = False) -> LabelSet:
    """Open the label set in directory ``path``.

    :param verify: recompute the content hash (reads everything; off by default).
    :raises LabelSetError: not a label set, corrupt, or of an unsupported format version.
    """
    path = Path(path)
    return LabelSet(read_artifact(path, verify=verify), path=path)


def starter_label_set_path() -> Path:
    """The directory of the starter label set shipped inside the package."""
    return Path(str(resources.files("wikivel_bot.labels").joinpath("starter")))


def default_label_set(labels_dir: str = "") -> LabelSet:
    """The label set named by settings (``linker.labels_dir``), or the starter set when empty."""
    return load_label_set(Path(labels_dir) if labels_dir else starter_label_set_path())


def write_label_set(label_set: LabelSet, out_dir: Union[str, Path], overwrite: bool = False) -> Path:
    """Write a (for example in-memory) label set as an artifact directory."""
    return write_artifact(label_set.data, Path(out_dir), overwrite=overwrite)


def label_set_from_records(*args: Any, **kwargs: Any) -> LabelSet:
    """A small label set in memory from item records; see :func:`assemble.label_set_from_records`."""
    from wikivel_bot.labels.assemble import label_set_from_records as build

    return build(*args, **kwargs)
