"""Hierarchy-aware ranking of a linker's raw scores: what may be proposed for a file, in order.

Pure functions over :class:`~wikivel_bot.core.labelset.LabelSetView`; no numpy, no torch, so
the same rules run in the linker, in the review tools and in tests. The rules, in the order
they are applied (each drop records its reason):

1. never propose what the file already depicts, nor an ancestor of it (Commons:Depicts asks
   for the most specific item; an ancestor adds nothing once the specific one is there);
2. never propose a (file, item) pair a reviewer rejected;
3. never propose an item on the operator's blocklist;
4. drop scores below the item's own threshold, else the global one;
4a. withhold what the safety rules (``core/safety.py``) withhold: named people and items
   of sensitive classes unless the file's evidence ties the file to them, blocked classes
   always; an item so tied carries the note "tied to the file by its evidence: …";
5. when an item and one of its ancestors both survive, keep the specific one unless the
   ancestor scores clearly higher (by at least ``ancestor_margin``); the loser is dropped
   and the winner carries a note naming it. An item the file's own evidence names
   (``core.evidence``: a linked category, a description link, an identifier) replaces a
   more general candidate whatever their scores: the file says which instance it shows;
6. keep the ``top_k`` best of the candidates the image alone proposed; the items the file's
   evidence names are kept besides them (a file names a handful), in score order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import (
    AbstractSet,
    Any,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    cast,
)

from wikivel_bot.core.classes import SafetyUnchecked
from wikivel_bot.core.evidence import EvidenceLike, Evidence
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.core.safety import UNCHECKED, SafetyRules, Verdict, check_item


@dataclass(frozen=True)
class RankingRules:
    """The knobs of :func:`rank_candidates` (built from ``LinkerSettings`` by the linker).

    :param top_k: candidates kept per file.
    :param min_score: global threshold; scores below it are dropped.
    :param item_min_score: per-item thresholds that override ``min_score`` for that item.
    :param ancestor_margin: an ancestor is kept over a more specific item only when it
        scores at least this much higher.
    :param blocklist: items never proposed.
    :param max_hops: how far up the P31 ∪ P279 hierarchy "ancestor" reaches.
    :param safety: the safety rules; None applies none (evaluation on a test split does not
        want them; the linker's :func:`~wikivel_bot.linker.link.rules_from_settings` sets them).
    """

    top_k: int = 10
    min_score: float = 0.0
    item_min_score: Mapping[str, float] = field(default_factory=dict)
    ancestor_margin: float = 0.05
    blocklist: FrozenSet[str] = frozenset()
    max_hops: int = 3
    safety: Optional[SafetyRules] = None


@dataclass(frozen=True)
class RankedItem:
    """One candidate that survived the rules.

    ``notes`` say which rules touched it, e.g. ``"ancestor Q729 (animal) suppressed"``.
    """

    qid: str
    label: str
    description: str
    score: float
    rank: int
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class DroppedItem:
    """A scored item a rule removed, and why (for evidence and debugging).

    ``rule`` names the safety rule that withheld it (``core.safety.RULES``), "" for others.
    """

    qid: str
    score: float
    reason: str
    rule: str = ""


@dataclass(frozen=True)
class Ranking:
    """The outcome for one file: kept items best first, and every rule-based drop.

    ``withheld`` are the safety drops that would otherwise have been suggested (they score at
    least as high as the last kept item, or fewer than ``top_k`` were kept): what the bot
    chose not to say, as outputs and counters report it.
    """

    items: Tuple[RankedItem, ...]
    dropped: Tuple[DroppedItem, ...] = ()
    withheld: Tuple[DroppedItem, ...] = ()

    def withheld_by_rule(self) -> Dict[str, int]:
        """{safety rule: withheld suggestions} of this file."""
        counts: Dict[str, int] = {}
        for item in self.withheld:
            counts[item.rule] = counts.get(item.rule, 0) + 1
        return counts

    def dropped_reason(self, qid: str) -> Optional[str]:
        """Why ``qid`` was dropped, or None when it was not."""
        for item in self.dropped:
            if item.qid == qid:
                return item.reason
        return None


def describe_item(labels: LabelSetView, qid: str) -> Tuple[str, str]:
    """(label, description) of ``qid`` in the set; empty strings for items it does not keep."""
    position = labels.index_of(qid)
    if position is None:
        # An item the file's evidence brought from outside the set (core.outside_items).
        outside = getattr(labels, "describe_outside", None)
        return outside(qid) if outside is not None else ("", "")
    return labels.labels[position], labels.descriptions[position]


def _named(labels: LabelSetView, qid: str) -> str:
    label, _ = describe_item(labels, qid)
    return f"{qid} ({label})" if label else qid


def depicted_exclusions(
    depicted: Iterable[str], labels: LabelSetView, max_hops: int = 3
) -> Dict[str, str]:
    """Items excluded because the file depicts them or something more specific.

    :param depicted: QIDs of the file's existing (non-deprecated) depicts statements.
    :param labels: the label set that knows the hierarchy.
    :param max_hops: ancestor reach.
    :returns: {qid: reason}; the item itself wins over "ancestor of" when both apply.
    """
    excluded: Dict[str, str] = {}
    depicted = list(depicted)
    for qid in depicted:
        for ancestor, hops in sorted(labels.ancestors(qid, max_hops).items(), key=lambda kv: kv[1]):
            excluded.setdefault(ancestor, f"ancestor of depicted {_named(labels, qid)}")
    for qid in depicted:
        excluded[qid] = "already depicted"
    return excluded


def rank_candidates(
    scored: Iterable[Tuple[str, float]],
    labels: LabelSetView,
    *,
    depicted: Iterable[str] = (),
    rejected: AbstractSet[str] = frozenset(),
    rules: RankingRules = RankingRules(),
    evidence: Iterable[EvidenceLike] = (),
) -> Ranking:
    """Apply the ranking rules (module docstring) to a linker's raw scores for one file.

    :param scored: (qid, score) pairs in any order; a repeated qid keeps its best score.
    :param labels: label set giving labels, descriptions and ancestors.
    :param depicted: QIDs the file already depicts (deprecated statements belong in
        ``rejected`` instead: they say the item is wrong, not that it is covered).
    :param rejected: QIDs reviewers rejected for this file.
    :param rules: thresholds, margin, blocklist, safety rules and how many to keep.
    :param evidence: the file's own evidence (``core.evidence.Evidence`` or its stored
        dicts), for any items: what ties the file to a person (the safety rules), which
        items replace a more general candidate and are kept besides the ``top_k``.
    :returns: the kept items ranked 1..n (n ≤ ``rules.top_k`` plus the items the evidence
        names) and the dropped ones.
    """
    best: Dict[str, float] = {}
    for qid, score in scored:
        score = float(score)
        if qid not in best or score > best[qid]:
            best[qid] = score
    # Descending score, then QID so equal scores rank the same way on every run.
    ordered = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))

    dropped: List[DroppedItem] = []
    excluded = depicted_exclusions(depicted, labels, rules.max_hops)
    survivors: List[Tuple[str, float]] = []
    withheld: List[DroppedItem] = []
    safety_notes: Dict[str, str] = {}
    found = tuple(ev if isinstance(ev, Evidence) else Evidence.from_dict(ev) for ev in evidence)
    named = frozenset(ev.qid for ev in found)
    if rules.safety is not None:
        # The safety rules and the hierarchy step ask for the same ancestors: look each up once.
        labels = cast(LabelSetView, _AncestorMemo(labels))
    for qid, score in ordered:
        reason = _exclusion_reason(qid, score, excluded, rejected, rules)
        # Every item passes the safety rules, also one dropped for another reason (below the
        # threshold, rejected): its drop then carries the rule, so no output names a withheld
        # person or sensitive item as an ordinary drop (`suggest --json` lists ordinary drops;
        # only --show-withheld names the rest). It is not counted as withheld: it would not have
        # been suggested anyway.
        verdict = _safety_verdict(labels, qid, found, rules.safety) if rules.safety is not None else None
        if verdict is not None and verdict.withheld:
            if reason is None:
                withheld.append(DroppedItem(qid, score, verdict.reason, verdict.rule))
                dropped.append(withheld[-1])
            else:
                dropped.append(DroppedItem(qid, score, f"{reason}; {verdict.reason}", verdict.rule))
            continue
        if reason is None and verdict is not None and verdict.rule:
            safety_notes[qid] = verdict.reason
        if reason is None:
            survivors.append((qid, score))
        else:
            dropped.append(DroppedItem(qid, score, reason))

    kept, notes, hierarchy_drops = _resolve_hierarchy(survivors, labels, rules, named)
    dropped.extend(hierarchy_drops)

    # top_k bounds the image's own guesses; the items the evidence names come besides them.
    image_only = [pair for pair in kept if pair[0] not in named][: max(rules.top_k, 0)]
    top = [pair for pair in kept if pair[0] in named or pair in image_only]
    items = []
    for rank, (qid, score) in enumerate(top, start=1):
        label, description = describe_item(labels, qid)
        own = (safety_notes[qid],) if qid in safety_notes else ()
        items.append(RankedItem(qid, label, description, score, rank, own + tuple(notes.get(qid, ()))))
    # A withheld item counts when it would have been suggested: it scores at least as high as
    # the last suggestion, or there was room for it.
    # Items the evidence names would have been suggested at any score.
    cutoff = image_only[-1][1] if image_only and len(image_only) >= rules.top_k else float("-inf")
    counted = tuple(w for w in withheld if w.score >= cutoff or w.qid in named) if rules.top_k > 0 else ()
    return Ranking(tuple(items), tuple(dropped), counted)


def _safety_verdict(labels: LabelSetView, qid: str, evidence: Sequence[Evidence], rules: SafetyRules) -> Verdict:
    """The safety rules' verdict; an item whose classes could not all be read (an item from
    outside the label set, walked up on Wikidata) is withheld, never suggested unchecked."""
    try:
        return check_item(labels, qid, evidence, rules)
    except SafetyUnchecked as exc:
        return Verdict(UNCHECKED, True, f"{UNCHECKED}: the safety rules could not check {qid}: {exc}")


class _AncestorMemo:
    """A label set whose ``ancestors`` answers are remembered for one ranking."""

    def __init__(self, labels: LabelSetView) -> None:
        self._labels = labels
        self._ancestors: Dict[Tuple[str, int], Mapping[str, int]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._labels, name)

    def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]:
        key = (qid, max_hops)
        if key not in self._ancestors:
            self._ancestors[key] = self._labels.ancestors(qid, max_hops)
        return self._ancestors[key]


def _exclusion_reason(
    qid: str,
    score: float,
    excluded: Mapping[str, str],
    rejected: AbstractSet[str],
    rules: RankingRules,
) -> Optional[str]:
    if qid in excluded:
        return excluded[qid]
    if qid in rejected:
        return "rejected by a reviewer for this file"
    if qid in rules.blocklist:
        return "on the operator's blocklist"
    if qid in rules.item_min_score:
        threshold = rules.item_min_score[qid]
        if score < threshold:
            return f"score {score:.3f} below the item's threshold {threshold:.3f}"
    elif score < rules.min_score:
        return f"score {score:.3f} below the threshold {rules.min_score:.3f}"
    return None


def _resolve_hierarchy(
    survivors: List[Tuple[str, float]], labels: LabelSetView, rules: RankingRules,
    named: AbstractSet[str] = frozenset(),
) -> Tuple[List[Tuple[str, float]], Dict[str, List[str]], List[DroppedItem]]:
    """Greedy pass in descending score: each newcomer is compared with the items kept so far.

    A newcomer that is an ancestor of a kept item always loses (it scores no higher, so it
    cannot be "clearly higher"). A newcomer that is more specific than kept items wins unless
    one of those ancestors beats it by the margin — except a newcomer in ``named`` (the
    file's evidence names it), which always wins; when it wins, those ancestors are dropped.
    """
    kept: List[Tuple[str, float]] = []
    notes: Dict[str, List[str]] = {}
    dropped: List[DroppedItem] = []
    ancestors_of: Dict[str, Mapping[str, int]] = {}

    def ancestors(qid: str) -> Mapping[str, int]:
        if qid not in ancestors_of:
            ancestors_of[qid] = labels.ancestors(qid, rules.max_hops)
        return ancestors_of[qid]

    for qid, score in survivors:
        kept_qids = [k for k, _ in kept]
        specific = [k for k in kept_qids if qid in ancestors(k)]
        if specific:
            winner = specific[0]
            dropped.append(DroppedItem(qid, score, f"ancestor of {_named(labels, winner)}, which is more specific"))
            notes.setdefault(winner, []).append(f"ancestor {_named(labels, qid)} suppressed")
            continue
        my_ancestors = ancestors(qid)
        general = [(k, s) for k, s in kept if k in my_ancestors]
        clearly_higher = [] if qid in named else [(k, s) for k, s in general if s >= score + rules.ancestor_margin]
        if clearly_higher:
            winner, winner_score = clearly_higher[0]
            dropped.append(
                DroppedItem(
                    qid,
                    score,
                    f"more specific than {_named(labels, winner)}, which scores clearly higher "
                    f"(+{winner_score - score:.3f} >= margin {rules.ancestor_margin:.3f})",
                )
            )
            notes.setdefault(winner, []).append(f"kept over more specific {_named(labels, qid)}")
            continue
        for k, s in general:
            kept.remove((k, s))
            dropped.append(DroppedItem(k, s, f"ancestor of {_named(labels, qid)}, which is more specific"))
            notes.setdefault(qid, []).append(f"ancestor {_named(labels, k)} suppressed")
            # What the loser had suppressed is more general still: the winner inherits it.
            notes.setdefault(qid, []).extend(notes.pop(k, []))
        kept.append((qid, score))
    return kept, notes, dropped
