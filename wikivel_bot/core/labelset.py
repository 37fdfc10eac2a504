"""What the rest of the code may ask of a label set (implemented in ``wikivel_bot.labels``).

A protocol rather than a class so that ``core`` stays free of numpy and the on-disk format:
the ranking rules and the linker only need these questions answered.
"""

from __future__ import annotations

from typing import Mapping, Optional, Protocol, Sequence


class LabelSetView(Protocol):
    """A frozen, ordered set of Wikidata items with their hierarchy.

    Positions are stable: ``qids[i]``, ``labels[i]``, ``descriptions[i]`` and ``images[i]``
    describe the same item, and a label index built over the set stores embeddings in the
    same order.
    """

    @property
    def content_hash(self) -> str:
        """A hash of everything that defines the set (items, texts, hierarchy, counts)."""

    @property
    def qids(self) -> Sequence[str]:
        """Item ids in index order, e.g. ``["Q146", "Q144", ...]``."""

    @property
    def labels(self) -> Sequence[str]:
        """Label in the first configured language that has one ('' when none)."""

    @property
    def descriptions(self) -> Sequence[str]:
        """Description with the same language fallback ('' when none)."""

    @property
    def images(self) -> Sequence[str]:
        """First P18 image file name without the ``File:`` prefix ('' when none)."""

    def index_of(self, qid: str) -> Optional[int]:
        """Position of ``qid`` in the set, or None when it is not kept."""

    def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]:
        """Ancestors of ``qid`` over P31 ∪ P279 within ``max_hops``: {ancestor qid: hops}.

        Works for any item the set knows the parents of, kept or not; hops is the shortest
        distance. The item itself is not included.
        """

    def frequency(self, qid: str) -> int:
        """Depicts count accumulated over up to 3 hops (0 for unknown items)."""
