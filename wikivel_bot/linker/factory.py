"""The one factory: settings in, a ready linker out.

* :func:`build_ready_linker` — the whole Settings in; the linker with its item images, cascade
  settings and verifier, attached to the label set, the ranking and safety rules to link
  with, and the file's own evidence (where to resolve it, the evidence model). Every path that
  links (daemon, ``suggest``, ``link``, ``evaluate``, ``evaluate-live``, the backfill's driver
  and actors) gets its linker here and nowhere else, and links with :meth:`ReadyLinker.link`.
  Its version ends in ``setup:<hash>``, a hash of everything else that changes what it ranks
  (docs/architecture.md).
* :func:`create_linker` — the low-level factory below it: a variant's name and its
  ``LinkerSettings`` in, a :class:`Linker` out.

As in open_clip's ``factory.py``, this is the only module that imports the implementations
(``clip``, ``baselines``, the ``cascade`` sub-room); they import only the spec below them
(:mod:`wikivel_bot.linker.spec`), never this module, so the linker room has no import circle.
The implementations are imported when a linker of their kind is built, so building a baseline
(or importing this module) does not import torch. Item images and the evidence resolver come from
``commons/`` (which this room may not import): the caller passes where to get them, an
:data:`ItemImageSource` and an :data:`EvidenceSource`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Collection, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from wikivel_bot.config import CascadeSettings, LinkerSettings, Settings
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.core.ranking import RankingRules
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.base import IndexInfo, ItemImageLoader, Linker, LinkerDescription, LinkerWrapper
from wikivel_bot.linker.spec import LinkerSpec, get_spec
from wikivel_bot.types import MediaFile

if TYPE_CHECKING:
    from wikivel_bot.core.evidence import Evidence
    from wikivel_bot.linker.evidence_model import EvidenceModel
    from wikivel_bot.linker.link import LinkOutcome


def create_linker(
    name: Optional[str] = None,
    settings: Optional[LinkerSettings] = None,
    *,
    item_image_loader: Optional[ItemImageLoader] = None,
    cascade: Optional[CascadeSettings] = None,
) -> Linker:
    """Build a linker by registry name; call ``attach(label_set, cache_dir)`` before searching.

    The low-level factory: a path that links files builds with :func:`build_ready_linker`,
    which calls this with the item images, cascade settings and rules of the whole Settings.

    :param name: a name from :func:`~wikivel_bot.linker.spec.list_linkers`; None means ``settings.name``.
    :param settings: model, weights (tag, local file or ``random``), checkpoint, device,
        threads and batch size; defaults when None.
    :param item_image_loader: where the fusion and cascade linkers get item images (P18);
        without one their item side is text only (the index manifest says so). A verifier
        gets it when its checkpoint was fitted with item images (without one it warns).
    :param cascade: the cascade linker's settings (candidates K...); defaults when None.
    :returns: with ``settings.verifier`` set, the linker wrapped in a
        :class:`~wikivel_bot.linker.cascade.verifier.VerifiedLinker` (its suggestions carry a probability).
    :raises UsageError: unknown name.
    :raises LinkerError: weights missing or unreachable, a bad checkpoint or verifier, a bad device.
    """
    settings = settings or LinkerSettings()
    linker = _create(get_spec(name or settings.name), settings, item_image_loader, cascade)
    if not settings.verifier:
        return linker
    from wikivel_bot.linker.cascade.verifier import VerifiedLinker, load_verifier

    verifier = load_verifier(settings.verifier, settings, inner=linker, item_image_loader=item_image_loader)
    return VerifiedLinker(linker, verifier)


def _create(spec: LinkerSpec, settings: LinkerSettings, item_image_loader: Optional[ItemImageLoader],
            cascade: Optional[CascadeSettings]) -> Linker:
    if spec.kind == "baseline":
        from wikivel_bot.linker.baselines import FrequencyLinker

        return FrequencyLinker(spec, settings)
    if spec.kind == "cascade":
        from wikivel_bot.linker.cascade.linker import build_cascade_linker

        return build_cascade_linker(spec, settings, cascade, item_image_loader=item_image_loader)
    from wikivel_bot.linker.clip import build_clip_linker

    return build_clip_linker(spec, settings, item_image_loader=item_image_loader)


# -- the ready linker: the one way every path gets one -----------------------------------------

# Where the ready linker gets item images (P18) when some part reads them: called at most once,
# and only then, so a path whose linker reads none never opens the wiki. The loader it returns
# names its source in ``cache_id`` (``item-images:320px``), which goes into the set-up hash.
ItemImageSource = Callable[[], ItemImageLoader]


class EvidenceResolving(Protocol):
    """What resolves a batch's evidence (``commons.evidence.EvidenceResolver``)."""

    def resolve(self, files: Sequence[MediaFile]) -> Tuple[Mapping[int, Sequence["Evidence"]], Mapping[str, Any]]:
        """({page id: evidence}, {qid: ItemInfo of the items it names})."""


