"""Scoring ranked output against ground truth: the means of the §4.4 metrics over files.

Any system can be scored on the same split: rankings come as (file, items) pairs, from a
predictions file (:func:`evaluate_files`) or, later, straight from a linker. Nothing is
dropped silently: truth files without a ranking are scored as empty rankings (a system does
not gain by skipping hard files) and listed; rankings for files without truth, and truth lines
with no items, are not scored and are listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from wikivel_bot.core.metrics import AncestorsOf, RankingMatch
from wikivel_bot.errors import UsageError

DEFAULT_KS: Tuple[int, ...] = (1, 5, 10)
# The cut-offs the paper and the report use (§5.1 also quotes 20, 50 and 100).
REPORT_KS: Tuple[int, ...] = (1, 5, 10, 20, 50, 100)
ALL_HOPS: Tuple[int, ...] = (0, 1, 2, 3)
# Per-k metrics, in output order; MRR is computed over the whole ranking.
PER_K = ("R", "DivR", "mAP", "P", "nDCG")
NDCG_K = 5  # seed 004 reports nDCG@5; it is always included
EXAMPLES = 20  # names listed per problem kind in reports (all are counted)


@dataclass
class EvaluationReport:
    """Mean metrics per hop level, and what could not be scored.

    :param ks: the cut-offs.
    :param hops: the hop levels, e.g. ``(0, 1, 2, 3)``.
    :param scores: ``{hops: {"R@1": 0.41, "DivR@10": ..., "MRR": ...}}``, fractions in [0, 1].
    :param files_scored: files that count in the means.
    :param missing_rankings: truth files with no ranking (scored as empty rankings).
    :param unscored_rankings: ranked files that have no truth line (not scored).
    :param empty_truth: truth lines with no items (not scored: recall is undefined).
    :param unknown_truth_items: truth items the label set does not keep (None without one):
        no system restricted to the label set can predict them at hop 0.
    :param sources: what was scored, e.g. ``{"predictions": "p.jsonl", "truth": "t.jsonl"}``.
    """

    ks: Tuple[int, ...]
    hops: Tuple[int, ...]
    scores: Dict[int, Dict[str, float]]
    files_scored: int
    missing_rankings: List[str] = field(default_factory=list)
    unscored_rankings: List[str] = field(default_factory=list)
    empty_truth: List[str] = field(default_factory=list)
    unknown_truth_items: Optional[int] = None
    sources: Dict[str, str] = field(default_factory=dict)

    def notes(self) -> List[str]:
        """One line per thing a reader must know about the numbers."""
        lines = []
        for names, what in (
            (self.missing_rankings, "truth files had no prediction line and were scored as empty rankings"),
            (self.unscored_rankings, "predicted files have no truth line and were not scored"),
            (self.empty_truth, "truth lines have no items and were not scored"),
        ):
            if names:
                shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                lines.append(f"{len(names)} {what} ({shown})")
        if self.unknown_truth_items:
            lines.append(f"{self.unknown_truth_items} distinct truth item(s) are not kept in the label set")
        return lines

    def to_dict(self) -> Dict[str, Any]:
        """Plain data for ``--json``: fractions, counts, and up to 20 example names per list."""
        return {
            "files_scored": self.files_scored,
            "ks": list(self.ks),
            "hops": list(self.hops),
            "scores": {str(h): dict(values) for h, values in self.scores.items()},
            "missing_rankings": {"count": len(self.missing_rankings), "examples": self.missing_rankings[:EXAMPLES]},
            "unscored_rankings": {"count": len(self.unscored_rankings),
                                  "examples": self.unscored_rankings[:EXAMPLES]},
            "empty_truth": {"count": len(self.empty_truth), "examples": self.empty_truth[:EXAMPLES]},
            "unknown_truth_items": self.unknown_truth_items,
            "sources": dict(self.sources),
        }


def metric_names(ks: Sequence[int]) -> List[str]:
    """The keys of one hop level's scores, in output order."""
    names = [f"{metric}@{k}" for metric in PER_K for k in ks]
    if NDCG_K not in ks:
        names.append(f"nDCG@{NDCG_K}")
    names.append("MRR")
    return names


def memoize(ancestors_of: AncestorsOf) -> AncestorsOf:
    """Cache ``ancestors_of``: truth items repeat across files (*human* in most of them)."""
    cache: Dict[str, Mapping[str, int]] = {}

    def cached(qid: str) -> Mapping[str, int]:
        found = cache.get(qid)
        if found is None:
            found = cache[qid] = ancestors_of(qid)
        return found

    return cached


