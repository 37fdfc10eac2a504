"""Linking a batch of files: decode, search, add the file's evidence, apply the ranking rules,
build Candidates.

This is the library function behind every path that links (through
``factory.ReadyLinker.link``, which resolves the batch's evidence first). No database here:
the caller passes what the queue knows (rejected pairs) and the resolved evidence, and
stores the result. How the evidence joins the image's candidates: ``evidence_link``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot.config import LinkerSettings, SafetySettings
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.core.ranking import (
    RankedItem,
    Ranking,
    RankingRules,
    depicted_exclusions,
    rank_candidates,
)
from wikivel_bot.core.evidence import Evidence
from wikivel_bot.core.item_view import ItemGetter
from wikivel_bot.core.outside_items import WithOutsideItems
from wikivel_bot.core.safety import TIED, SafetyRules, rules_from
from wikivel_bot.errors import FileUnavailable, LinkerError
from wikivel_bot.linker.base import Linker, LinkerDescription, Query
from wikivel_bot.linker.backbone.images import MAX_PIXELS, decode_image
from wikivel_bot.linker.backbone.parallel_batches import run_units, units, worker_count
from wikivel_bot.linker.backbone.prefetch import prefetched_batches, safe_prepare
from wikivel_bot.linker.evidence_link import FileCandidates, annotate, candidate_sets
from wikivel_bot.linker.evidence_model import EvidenceModel
from wikivel_bot.linker.texts import file_text
from wikivel_bot.types import Candidate, MediaFile

if TYPE_CHECKING:
    from wikivel_bot.linker.backbone.encoders import InputSteps

# The linker returns more than top_k so that rule-based drops (depicted ancestors, rejected
# pairs, a suppressed ancestor per kept item) still leave top_k to propose.
OVERFETCH = 3
# With the safety rules on, named people and sensitive items are dropped too; they are a
# large share of a full label set (humans are its biggest super-category), so fetch more.
SAFETY_OVERFETCH = 2


@dataclass(frozen=True)
class Linked:
    """A file was linked: its candidates (possibly none), best first.

    :param media: the file.
    :param candidates: what to propose, ranks 1..n.
    :param ranking: the rules' full outcome, including dropped items and why.
    :param warnings: linker-level warnings that apply to every candidate (random weights...).
    :param evidence: the file's own evidence the candidates were made from (resolved, and
        category-label matches), so an output can say why an item it names was dropped.
    """

    media: MediaFile
    candidates: Tuple[Candidate, ...]
    ranking: Ranking
    warnings: Tuple[str, ...] = ()
    evidence: Tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class LinkFailed:
    """A file could not be linked (corrupt image, too large...); the batch went on without it."""

    media: MediaFile
    reason: str


LinkOutcome = Union[Linked, LinkFailed]


def rules_from_settings(
    settings: LinkerSettings, top_k: Optional[int] = None, safety: Optional[SafetySettings] = None
) -> RankingRules:
    """Ranking rules from ``LinkerSettings`` (``top_k`` overrides ``settings.top_k``).

    :param safety: ``Settings.safety``; None means its defaults, so a caller that forgets it
        still withholds named people.
    """
    return RankingRules(
        top_k=settings.top_k if top_k is None else top_k,
        min_score=settings.min_score,
        ancestor_margin=settings.ancestor_margin,
        blocklist=frozenset(settings.blocklist),
        safety=safety_rules(safety or SafetySettings()),
    )


def safety_rules(settings: SafetySettings) -> SafetyRules:
    """The pure safety rules (``core.safety``) from ``Settings.safety``."""
    return rules_from(settings)


def link_files(
    linker: Linker,
    files: Sequence[Tuple[MediaFile, Union[bytes, Any]]],
    *,
    rules: RankingRules,
    rejected: Optional[Mapping[int, AbstractSet[str]]] = None,
    max_pixels: int = MAX_PIXELS,
    finish: Optional[Callable[[Any], Any]] = None,
    workers: int = 0,
    evidence: Optional[Mapping[int, Sequence[Evidence]]] = None,
    items: Optional[Mapping[str, Any]] = None,
    evidence_model: Optional[EvidenceModel] = None,
    category_label_match: bool = False,
    item_getter: Optional[ItemGetter] = None,
) -> List[LinkOutcome]:
    """Link files to items of the linker's label set and to the items their evidence names.

    :param linker: a linker from ``create_linker`` with a label set attached.
    :param files: (file, thumbnail bytes) pairs; instead of bytes, an RGB ``PIL.Image``
        already decoded by :func:`~wikivel_bot.linker.backbone.images.decode_image`.
    :param rules: thresholds, margin, blocklist, top_k (see :func:`rules_from_settings`).
    :param rejected: QIDs reviewers rejected, per file page id.
    :param max_pixels: decompression bomb guard for the thumbnails.
    :param finish: turns a decoded image into the linker's query image (default: the
        linker's ``prepare_image``); the backfill passes :func:`model_input_steps`' ``finish``
        with images its CPU stage already resized and cropped.
    :param workers: batches linked at once, each on one thread with one torch thread
        (``parallel_batches``); 0 = what the linker offers (``concurrent_batches()``: the
        torch threads on CPU, else 1), 1 = one batch at a time over every torch thread with
        the next batch decoded in a pool.
    :param evidence: the files' own evidence by page id (``commons.evidence.EvidenceResolver``):
        its items join the image's candidates (see ``evidence_link``); None: image only.
    :param items: ``ItemInfo`` of the evidence items, by QID: those outside the label set are
        encoded on the fly, and their P31/P279 place them in the hierarchy.
    :param evidence_model: gives each candidate its calibrated probability (and the order).
    :param category_label_match: an unlinked category named exactly like one label-set item
        is ``category label`` evidence for it.
    :param item_getter: reads items on Wikidata (the client's ``get``): the safety rules walk
        the classes above an outside item through it where the label set's graph ends.
    :returns: one :class:`Linked` or :class:`LinkFailed` per input, in input order.
    :raises LinkerError: no label set attached, or the model itself failed (not per file).
    """
    label_set = linker.label_set
    if label_set is None:
        raise LinkerError("attach a label set to the linker before linking")
    rejected = rejected or {}
    description = linker.description
    outcomes: List[Optional[LinkOutcome]] = [None] * len(files)
    size = max(1, linker.batch_size)
    min_side = model_side(linker)
    # CLIP linkers also preprocess in the decode threads (their queries then carry the
    # model's input tensor instead of the PIL image).
    finish = finish or getattr(linker, "prepare_image", None) or (lambda image: image)

    def prepare(pair: Tuple[MediaFile, Any]) -> Any:
        # Bytes are decoded here; the backfill decodes in its own CPU stage (with
        # decode_image and model_side, so the pixels are the same) and passes the image.
        data = pair[1]
        if isinstance(data, (bytes, bytearray)):
            data = decode_image(bytes(data), max_pixels=max_pixels, min_side=min_side)
        return finish(data)

    def link_batch(start: int, prepared: Sequence[Any]) -> None:
        queries: List[Query] = []
        positions: List[int] = []
        for offset, image in enumerate(prepared):
            media = files[start + offset][0]
            if isinstance(image, FileUnavailable):
                outcomes[start + offset] = LinkFailed(media, str(image))
                continue
            queries.append(Query(media.title, image, _query_text(linker, media), _seed(media)))
            positions.append(start + offset)
        if not queries:
            return
        medias = [files[p][0] for p in positions]
        k = _fetch_k(medias, rejected, rules, label_set)
        details = getattr(linker, "search_details", None)
        if details is not None:
            # The cascade: per hit also α (image share) and the verifier's probability.
            detailed = details(queries, k)
            found = [[(h.position, h.score) for h in hits] for hits in detailed]
            extras = [{label_set.qids[h.position]: (h.alpha, h.probability) for h in hits} for hits in detailed]
        else:
            found = linker.search(queries, k)
            extras = [{} for _ in found]
        sets = candidate_sets(linker, queries, medias, found, label_set, rules.top_k, evidence, items,
                              category_label_match)
        # Outside items answer the ranking and safety rules from what Wikidata said of them.
        view = WithOutsideItems(label_set, items, item_getter) if items else label_set
        ranked = [_rank(media, one, view, rejected.get(media.page_id, frozenset()), rules, description)
                  for media, one in zip(medias, sets)]
        verify = getattr(linker, "probabilities", None)
        if verify is not None:
            # A configured verifier (linker.verifier) replaces any probability with its own.
            verified = verify(queries, medias, [[c.qid for c in linked.candidates] for linked in ranked])
            extras = [{qid: (extra.get(qid, (None, None))[0], p) for qid, p in probabilities.items()}
                      for extra, probabilities in zip(extras, verified)]
        for position, linked, extra, one in zip(positions, ranked, extras, sets):
            linked = _with_details(linked, extra) if extra else linked
            outcomes[position] = replace(linked, candidates=annotate(linked.candidates, one, evidence_model))

    # Batches at once (parallel_batches): the linker says how many it can take; a wrapper
    # that does not say (the cascade, a verifier) links one batch at a time.
    lanes = workers or getattr(linker, "concurrent_batches", lambda: 1)()
    lanes = worker_count(lanes, len(files)) if lanes > 1 else 1
    if lanes > 1:
        run_units(units(len(files), size, lanes), lanes,
                  lambda start, stop: link_batch(start, [safe_prepare(prepare, f) for f in files[start:stop]]))
    else:
        for start, prepared in prefetched_batches(files, size, prepare):
            link_batch(start, prepared)
    return [o for o in outcomes if o is not None]


def _query_text(linker: Linker, media: MediaFile) -> str:
    """The file text the linker reads: its own ``query_text`` (the cascade's) or the configured fields."""
    own = getattr(linker, "query_text", None)
    return own(media) if own is not None else file_text(media, linker.query_text_fields)


def _with_details(linked: Linked, extra: Mapping[str, Tuple[float, Optional[float]]]) -> Linked:
    """Candidates with α and the probability set, in the fields and in the evidence (stored with the row)."""
    out = []
    for c in linked.candidates:
        alpha, probability = extra.get(c.qid, (None, None))
        evidence = dict(c.evidence)
        if alpha is not None:
            evidence["alpha"] = alpha
        if probability is not None:
            evidence["probability"] = probability
        out.append(replace(c, alpha=alpha, probability=probability, evidence=evidence))
    return replace(linked, candidates=tuple(out))


def _rank(
    media: MediaFile,
    found: FileCandidates,
    label_set: LabelSetView,
    rejected_qids: AbstractSet[str],
    rules: RankingRules,
    description: LinkerDescription,
) -> Linked:
    depicted = [d.qid for d in media.depicts if d.rank != "deprecated"]
    # A deprecated depicts statement says the item is wrong for this file: never propose it.
    rejected_all = set(rejected_qids) | {d.qid for d in media.depicts if d.rank == "deprecated"}
    ranking = rank_candidates(found.scored, label_set, depicted=depicted, rejected=rejected_all, rules=rules,
                              evidence=found.evidence)
    warnings = tuple(description.warnings)
    candidates = tuple(
        Candidate(
            qid=item.qid,
            score=round(item.score, 6),
            rank=item.rank,
            linker=description.name,
            linker_version=description.version,
            labelset_hash=label_set.content_hash,
            evidence=_evidence(item, description, warnings),
        )
        for item in ranking.items
    )
    return Linked(media, candidates, ranking, warnings, tuple(found.evidence))


def _evidence(item: RankedItem, description: LinkerDescription, warnings: Tuple[str, ...]) -> Dict[str, object]:
    evidence: Dict[str, object] = {
        "label": item.label,
        "description": item.description,
        "notes": list(item.notes),
    }
    tied = [note for note in item.notes if note.startswith(TIED)]
    if tied:
        # A person or sensitive item is proposed only because the file's evidence names it.
        evidence["tied_by_evidence"] = tied[0]
    if description.random_weights:
        evidence["random_weights"] = True
    if description.checkpoint:
        evidence["checkpoint"] = description.checkpoint
    if warnings:
        evidence["warnings"] = list(warnings)
    return evidence


def _fetch_k(
    medias: Sequence[MediaFile],
    rejected: Mapping[int, AbstractSet[str]],
    rules: RankingRules,
    label_set: LabelSetView,
) -> int:
    excluded = 0
    for media in medias:
        depicted = [d.qid for d in media.depicts]
        dropped = len(depicted_exclusions(depicted, label_set, rules.max_hops))
        excluded = max(excluded, dropped + len(rejected.get(media.page_id, ())))
    overfetch = OVERFETCH * (SAFETY_OVERFETCH if rules.safety is not None else 1)
    return rules.top_k * overfetch + excluded + len(rules.blocklist)


def _seed(media: MediaFile) -> int:
    return media.page_id or zlib.crc32(media.title.encode("utf-8"))


def model_input_steps(linker: Linker) -> Optional["InputSteps"]:
    """The model's preprocessing in two steps (see ``encoders.input_steps``); None for
    linkers without an image backbone."""
    from wikivel_bot.linker.backbone.encoders import input_steps  # torch: only where a model runs

    backbone = getattr(linker, "backbone", None)
    return input_steps(backbone) if backbone is not None else None


def model_side(linker: Linker) -> Optional[int]:
    """The model's input side in pixels (JPEGs are decoded at the smallest scale above it)."""
    backbone = getattr(linker, "backbone", None)
    return backbone.image_size if backbone is not None else None