# Where the ready linker gets its evidence resolver (``commons.providers.evidence_source``):
# called at the first batch, so a path that links nothing never opens the wiki; the caller
# builds it from ``Settings.evidence`` (None when it is switched off).
EvidenceSource = Callable[[], EvidenceResolving]


@dataclass(frozen=True)
class ReadyLinker:
    """A linker built from the whole Settings, with the ranking and safety rules to link with.

    :param linker: the linker (a :class:`SetUpLinker`: its version ends in ``setup:<hash>``).
    :param rules: top_k, min_score, ancestor margin, blocklist and the operator's safety rules.
    :param index: what ``attach`` did (None when no label set was given to attach).
    :param setup: the resolved set-up the version's hash is taken over (plain data).
    :param evidence: where the batch's evidence is resolved; None: image only.
    :param evidence_model: the calibrated evidence model (``linker.evidence_model``), or None.
    :param category_label_match: unlinked categories named like one item are evidence for it.
    """

    linker: Linker
    rules: RankingRules
    index: Optional[IndexInfo]
    setup: Mapping[str, Any]
    evidence: Optional[EvidenceSource] = None
    evidence_model: Optional["EvidenceModel"] = None
    category_label_match: bool = False
    # When a learned checkpoint's operating threshold replaced linker.min_score in ``rules``:
    # that threshold and the checkpoint (None, "": linker.min_score applies). Outputs that
    # dropped everything say which threshold did it, since the setting the operator reads
    # is then not the one in use.
    operating_threshold: Optional[float] = None
    operating_checkpoint: str = ""

    @property
    def description(self) -> LinkerDescription:
        """The linker's description, as recorded in every candidate row (``linker_version``)."""
        return self.linker.description

    def link(self, files: Sequence[Tuple[MediaFile, Any]], rejected: Optional[Mapping[int, AbstractSet[str]]] = None,
             **options: Any) -> List["LinkOutcome"]:
        """Link a batch as every path does: resolve the files' own evidence (categories,
        description links, identifiers), then ``link.link_files`` with the rules, the evidence,
        its items and the evidence model. ``options`` go to ``link_files`` (``finish``,
        ``workers``, ``max_pixels``).

        :raises WikiError: the evidence could not be resolved (nothing is linked: the batch
            is tried again, rather than linked without its evidence for good).
        """
        from wikivel_bot.linker.link import link_files

        found: Mapping[int, Sequence[Any]] = {}
        items: Mapping[str, Any] = {}
        getter = None
        # A batch without categories or references (local images) never opens the wiki.
        if self.evidence is not None and any(media.categories or media.references for media, _ in files):
            resolver = self.evidence()
            found, items = resolver.resolve([media for media, _ in files])
            getter = getattr(getattr(resolver, "wikidata", None), "get", None)
        return link_files(self.linker, files, rules=self.rules, rejected=rejected, evidence=found, items=items,
                          evidence_model=self.evidence_model, category_label_match=self.category_label_match,
                          item_getter=getter, **options)


