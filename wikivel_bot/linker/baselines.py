"""The paper's two baselines (Table 4): they ignore the image and use depicts frequency only.

Frequencies (§4.4: "probability equal to their frequency in the train split"; top-k: "the
most frequent ones in the train split") are the training split's ground-truth counts *after*
promotion, stored with the dataset (``train_counts.json``) and handed over with
:meth:`FrequencyLinker.set_frequencies`: *human*, ground truth almost only through the people
promoted to it, is then the most frequent item, as in the paper's Table 2. Without a dataset
(``suggest --linker top-k``) the label set's own depicts counts stand in, with a warning.

``top-k``: always the most frequent items; the score is the item's share of all counts. ``random-freq``: a sample without replacement with probability proportional to
frequency, seeded per file so a rerun proposes the same; the score is the item's sampling key
``u ** (1 / w)`` (Efraimidis & Spirakis), whose top-k *is* such a sample — so the ranking
rules, which sort by score and fetch more than k, keep it a weighted sample instead of
collapsing it into top-k. No torch: these run wherever the rest of the bot runs.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.config import LinkerSettings
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.base import IndexInfo, LinkerDescription, Query
from wikivel_bot.linker.spec import LinkerSpec


class FrequencyLinker:
    """``frequency-top`` (top-k) or ``frequency-sample`` (random-freq) over a label set.

    :param spec: the registry entry.
    :param settings: only ``batch_size`` is used.
    """

    def __init__(self, spec: LinkerSpec, settings: LinkerSettings) -> None:
        if spec.architecture not in ("frequency-top", "frequency-sample"):
            raise LinkerError(f"{spec.name}: not a frequency baseline ({spec.architecture})")
        self.spec = spec
        self.settings = settings
        self._label_set: Optional[LabelSetView] = None
        self._share = np.zeros(0)
        self._order = np.zeros(0, dtype=np.int64)
        self._notes: Tuple[str, ...] = ()
        self._given: Optional[Mapping[str, int]] = None
        self._given_source = ""

    def set_frequencies(self, counts: Mapping[str, int], source: str) -> None:
        """Rank by these counts (QID -> files) instead of the label set's; call before ``attach``.

        :param counts: e.g. a dataset's training-split counts after promotion.
        :param source: where they come from, shown in the linker's warnings/notes.
        """
        self._given = dict(counts)
        self._given_source = source

    @property
    def description(self) -> LinkerDescription:
        return LinkerDescription(
            name=self.spec.name, version=f"{self.spec.name}/v{self.spec.version}", warnings=self._notes
        )

    @property
    def label_set(self) -> Optional[LabelSetView]:
        return self._label_set

    @property
    def batch_size(self) -> int:
        return max(1, self.settings.batch_size)

    @property
    def query_text_fields(self) -> Tuple[str, ...]:
        return ()

    def attach(self, label_set: LabelSetView, cache_dir: str = "", progress: bool = False) -> IndexInfo:
        """Read every item's frequency (nothing is cached: it is one pass over the set).

        With :meth:`set_frequencies` those counts are used (items they lack count 0).
        Otherwise the label set's: a set's ``frequency`` accumulates counts over 3 hops, which
        would put generic ancestors first, so its own ``direct_frequency`` is used where it
        has one — before promotion, hence the warning.
        """
        notes: Tuple[str, ...] = ()
        if self._given is not None:
            given = self._given
            counts = np.fromiter((given.get(q, 0) for q in label_set.qids), dtype=np.float64,
                                 count=len(label_set.qids))
            notes = (f"frequencies: {self._given_source}",)
        else:
            count_of = getattr(label_set, "direct_frequency", label_set.frequency)
            counts = np.fromiter((count_of(q) for q in label_set.qids), dtype=np.float64, count=len(label_set.qids))
            notes = ("frequencies: the label set's own depicts counts, before promotion (the paper uses the "
                     "training split's after promotion: evaluate with a dataset)",)
        total = counts.sum()
        if total <= 0:
            # A set without counts: every item equally likely, the order is the set's own.
            counts = np.ones_like(counts)
            total = counts.sum()
            notes = notes + ("no depicts counts: frequency baselines fall back to uniform",)
        self._share = counts / total if len(counts) else counts
        # Stable sort: equal counts keep label-set order on every run.
        self._order = np.argsort(-self._share, kind="stable")
        self._label_set = label_set
        self._notes = notes
        return IndexInfo(items=len(counts), dim=0, reused=False, notes=notes)

    def _sample_keys(self, seed: int) -> np.ndarray:
        """Keys u^(1/w), u uniform, w = share / max share: the top-k keys are a weighted sample."""
        rng = np.random.default_rng(seed)
        weights = self._share / self._share.max()
        with np.errstate(divide="ignore", under="ignore"):
            # w = 0 gives u^inf = 0: such items come only after every item that can be drawn.
            return np.where(weights > 0, rng.random(len(weights)) ** (1.0 / weights), 0.0)

    def score_items(self, queries: Sequence[Query], positions: Sequence[Sequence[int]]) -> List[List[float]]:
        """The score :meth:`search` gives given items: their share (top-k), or their sampling
        key for this file's seed (random-freq)."""
        if self._label_set is None:
            raise LinkerError(f"linker {self.spec.name}: attach a label set before searching")
        if self.spec.architecture == "frequency-top":
            return [[float(self._share[i]) for i in row] for row in positions]
        out: List[List[float]] = []
        for query, row in zip(queries, positions):
            keys = self._sample_keys(query.seed) if row else self._share
            out.append([float(keys[i]) for i in row])
        return out

    def score_outside(self, queries: Sequence[Query], items: Sequence[Sequence[Any]]) -> List[List[float]]:
        """0 for items outside the label set: no depicts count is known for them."""
        return [[0.0] * len(row) for row in items]

    def search(self, queries: Sequence[Query], k: int) -> List[List[Tuple[int, float]]]:
        """Top ``k`` by frequency, or ``k`` frequency-weighted samples per query."""
        if self._label_set is None:
            raise LinkerError(f"linker {self.spec.name}: attach a label set before searching")
        n = len(self._share)
        k = min(k, n)
        if k <= 0:
            return [[] for _ in queries]
        results = []
        for query in queries:
            if self.spec.architecture == "frequency-top":
                picks = self._order[:k]
                results.append([(int(i), float(self._share[i])) for i in picks])
            else:
                keys = self._sample_keys(query.seed)
                picks = np.argpartition(-keys, k - 1)[:k]
                picks = picks[np.argsort(-keys[picks], kind="stable")]
                results.append([(int(i), float(keys[i])) for i in picks])
        return results
