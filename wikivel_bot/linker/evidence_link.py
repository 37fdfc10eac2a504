"""Commons' own evidence in the linking of a batch: the candidate set, scores and what each carries.

``link.link_files`` calls this between the image's search and the ranking rules:

1. **the file's evidence** — what the resolver found (``commons.evidence``: linked
   categories, description links, identifiers), plus, with ``evidence.category_label_match``,
   an unlinked category named exactly like one label-set item (``core.evidence
   .category_label_evidence``, kind ``category label``);
2. **the candidate set** — the image's top-k over the label set ∪ every item the evidence
   names. An evidence item in the label set that the image's top-k missed gets its score from
   the linker (``score_items``: the score ``search`` gives); an item outside the label set is
   encoded on the fly from its label and description (the item-text template the index uses)
   and, where the item side reads images, its P18 (``score_outside``), and scored the same
   way. An outside item nothing could be read of (deleted) cannot be scored and is left out;
3. after the ranking rules (``core.ranking``: a present or more specific item wins, an
   evidence item replaces a more general image candidate, safety on evidence), each
   candidate's ``evidence`` gets ``sources`` (``Evidence.as_dict``), ``evidence_kind`` (the
   report bucket), ``visual_score``, ``best_visual_score`` (the best over the candidate set
   *before* the rules), ``in_label_set`` and ``image_rank`` (its rank in the image's top-k,
   None when the image alone did not propose it);
4. with an evidence model (``linker.evidence_model``, :mod:`~wikivel_bot.linker.evidence_model`),
   ``probability`` is its calibrated probability from :func:`~wikivel_bot.linker.evidence_model
   .served_features` of that stored evidence (the function the training records use), and
   the file's candidates are ranked by it; without one,
   probabilities are what the linker gave (a verifier's, the cascade's) and the order is by score.

The cascade's ``score_items`` runs its pair model over the evidence items, so they get the
re-ranked score its own candidates get (the cascade's α and verifier probability are given
for its own top-k only).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.evidence import Evidence, category_label_evidence, evidence_for, kind_bucket
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.linker.base import Query
from wikivel_bot.linker.evidence_model import EvidenceModel, served_features
from wikivel_bot.types import Candidate, MediaFile


@dataclass(frozen=True)
class FileCandidates:
    """One file's candidate set before the ranking rules.

    :param scored: (qid, visual score) of every candidate: the image's hits, then the
        evidence items the hits lacked.
    :param image_ranks: {qid: 1-based rank} of the image's top ``top_k`` over the label set.
    :param evidence: the file's evidence (resolved, and category-label matches).
    :param outside: the candidates from outside the label set.
    """

    scored: Tuple[Tuple[str, float], ...]
    image_ranks: Mapping[str, int]
    evidence: Tuple[Evidence, ...] = ()
    outside: frozenset = frozenset()


def candidate_sets(
    linker: Any,
    queries: Sequence[Query],
    medias: Sequence[MediaFile],
    hits: Sequence[Sequence[Tuple[int, float]]],
    label_set: LabelSetView,
    top_k: int,
    evidence: Optional[Mapping[int, Sequence[Evidence]]] = None,
    items: Optional[Mapping[str, Any]] = None,
    category_label_match: bool = False,
) -> List[FileCandidates]:
    """The candidate set of each file (module docstring, steps 1 and 2).

    :param hits: per file, the image's (label-set position, score), best first.
    :param top_k: how many of the hits count as the image's own top-k (``image_ranks``).
    :param evidence: {page id: evidence} from the resolver; None or missing: none.
    :param items: {qid: ItemInfo} of evidence items (those outside the label set are encoded).
    :param category_label_match: add ``category label`` evidence from unlinked categories.
    """
    qids = label_set.qids
    items = items or {}
    names = exact_names(label_set) if category_label_match else {}
    found: List[Tuple[Evidence, ...]] = []
    for media in medias:
        own = tuple((evidence or {}).get(media.page_id, ()))
        if category_label_match and media.categories:
            own += category_label_evidence(media.categories, names, own)
        found.append(own)
    image = [[(qids[i], float(s)) for i, s in row] for row in hits]
    missing_in: List[List[int]] = []   # per file: label-set positions the hits lacked
    missing_out: List[List[Any]] = []  # per file: outside items (ItemInfo) to encode
    for row, own in zip(image, found):
        seen = {q for q, _ in row}
        named = [q for q in dict.fromkeys(ev.qid for ev in own) if q not in seen]
        inside = [label_set.index_of(q) for q in named]
        missing_in.append([p for p in inside if p is not None])
        missing_out.append([items[q] for q, p in zip(named, inside) if p is None and q in items])
    score_items = getattr(linker, "score_items", None)
    score_outside = getattr(linker, "score_outside", None)
    in_scores = score_items(queries, missing_in) if score_items is not None and any(missing_in) else None
    out_scores = score_outside(queries, missing_out) if score_outside is not None and any(missing_out) else None
    out: List[FileCandidates] = []
    for n, (row, own) in enumerate(zip(image, found)):
        scored = list(row)
        if in_scores is not None:
            scored += [(qids[p], float(s)) for p, s in zip(missing_in[n], in_scores[n])]
        outside = frozenset(i.qid for i in missing_out[n]) if out_scores is not None else frozenset()
        if out_scores is not None:
            scored += [(i.qid, float(s)) for i, s in zip(missing_out[n], out_scores[n])]
        ranks = {q: r for r, (q, _) in enumerate(row[:max(top_k, 0)], 1)}
        out.append(FileCandidates(tuple(scored), ranks, own, outside))
    return out


def annotate(candidates: Sequence[Candidate], found: FileCandidates, model: Optional[EvidenceModel] = None
             ) -> Tuple[Candidate, ...]:
    """The ranked candidates with their evidence (step 3) and, with a model, its probability,
    ranked by it (step 4)."""
    scores = dict(found.scored)
    chosen = [q for q, _ in found.scored if q in found.image_ranks or any(ev.qid == q for ev in found.evidence)]
    best = max((scores[q] for q in chosen), default=0.0)
    out = []
    for c in candidates:
        sources = evidence_for(c.qid, found.evidence)
        visual = scores.get(c.qid, c.score)
        evidence: Dict[str, Any] = dict(c.evidence)
        evidence.update({
            "sources": [ev.as_dict() for ev in sources],
            "evidence_kind": kind_bucket(sources),
            "visual_score": round(visual, 6),
            # Stored, so the training records read the very best the probability used.
            "best_visual_score": round(best, 6),
            "in_label_set": c.qid not in found.outside,
            "image_rank": found.image_ranks.get(c.qid),
        })
        probability = c.probability
        if model is not None:
            probability = round(model.probability(served_features(evidence)), 4)
            evidence["probability"] = probability
            evidence["evidence_model"] = model.version[:12]
        out.append(replace(c, probability=probability, evidence=evidence))
    if model is not None:
        # The model's probability combines the image and the evidence: rank by it (ties: score, QID).
        out.sort(key=lambda c: (-(c.probability or 0.0), -c.score, c.qid))
        out = [replace(c, rank=rank) for rank, c in enumerate(out, 1)]
    return tuple(out)


# Exact names of a label set's items, built once per label set for the category-label match.
_NAMES: "weakref.WeakKeyDictionary[Any, Dict[str, List[str]]]" = weakref.WeakKeyDictionary()
_NAMES_LOCK = threading.Lock()


def exact_names(label_set: LabelSetView) -> Mapping[str, Sequence[str]]:
    """{label or alias: [items]} of the label set (aliases when it stores them), built on first
    use and kept while the label set lives (one pass; a full set holds millions of names)."""
    with _NAMES_LOCK:
        try:
            cached = _NAMES.get(label_set)
        except TypeError:  # not weakly referable: build every time (small test sets)
            cached = None
        if cached is not None:
            return cached
        names: Dict[str, List[str]] = {}
        aliases_of = getattr(label_set, "aliases_of", None)
        for qid, label in zip(label_set.qids, label_set.labels):
            for name in (label, *(aliases_of(qid) if aliases_of is not None else ())):
                if name:
                    names.setdefault(name, []).append(qid)
        try:
            _NAMES[label_set] = names
        except TypeError:
            pass
        return names