def score_rankings(
    rankings: Iterable[Tuple[str, Sequence[str]]],
    truth: Mapping[str, Sequence[str]],
    ks: Sequence[int] = DEFAULT_KS,
    hops: Sequence[int] = (0,),
    ancestors_of: Optional[AncestorsOf] = None,
) -> EvaluationReport:
    """Mean metrics of ``rankings`` against ``truth`` for every k and hop level.

    :param rankings: (file, ranked QIDs) pairs, streamed; each file at most once.
    :param truth: file -> truth QIDs.
    :param ks: cut-offs (positive integers).
    :param hops: hop levels in 0..3; any level above 0 needs ``ancestors_of``.
    :param ancestors_of: ``qid -> {ancestor: hops}`` (e.g. a label set's ``ancestors``).
    :raises UsageError: for bad ``ks``/``hops``, a file ranked twice, or no truth to score.
    """
    ks = _check_ks(ks)
    levels = _check_hops(hops, ancestors_of)
    names = metric_names(ks)
    extra_ndcg = NDCG_K not in ks
    lookup = memoize(ancestors_of) if ancestors_of is not None else None
    top_hop = max(levels)
    sums = [[0.0] * len(names) for _ in levels]
    seen: Set[str] = set()
    report = EvaluationReport(ks=ks, hops=levels, scores={}, files_scored=0)

    def add(ranking: Sequence[str], items: Sequence[str]) -> None:
        match = RankingMatch(ranking, items, lookup, max_hops=top_hop)
        for level_sums, level in zip(sums, levels):
            found = match.at(level)
            if not found.correct:
                continue  # every metric is 0: nothing to add
            values = found.values(ks)
            if extra_ndcg:
                values.insert(-1, found.ndcg(NDCG_K))  # before MRR, as in metric_names()
            for index, value in enumerate(values):
                level_sums[index] += value
        report.files_scored += 1

    for file, ranking in rankings:
        if file in seen:
            raise UsageError(f"file {file!r} is ranked twice")
        seen.add(file)
        items = truth.get(file)
        if items is None:
            report.unscored_rankings.append(file)
        elif not items:
            report.empty_truth.append(file)
        else:
            add(ranking, items)
    for file, items in truth.items():
        if file in seen:
            continue
        if not items:
            report.empty_truth.append(file)
        else:
            report.missing_rankings.append(file)
            add((), items)
    if not report.files_scored:
        raise UsageError("nothing to score: no truth line lists any items")
    for level_sums, level in zip(sums, levels):
        count = report.files_scored
        report.scores[level] = {name: total / count for name, total in zip(names, level_sums)}
    return report


def evaluate_files(
    predictions: Union[str, Path],
    truth: Union[str, Path],
    labels: Optional[Union[str, Path]] = None,
    ks: Sequence[int] = DEFAULT_KS,
    hops: Optional[Sequence[int]] = None,
) -> EvaluationReport:
    """Score a predictions JSONL file against a truth JSONL file (``wikivel-bot evaluate``).

    :param predictions: ranked output, one ``{"file", "items"}`` line per file.
    :param truth: ground truth in the same format.
    :param labels: label-set directory giving hop credit (``wikivel_bot.labels``).
    :param ks: cut-offs.
    :param hops: hop levels; default 0..3 with a label set, else 0 alone.
    :raises UsageError: for bad lines (file and line named) or hops without a label set.
    :raises LabelSetError: when ``labels`` is not a readable label set.
    """
    from wikivel_bot.evaluation.jsonl import read_records

    truth_records = read_records(truth)
    ranked = read_records(predictions)
    truth_items = {file: record.items for file, record in truth_records.items()}
    ancestors_of, unknown = None, None
    if labels is not None:
        ancestors_of, unknown = _label_set_lookup(labels, truth_items.values())
    if hops is None:
        hops = ALL_HOPS if ancestors_of is not None else (0,)
    report = score_rankings(((f, r.items) for f, r in ranked.items()), truth_items, ks, hops, ancestors_of)
    report.unknown_truth_items = unknown
    report.sources = {"predictions": str(predictions), "truth": str(truth)}
    if labels is not None:
        report.sources["labels"] = str(labels)
    return report


def _label_set_lookup(labels: Union[str, Path],
                      truth_items: Iterable[Sequence[str]]) -> Tuple[AncestorsOf, int]:
    # Imported here: the label set brings numpy and pyarrow, which plain scoring does not need.
    from wikivel_bot.labels import load_label_set

    label_set = load_label_set(labels)
    distinct = {item for items in truth_items for item in items}
    unknown = sum(1 for item in distinct if label_set.index_of(item) is None)

    def lookup(qid: str) -> Mapping[str, int]:
        return label_set.ancestors(qid, max(ALL_HOPS))

    return lookup, unknown


def _check_ks(ks: Sequence[int]) -> Tuple[int, ...]:
    values = tuple(sorted(set(int(k) for k in ks)))
    if not values or values[0] < 1:
        raise UsageError(f"cut-offs k must be positive integers, not {list(ks)}")
    return values


def _check_hops(hops: Sequence[int], ancestors_of: Optional[AncestorsOf]) -> Tuple[int, ...]:
    levels = tuple(sorted(set(int(h) for h in hops)))
    if not levels or levels[0] < 0 or levels[-1] > max(ALL_HOPS):
        raise UsageError(f"hop levels must be between 0 and {max(ALL_HOPS)}, not {list(hops)}")
    if levels[-1] > 0 and ancestors_of is None:
        raise UsageError(f"hop credit (hops {levels[-1]}) needs a label set: give --labels DIR")
    return levels
