"""Comparing one file's suggestions with the depicts statements humans gave it.

Pure functions: the ranked suggestions and the human items go in, a
:class:`~wikivel_bot.liveeval.records.FileResult` comes out. Hop credit is the one of
:mod:`wikivel_bot.core.metrics`: a suggestion stands for a human item ``g`` at hop ``n``
when it is ``g`` or an ancestor of ``g`` within ``n`` hops (P31 ∪ P279), never a
descendant. The writer's skip rules are asked through
:func:`wikivel_bot.core.edit_rules.plan_edit` on the file *with* its human statements, so
"would have been skipped" means exactly what the writer would do.

Worked example (``tests/test_liveeval_compare.py``), the hierarchy of ``core.metrics``::

    human     {Q146 house cat, Q144 dog}
    ranked    1 Q5 human, 2 Q729 animal, 3 Q144 dog, 4 Q7377 mammal, 5 Q146 house cat
    hops      Q5 None, Q729 2 (match Q144), Q144 0, Q7377 1 (match Q144), Q146 0
    found     Q144 -> [3, 3, 2, 2]; Q146 -> [5, 4, 2, 2]
    writer    Q144, Q146 already present; Q729, Q7377 more specific present; Q5 would write
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.edit_rules import plan_edit
from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.core.metrics import MAX_HOPS, AncestorsOf, RankingMatch
from wikivel_bot.liveeval.records import (
    ALREADY,
    HOP_LEVELS,
    MORE_SPECIFIC,
    PAGE,
    FileResult,
    RunInfo,
    Suggestion,
)
from wikivel_bot.types import MediaFile

CategoryOf = Callable[[str], str]


def human_items(media: MediaFile) -> Tuple[str, ...]:
    """The items humans say the file depicts: non-deprecated P180 values, sorted.

    A deprecated statement says the item is *wrong* for the file, so it is no ground truth.
    """
    return tuple(sorted({d.qid for d in media.depicts if d.rank != "deprecated"}))


def credit_map(truth: Iterable[str], ancestors_of: Optional[AncestorsOf],
               max_hops: int = MAX_HOPS) -> Dict[str, Dict[str, int]]:
    """``{qid: {human item: hops}}``: which human items a suggestion of ``qid`` stands for.

    :param truth: the human items.
    :param ancestors_of: ``qid -> {ancestor: hops}``; None gives exact matches only.
    :param max_hops: the deepest hop level credited.
    """
    credit: Dict[str, Dict[str, int]] = {}
    for item in sorted(set(truth)):
        credit.setdefault(item, {})[item] = 0
        if ancestors_of is None:
            continue
        for ancestor, hops in ancestors_of(item).items():
            if 0 < hops <= max_hops:
                slot = credit.setdefault(ancestor, {})
                if hops < slot.get(item, max_hops + 1):
                    slot[item] = hops
    return credit


def writer_verdict(media: Optional[MediaFile], qid: str, ancestors_of: AncestorsOf) -> Tuple[str, str]:
    """(kind, reason) of the writer's re-check for adding ``qid`` to ``media`` as it is.

    :param media: the file with its human statements (None: not known; nothing is said).
    :returns: ("", "") when the writer would write; else one of ``WRITER_KINDS`` and the
        writer's own reason.
    """
    if media is None:
        return "", ""
    plan = plan_edit(media, qid, ancestors_of)
    if plan.write:
        return "", ""
    # plan_edit checks the page first, then the item: classify in the same order.
    if not media.bots_allowed or media.protected:
        kind = PAGE
    elif qid in {d.qid for d in media.depicts}:
        kind = ALREADY
    else:
        kind = MORE_SPECIFIC
    return kind, plan.reason or ""


def compare(
    file: str,
    ranked: Sequence[Tuple[str, float]],
    truth: Iterable[str],
    ancestors_of: Optional[AncestorsOf],
    *,
    media: Optional[MediaFile] = None,
    category_of: Optional[CategoryOf] = None,
    label_of: Optional[Callable[[str], str]] = None,
    known: Optional[Callable[[str], bool]] = None,
    run: Optional[RunInfo] = None,
    probabilities: Optional[Mapping[str, Optional[float]]] = None,
    evidence: Optional[Mapping[str, Mapping[str, Any]]] = None,
    **details: Any,
) -> FileResult:
    """Compare ranked suggestions with the human items of one file.

    :param file: the file's MediaInfo id (``M123``).
    :param ranked: (qid, score) pairs, best first (as the linker ranked them).
    :param truth: the human items (not empty).
    :param ancestors_of: ``qid -> {ancestor: hops}`` over P31 ∪ P279 (the label set's).
    :param media: the file with its human statements, for the writer's verdicts.
    :param category_of: super-category of an item ("" when unknown).
    :param label_of: label of an item, stored for reports.
    :param known: whether the label set keeps an item (for ``truth_unknown``).
    :param run: the run's provenance.
    :param probabilities: a verifier's match probability per suggested QID (cascade).
    :param evidence: each suggested QID's stored evidence (``Candidate.evidence``), read
        with :func:`~wikivel_bot.core.evidence_view.shown_evidence`; missing: image only.
    :param details: ``title``, ``uploaded``, ``page_url``, ``thumb_url`` as stored.
    :raises ValueError: when ``truth`` is empty.
    """
    human = tuple(sorted(set(truth)))
    if not human:
        raise ValueError(f"{file}: no human items to compare with")
    credit = credit_map(human, ancestors_of)
    lookup = ancestors_of or (lambda qid: {})
    suggestions: List[Suggestion] = []
    for rank, (qid, score) in enumerate(ranked, start=1):
        matches = credit.get(qid, {})
        hop: Optional[int] = None
        match = ""
        if matches:
            match, hop = min(matches.items(), key=lambda kv: (kv[1], kv[0]))
        kind, reason = writer_verdict(media, qid, lookup)
        shown = shown_evidence((evidence or {}).get(qid))
        suggestions.append(Suggestion(
            rank=rank, qid=qid, score=round(float(score), 6), label=label_of(qid) if label_of else "",
            category=category_of(qid) if category_of else "", hop=hop, match=match, writer=kind,
            writer_reason=reason, probability=(probabilities or {}).get(qid),
            evidence_kind=shown.kind, evidence=shown.texts,
        ))
    qids = [s.qid for s in suggestions]
    matcher = RankingMatch(qids, human, ancestors_of, max_hops=MAX_HOPS if ancestors_of else 0)
    hits = {}
    for level in HOP_LEVELS:
        found = matcher.at(level)
        hits[level] = (found.correct, found.credited)
    return FileResult(
        file=file,
        truth=human,
        suggestions=tuple(suggestions),
        hits=hits,
        found=_found(suggestions, credit, human),
        truth_categories={q: category_of(q) for q in human} if category_of else {},
        truth_labels={q: label_of(q) or "" for q in human} if label_of else {},
        truth_unknown=tuple(q for q in human if known is not None and not known(q)),
        run=run or RunInfo(),
        **details,
    )


def _found(suggestions: Sequence[Suggestion], credit: Mapping[str, Mapping[str, int]],
           human: Sequence[str]) -> Dict[str, Tuple[Optional[int], ...]]:
    first: Dict[str, List[Optional[int]]] = {q: [None] * len(HOP_LEVELS) for q in human}
    seen = set()
    for s in suggestions:
        if s.qid in seen:  # a repeat is never correct again (as in core.metrics)
            continue
        seen.add(s.qid)
        for item, hops in credit.get(s.qid, {}).items():
            for level in HOP_LEVELS:
                if hops <= level and first[item][level] is None:
                    first[item][level] = s.rank
    return {q: tuple(ranks) for q, ranks in first.items()}
