"""From per-file comparisons to the numbers of the report, for one linker run.

Everything is recomputed from the stored results (no label set, no linker needed):

* ranking metrics per hop level 0..3 — the means over files of P@k, R@k, DivR@k and AP@k
  as defined in :mod:`wikivel_bot.core.metrics` (R@k is a hit rate, DivR@k divides by
  min(k, |human items|));
* the same P@k and R@k for every k from 1 to the longest ranking (the by-k plot);
* by score band: suggestions cut into bands of (about) equal size by score, with the
  share correct at each hop level — *micro* precision: correct suggestions / suggestions;
* by super-category: of the suggestion (share correct), and of the human item (share of
  human items some top-k suggestion stands for);
* by evidence kind: why each suggestion was made ("image only", or the kind of the file's
  own evidence naming it: category, category label, link, identifier, several) and the
  share of each kind that is correct (micro precision, as by score band);
* the writer's verdicts: the share of suggestions its re-check would have skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.core.evidence import BUCKETS
from wikivel_bot.core.metrics import mean
from wikivel_bot.liveeval.records import HOP_LEVELS, WRITER_KINDS, FileResult, RunInfo, Suggestion

DEFAULT_KS: Tuple[int, ...] = (1, 5, 10)
DEFAULT_BANDS = 5
UNCATEGORISED = "(none)"
# Per-k metric names, in table order.
METRICS: Tuple[str, ...] = ("P", "R", "DivR", "mAP")


@dataclass(frozen=True)
class Band:
    """Suggestions scoring in [low, high] (the last band includes its top).

    :param correct: correct suggestions at hop levels 0..3.
    """

    low: float
    high: float
    suggestions: int
    correct: Tuple[int, ...]

    def precision(self, hops: int) -> float:
        return self.correct[hops] / self.suggestions if self.suggestions else 0.0

    @property
    def name(self) -> str:
        return f"{self.low:.3f}-{self.high:.3f}"


@dataclass(frozen=True)
class CategoryRow:
    """One super-category: its suggestions, and the human items that belong to it.

    :param correct: suggestions of this category correct at hop levels 0..3.
    :param human: human items (file, item pairs) of this category.
    :param found: of those, found by a top-``k`` suggestion at hop levels 0..3.
    """

    name: str
    suggestions: int
    correct: Tuple[int, ...]
    human: int
    found: Tuple[int, ...]

    def precision(self, hops: int) -> float:
        return self.correct[hops] / self.suggestions if self.suggestions else 0.0

    def recall(self, hops: int) -> float:
        return self.found[hops] / self.human if self.human else 0.0


@dataclass(frozen=True)
class EvidenceRow:
    """Suggestions made for one kind of evidence (:data:`wikivel_bot.core.evidence.BUCKETS`).

    :param correct: of those, correct at hop levels 0..3.
    """

    name: str
    suggestions: int
    correct: Tuple[int, ...]

    def precision(self, hops: int) -> float:
        return self.correct[hops] / self.suggestions if self.suggestions else 0.0


@dataclass
class Summary:
    """The numbers of one linker run.

    :param run: provenance. :param files: files compared. :param suggestions: suggestions made.
    :param ks: cut-offs of :attr:`metrics`.
    :param metrics: ``{hops: {"P@1": 0.4, "R@1": ..., "DivR@1": ..., "mAP@1": ...}}``.
    :param curve: ``{hops: [(k, P@k, R@k), ...]}`` for k = 1..longest ranking.
    :param bands: score bands, lowest first.
    :param categories: super-categories, most suggested first.
    :param recall_k: the cut-off of the categories' human-item recall.
    :param writer: ``{kind: suggestions}`` for :data:`WRITER_KINDS` and "would-write".
    :param human_items: (file, item) pairs of human statements.
    :param unknown_items: of those, items the label set does not keep.
    :param uploaded: (first, last) upload time of the files ("" when not known).
    :param files_without_suggestions: files the linker proposed nothing for.
    :param evidence: one row per evidence kind, in :data:`~wikivel_bot.core.evidence.BUCKETS`
        order (kinds with no suggestion included, with 0).
    """

    run: RunInfo
    files: int
    suggestions: int
    ks: Tuple[int, ...]
    metrics: Dict[int, Dict[str, float]]
    curve: Dict[int, List[Tuple[int, float, float]]]
    bands: List[Band]
    categories: List[CategoryRow]
    recall_k: int
    writer: Dict[str, int]
    human_items: int
    unknown_items: int
    uploaded: Tuple[str, str] = ("", "")
    files_without_suggestions: int = 0
    notes: List[str] = field(default_factory=list)
    evidence: List[EvidenceRow] = field(default_factory=list)

    def writer_rate(self, kind: Optional[str] = None) -> float:
        """Share of suggestions the writer would skip (for one kind, or any kind)."""
        if not self.suggestions:
            return 0.0
        skipped = self.writer[kind] if kind else sum(self.writer[k] for k in WRITER_KINDS)
        return skipped / self.suggestions

    def to_dict(self) -> Dict[str, Any]:
        """Plain data (fractions, counts) for ``summary.json``."""
        return {
            "linker": self.run.linker,
            "run": dict(self.run.__dict__),
            "files": self.files,
            "suggestions": self.suggestions,
            "files_without_suggestions": self.files_without_suggestions,
            "uploaded": list(self.uploaded),
            "human_items": self.human_items,
            "unknown_items": self.unknown_items,
            "ks": list(self.ks),
            "metrics": {str(h): dict(v) for h, v in self.metrics.items()},
            "curve": {str(h): [list(p) for p in v] for h, v in self.curve.items()},
            "bands": [{"low": b.low, "high": b.high, "suggestions": b.suggestions, "correct": list(b.correct),
                       "precision": [b.precision(h) for h in HOP_LEVELS]} for b in self.bands],
            "categories": [{"name": c.name, "suggestions": c.suggestions, "correct": list(c.correct),
                            "precision": [c.precision(h) for h in HOP_LEVELS], "human": c.human,
                            "found": list(c.found), "recall": [c.recall(h) for h in HOP_LEVELS]}
                           for c in self.categories],
            "evidence_kinds": [{"name": e.name, "suggestions": e.suggestions, "correct": list(e.correct),
                                "precision": [e.precision(h) for h in HOP_LEVELS]} for e in self.evidence],
            "recall_k": self.recall_k,
            "writer": dict(self.writer),
            "writer_skip_rate": self.writer_rate(),
            "notes": list(self.notes),
        }


def summarize_run(results: Sequence[FileResult], ks: Sequence[int] = DEFAULT_KS,
                  bands: int = DEFAULT_BANDS) -> Summary:
    """The numbers of one linker run (results of one linker: see ``records.by_linker``).

    :param results: the run's per-file results (not empty).
    :param ks: cut-offs for the metric table; the largest is also the human-item recall's.
    :param bands: how many score bands.
    :raises ValueError: for no results or a cut-off below 1.
    """
    if not results:
        raise ValueError("no results to summarize")
    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise ValueError(f"cut-offs must be positive, not {ks}")
    suggestions = [s for r in results for s in r.suggestions]
    longest = max((len(r.suggestions) for r in results), default=0)
    metrics: Dict[int, Dict[str, float]] = {}
    curve: Dict[int, List[Tuple[int, float, float]]] = {}
    for level in HOP_LEVELS:
        per_file = [r.hits_at(level) for r in results]
        values: Dict[str, float] = {}
        for k in ks:
            values[f"P@{k}"] = mean(h.precision(k) for h in per_file)
            values[f"R@{k}"] = mean(h.recall(k) for h in per_file)
            values[f"DivR@{k}"] = mean(h.diversity_recall(k) for h in per_file)
            values[f"mAP@{k}"] = mean(h.average_precision(k) for h in per_file)
        metrics[level] = values
        curve[level] = [(k, mean(h.precision(k) for h in per_file), mean(h.recall(k) for h in per_file))
                        for k in range(1, longest + 1)]
    writer = {kind: 0 for kind in WRITER_KINDS}
    writer["would-write"] = 0
    for s in suggestions:
        writer[s.writer or "would-write"] = writer.get(s.writer or "would-write", 0) + 1
    uploads = sorted(r.uploaded for r in results if r.uploaded)
    summary = Summary(
        run=results[0].run,
        files=len(results),
        suggestions=len(suggestions),
        ks=ks,
        metrics=metrics,
        curve=curve,
        bands=score_bands(suggestions, bands),
        categories=category_rows(results, ks[-1]),
        recall_k=ks[-1],
        writer=writer,
        human_items=sum(len(r.truth) for r in results),
        unknown_items=sum(len(r.truth_unknown) for r in results),
        uploaded=(uploads[0], uploads[-1]) if uploads else ("", ""),
        files_without_suggestions=sum(1 for r in results if not r.suggestions),
        evidence=evidence_rows(suggestions),
    )
    summary.notes = _notes(summary)
    return summary


def score_bands(suggestions: Sequence[Suggestion], count: int = DEFAULT_BANDS) -> List[Band]:
    """Cut suggestions into ``count`` bands of about equal size by score, lowest first.

    Equal-size bands keep every band's precision on about the same number of suggestions;
    equal scores always fall in the same band, so a band may be larger (and there may be
    fewer bands) when many scores tie.
    """
    ordered = sorted(suggestions, key=lambda s: s.score)
    if not ordered or count < 1:
        return []
    size = len(ordered) / count
    bands: List[Band] = []
    start = 0
    for index in range(1, count + 1):
        ideal = len(ordered) if index == count else max(start, round(index * size))
        end = ideal
        if 0 < end < len(ordered) and ordered[end].score == ordered[end - 1].score:
            # Never split a run of equal scores between two bands: cut before or after the
            # run, whichever is nearer the ideal size.
            before = after = end
            while before > start and ordered[before - 1].score == ordered[end].score:
                before -= 1
            while after < len(ordered) and ordered[after].score == ordered[end].score:
                after += 1
            end = before if before > start and ideal - before <= after - ideal else after
        if end <= start:
            continue
        chunk = ordered[start:end]
        correct = tuple(sum(1 for s in chunk if s.correct(level)) for level in HOP_LEVELS)
        bands.append(Band(chunk[0].score, chunk[-1].score, len(chunk), correct))
        start = end
        if start >= len(ordered):
            break
    return bands


def evidence_rows(suggestions: Sequence[Suggestion]) -> List[EvidenceRow]:
    """Micro precision by evidence kind: correct suggestions / suggestions of that kind.

    Every bucket gets a row, in :data:`~wikivel_bot.core.evidence.BUCKETS` order, so a kind
    that proposed nothing shows as 0 rather than vanishing from the report.
    """
    made = {name: 0 for name in BUCKETS}
    correct = {name: [0] * len(HOP_LEVELS) for name in BUCKETS}
    for s in suggestions:
        made[s.evidence_kind] = made.get(s.evidence_kind, 0) + 1
        row = correct.setdefault(s.evidence_kind, [0] * len(HOP_LEVELS))
        for level in HOP_LEVELS:
            row[level] += s.correct(level)
    return [EvidenceRow(name, made[name], tuple(correct[name])) for name in made]


def category_rows(results: Sequence[FileResult], k: int) -> List[CategoryRow]:
    """Per super-category: suggestion precision, and the recall of human items within top ``k``.

    A human item counts as found at hop level n when a top-``k`` suggestion is the item or
    an ancestor of it within n hops (each item on its own: one generic suggestion may find
    several items, unlike Diversity Recall).
    """
    made: Dict[str, int] = {}
    correct: Dict[str, List[int]] = {}
    human: Dict[str, int] = {}
    found: Dict[str, List[int]] = {}
    for result in results:
        for s in result.suggestions:
            name = s.category or UNCATEGORISED
            made[name] = made.get(name, 0) + 1
            row = correct.setdefault(name, [0] * len(HOP_LEVELS))
            for level in HOP_LEVELS:
                row[level] += s.correct(level)
        for item in result.truth:
            name = result.truth_categories.get(item) or UNCATEGORISED
            human[name] = human.get(name, 0) + 1
            row = found.setdefault(name, [0] * len(HOP_LEVELS))
            ranks = result.found.get(item, ())
            for level, rank in enumerate(ranks):
                row[level] += rank is not None and rank <= k
    names = sorted(set(made) | set(human), key=lambda n: (-made.get(n, 0), -human.get(n, 0), n))
    zero = (0,) * len(HOP_LEVELS)
    return [CategoryRow(name, made.get(name, 0), tuple(correct.get(name, zero)), human.get(name, 0),
                        tuple(found.get(name, zero))) for name in names]


def _notes(summary: Summary) -> List[str]:
    notes = []
    if summary.run.random_weights:
        notes.append("RANDOM WEIGHTS: the linker was not pretrained; these numbers only show that the "
                     "machinery works and say nothing about quality")
    if summary.unknown_items:
        notes.append(f"{summary.unknown_items} of {summary.human_items} human items are not kept in the label set "
                     "and cannot be suggested exactly (hop 0)")
    if summary.files_without_suggestions:
        notes.append(f"{summary.files_without_suggestions} file(s) got no suggestion at all (counted with "
                     "precision 0)")
    return notes