def build_ready_linker(
    settings: Settings,
    label_set: Optional[LabelSetView] = None,
    *,
    item_images: Optional[ItemImageSource] = None,
    evidence: Optional[EvidenceSource] = None,
    top_k: Optional[int] = None,
    progress: bool = False,
    given: Collection[str] = (),
) -> ReadyLinker:
    """The linker, its item images, cascade, verifier, ranking and safety rules, from ``settings``.

    The daemon, ``suggest``, ``link``, ``evaluate``, ``evaluate-live`` and the backfill (driver
    and every actor) all build their linker here, so the same settings give the same
    suggestions, and the same ``linker_version`` means the same set-up.

    :param settings: the whole Settings: ``linker`` (name, model, weights, checkpoint,
        verifier, top_k, min_score, ancestor_margin, blocklist), ``cascade`` and ``safety``.
    :param label_set: attached (its index loaded or built under ``linker.cache_dir``); None
        leaves attaching to the caller (the evaluation sets a baseline's counts first).
    :param item_images: where item images come from (``commons.providers.item_image_source``);
        asked only when the linker reads them (fusion, the cascade) or a verifier was
        calibrated with them. None: the linker's item side is text only (its notes say so).
    :param evidence: where the files' own evidence is resolved (``commons.evidence
        .evidence_source``, None when ``evidence.enabled`` is false); None: image only. Whether
        evidence is used, ``evidence.category_label_match`` and the evidence model
        (``linker.evidence_model``) go into the set-up hash.
    :param top_k: overrides ``linker.top_k`` (``suggest --top``, ``evaluate-live --top``).
    :param progress: progress bars while the label index is built.
    :param given: linker keys the command line set; the rest of ``linker`` follows the
        checkpoint ``learning.models_dir`` runs (``learning.registry.with_running_model``,
        asked here, at every build, so a promotion or rollback is what the next build runs).
    A checkpoint learned from decisions brings its operating threshold, which replaces
    ``linker.min_score``, its calibrated probability, and the verifier's calibration
    re-fitted on the decisions — or that verifier's weights tuned on them, a file beside the
    checkpoint run in its place (``linker.learned``; only beside the verifier it was fitted for).
    :raises LinkerError: what :func:`create_linker` raises; a verifier calibrated with item
        images when ``item_images`` is None (it would not run as it was calibrated); an
        unreadable evidence model; a learned checkpoint's tuned verifier missing or changed.
    :raises UsageError: an unknown linker name; a models registry that cannot be read, or
        whose running model's file is gone.
    """
    from wikivel_bot.learning.registry import with_running_model
    from wikivel_bot.linker.cascade.verifier import VerifiedLinker, load_verifier
    from wikivel_bot.linker.learned import (LearnedProbability, learned_calibration, learned_evidence_model,
                                            learned_verifier_calibration, learned_verifier_checkpoint,
                                            operating_threshold)
    from wikivel_bot.linker.link import rules_from_settings

    settings = with_running_model(settings, given)
    spec = get_spec(settings.linker.name)
    # The verifier's checkpoint says whether it was fitted with item images; it takes the
    # loader only then (load_verifier), so offering it here costs nothing when it was not.
    wanted = spec.uses_item_images or bool(settings.linker.verifier)
    loader = item_images() if wanted and item_images is not None else None
    inner = create_linker(spec.name, settings.linker, item_image_loader=loader, cascade=settings.cascade)
    verifier = inner.verifier if isinstance(inner, VerifiedLinker) else None
    tuned = learned_verifier_checkpoint(inner, verifier.checkpoint.digest) if verifier is not None else None
    if isinstance(inner, VerifiedLinker) and tuned is not None:
        # The learned checkpoint tuned this verifier's weights on reviewers' decisions (kept
        # only because they measurably beat its re-fitted calibration on later decisions): it
        # runs in that verifier's place, here only. Its digest names it in the version and the set-up.
        verifier = load_verifier(str(tuned), settings.linker, inner=inner.inner, item_image_loader=loader)
        inner = VerifiedLinker(inner.inner, verifier)
    refit = learned_verifier_calibration(inner, verifier.checkpoint.digest) if verifier is not None else None
    if verifier is not None and refit is not None:
        # The learned checkpoint re-fitted this verifier's calibration on reviewers' decisions
        # (train/decisions/verifier.py): its probabilities are read through that map, here only.
        verifier.checkpoint = replace(verifier.checkpoint, calibration=refit)
    calibration = learned_calibration(inner)
    if calibration is not None and verifier is None:
        # A checkpoint learned from decisions: its suggestions carry its calibrated probability.
        inner = LearnedProbability(inner, calibration)
    if verifier is not None and verifier.checkpoint.fitted_with_item_images and loader is None:
        raise LinkerError(f"linker.verifier: {verifier.checkpoint.path} was calibrated with item images (P18), "
                          "but there is no item image source here, so its probabilities would not be calibrated")
    rules = rules_from_settings(settings.linker, top_k, safety=settings.safety)
    operating = operating_threshold(inner)
    if operating is not None:
        rules = replace(rules, min_score=operating)
    model = None
    # The configured evidence model, else the one a checkpoint learned from decisions carries.
    evidence_path = settings.linker.evidence_model or learned_evidence_model(inner)
    if evidence_path:
        from wikivel_bot.linker.evidence_model import load

        model = load(Path(evidence_path))
    if not settings.evidence.enabled:
        evidence = None
    label_match = evidence is not None and settings.evidence.category_label_match
    setup = resolved_setup(settings, inner, loader if spec.uses_item_images else None, rules)
    if refit is not None:
        setup["verifier"]["calibration"] = refit.as_dict()
    setup["evidence"] = {"resolved": evidence is not None, "category_label_match": label_match,
                         "model": model.version if model is not None else None}
    linker = SetUpLinker(inner, setup_digest(setup))
    index = linker.attach(label_set, settings.linker.cache_dir, progress) if label_set is not None else None
    return ReadyLinker(linker=linker, rules=rules, index=index, setup=setup, evidence=evidence,
                       evidence_model=model, category_label_match=label_match, operating_threshold=operating,
                       operating_checkpoint=settings.linker.checkpoint if operating is not None else "")


