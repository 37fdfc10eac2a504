"""What every linker offers, whatever its model: the interface ``link.py`` and the CLI use.

Kept free of torch so the baselines, the registry and ``wikivel-bot linkers`` work without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from wikivel_bot.core.labelset import LabelSetView

# Item image loader for the fusion linker's Wikidata side: given P18 file names (without
# "File:"), return the bytes of those it can provide (a thumbnail cache, the Commons fetcher).
ItemImageLoader = Callable[[Sequence[str]], Mapping[str, bytes]]


class OutsideItem(Protocol):
    """An item outside the label set, as a linker encodes it on the fly (the file's evidence
    named it): ``wikidata.entities.ItemInfo`` has these, read-only."""

    @property
    def qid(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def image(self) -> str:
        """The P18 file name (without ``File:``), '' when none."""


@dataclass(frozen=True)
class Query:
    """One file as a linker sees it.

    :param key: a stable name of the file (title or MediaInfo id), used in messages.
    :param image: the decoded RGB thumbnail (a ``PIL.Image.Image``).
    :param text: the file's own text (description, categories) for linkers that read it.
    :param seed: per-file seed for linkers that sample (reruns give the same answer).
    :param cache: what a model computed from this file (its image embedding, by backbone), so
        a second model over the same backbone — the verifier beside a linker, the cascade's
        pair model after its first stage — does not compute it again. ``replace(query,
        text=...)`` keeps the same cache (see ``encoders.query_rows``).
    """

    key: str
    image: Any
    text: str = ""
    seed: int = 0
    cache: Dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class IndexInfo:
    """What :meth:`Linker.attach` did: where the item side lives and whether it was rebuilt."""

    items: int
    dim: int
    path: str = ""
    reused: bool = False
    build_seconds: float = 0.0
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class LinkerDescription:
    """Identity of a built linker, recorded in every Candidate and in checkpoints.

    ``warnings`` are shown with every output (random weights, an untrained head).
    """

    name: str
    version: str
    model: str = ""
    pretrained: str = ""
    weights: str = ""
    random_weights: bool = False
    checkpoint: str = ""
    device: str = "cpu"
    warnings: Tuple[str, ...] = field(default_factory=tuple)
    # Encoder precision (fp32, bf16, int8) and why it was chosen; '' for linkers without a model.
    precision: str = ""
    precision_reason: str = ""


class Linker(Protocol):
    """A visual entity linker bound (after :meth:`attach`) to one label set.

    Every linker this package builds also scores given items for the file's evidence
    (``link.link_files`` asks with ``getattr``, as for the cascade's ``search_details``):
    ``score_items(queries, positions)`` — the score :meth:`search` gives, for given label-set
    items, per query one per position in order — and ``score_outside(queries, items)`` — the
    same score for :class:`OutsideItem` values encoded on the fly as the label index encodes
    its items (the item text template; P18 where the item side reads images).
    """

    @property
    def description(self) -> LinkerDescription:
        """Name, version, backbone and warnings."""

    @property
    def label_set(self) -> Optional[LabelSetView]:
        """The attached label set (None before :meth:`attach`)."""

    @property
    def batch_size(self) -> int:
        """How many queries :meth:`search` should get at once on this device."""

    @property
    def query_text_fields(self) -> Tuple[str, ...]:
        """Which parts of a file's text the linker reads ('description', 'categories', 'title')."""

    def attach(self, label_set: LabelSetView, cache_dir: str, progress: bool = False) -> IndexInfo:
        """Prepare the item side for ``label_set`` (load or build the cached label index).

        :param label_set: the items to link to.
        :param cache_dir: where label indexes are cached.
        :param progress: show a progress bar while building.
        :raises LinkerError: a checkpoint built for another label set, an unreadable index.
        """

    def search(self, queries: Sequence[Query], k: int) -> List[List[Tuple[int, float]]]:
        """Top ``k`` (item position, score) per query, best first."""


class LinkerWrapper:
    """A linker around another that adds or replaces a few members and delegates the rest
    (the verifier's wrapper, the set-up's wrapper): one delegation rule for both.

    :param inner: the linker everything not defined on the wrapper comes from.
    """

    def __init__(self, inner: Linker) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not defined on the wrapper: search, search_details, backbone...
        inner = self.__dict__.get("inner")
        if inner is None:  # half-built (copy, unpickling): nothing to delegate to yet
            raise AttributeError(name)
        return getattr(inner, name)