def resolved_setup(settings: Settings, linker: Linker, loader: Optional[ItemImageLoader],
                   rules: RankingRules) -> Dict[str, Any]:
    """What, besides the model and its checkpoints (already in the version), changes what the
    linker ranks: item images read, the cascade's settings as the checkpoint resolved them,
    the verifier and its item images, the ranking rules and the whole safety section."""
    inner = getattr(linker, "inner", linker)  # the linker a verifier sits beside
    cascade = getattr(inner, "cascade", None)
    verifier = getattr(linker, "verifier", None)
    return {
        "item_images": loader_id(loader),
        "cascade": _plain(cascade) if isinstance(cascade, CascadeSettings) else None,
        "verifier": None if verifier is None else {
            "checkpoint": verifier.checkpoint.digest, "item_images": loader_id(verifier.item_image_loader)},
        "rules": _plain(rules),
        "safety": _plain(settings.safety),
    }


def setup_digest(setup: Mapping[str, Any]) -> str:
    """12 hex digits of SHA-256 over the set-up as sorted JSON: stable across runs and machines."""
    text = json.dumps(_plain(setup), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def loader_id(loader: Optional[ItemImageLoader]) -> str:
    """How an item image source names itself (its ``cache_id``); ``none`` without one."""
    if loader is None:
        return "none"
    return str(getattr(loader, "cache_id", "") or type(loader).__name__)


def _plain(value: Any) -> Any:
    """JSON-ready, order-free data: dataclasses as dicts, sets sorted. Anything else is named
    by its type (never its repr, which may hold a memory address and differ on every run)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


class SetUpLinker(LinkerWrapper):
    """A built linker whose description names its whole set-up: everything is the inner
    linker's, except that the version gets `` setup:<hash>`` (:func:`setup_digest`), so
    candidate rows made under another set-up are told apart by ``linker_version``.

    :param inner: the linker from :func:`create_linker`; :param digest: the set-up's hash.
    """

    def __init__(self, inner: Linker, digest: str) -> None:
        super().__init__(inner)
        self.digest = digest

    @property
    def description(self) -> LinkerDescription:
        inner = self.inner.description
        return replace(inner, version=f"{inner.version} setup:{self.digest}")
