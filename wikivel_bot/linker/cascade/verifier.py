"""A verifier beside any linker: every suggestion gets a calibrated match probability.

``linker.verifier = PATH`` names a cascade checkpoint (``train --variant cascade`` writes one;
its ``best.pt`` holds the verifier's calibration). Its pair model (seed 000's cross-attention
verifier) scores each (file, suggested item) pair after the linker has ranked — zero-shot,
naive-mlp, fusion, a baseline or the cascade itself — and its calibration map turns the logit
into ``P(match)``. The ranking is unchanged: the verifier only adds ``probability``, which
``calibrate --on probability`` can then threshold.

The pair model's logit is ``z = a · first_stage_cosine + pair_logit`` with the first stage the
*checkpoint's* (embedded whole), so the probability means the same whichever linker proposed
the item. The checkpoint is refused at load for another backbone, and at ``attach`` for
another label set, as linker checkpoints are.

It runs as it was calibrated: the checkpoint records how many items' P18 images the pair model
read in training (``item_images``), and the verifier reads item images exactly when it did —
beside a zero-shot or naive linker too, which read none themselves.
:func:`~wikivel_bot.linker.factory.build_ready_linker` hands it the item image loader, and
refuses in one line when it has none to give.

:class:`VerifiedLinker` wraps the linker (``create_linker`` does this when the setting is
set) and :func:`~wikivel_bot.linker.link.link_files` asks it for the probabilities.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence

from wikivel_bot.config import CascadeSettings, LinkerSettings
from wikivel_bot.core.labelset import LabelSetView
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.base import IndexInfo, ItemImageLoader, Linker, LinkerDescription, LinkerWrapper, Query
from wikivel_bot.types import MediaFile


class VerifiedLinker(LinkerWrapper):
    """A linker with a verifier: everything is the linker's, plus :meth:`probabilities`.

    :param inner: the linker that ranks.
    :param verifier: a cascade linker built from the verifier checkpoint (``load_verifier``).
    """

    def __init__(self, inner: Linker, verifier: Any) -> None:
        super().__init__(inner)
        self.verifier = verifier

    def concurrent_batches(self) -> int:
        """One batch at a time: the verifier's pair model has not been made safe to run from
        two threads (and ``__getattr__`` would otherwise answer with the inner linker's)."""
        return 1

    @property
    def description(self) -> LinkerDescription:
        inner = self.inner.description
        digest = self.verifier.checkpoint.digest[:12]
        warnings = inner.warnings
        if self.verifier.checkpoint.fitted_with_item_images and self.verifier.item_image_loader is None:
            # Only create_linker's own callers get here: build_ready_linker refuses instead.
            warnings += ("verifier without item images: it was calibrated with them, so its probabilities are "
                         "not calibrated",)
        # The version goes into every candidate row: it names the verifier behind the probability.
        return replace(inner, version=f"{inner.version} verifier:{digest}", warnings=warnings)

    def attach(self, label_set: LabelSetView, cache_dir: str, progress: bool = False) -> IndexInfo:
        """Attach the linker, then the verifier (refused for another label set)."""
        info = self.inner.attach(label_set, cache_dir, progress)
        self.verifier.attach(label_set, cache_dir, progress)
        return info

    def probabilities(self, queries: Sequence[Query], medias: Sequence[MediaFile],
                      qids: Sequence[Sequence[str]]) -> List[Dict[str, float]]:
        """``P(match)`` of each file's suggested items (rounded to 4 places, as the cascade's).

        :param queries: the files as the linker saw them (the image is reused).
        :param medias: the same files (the verifier reads its own text of them).
        :param qids: per file, the items to verify.
        """
        label_set = self.verifier.label_set
        calibration = self.verifier.checkpoint.calibration
        # ``replace`` keeps each query's cache: the linker's image embedding is reused when the
        # backbone is shared.
        own = [replace(q, text=self.verifier.query_text(m)) for q, m in zip(queries, medias)]
        positions = [[label_set.index_of(qid) for qid in row] for row in qids]
        logits = self.verifier.verify(own, [[p for p in row if p is not None] for row in positions])
        out = []
        for row, found, z in zip(qids, positions, logits):
            kept = [qid for qid, p in zip(row, found) if p is not None]
            out.append({qid: round(calibration.probability(v), 4) for qid, v in zip(kept, z)})
        return out


def load_verifier(path: str, settings: LinkerSettings, *, inner: Optional[Linker] = None,
                  item_image_loader: Optional[ItemImageLoader] = None) -> Any:
    """The cascade linker that verifies, from a cascade checkpoint with a calibration.

    :param path: ``linker.verifier``.
    :param settings: the linker settings (model, weights, device: the verifier's backbone).
    :param inner: the linker it will sit beside; its backbone is shared when it is the one the
        verifier was trained on, at fp32 or on the bf16 fast path (not a naive-te tuned text
        tower, not int8: its quantised layers move the embeddings more than the calibration
        allows).
    :param item_image_loader: P18 images for the item side; given to the verifier only when its
        checkpoint says the pair model was fitted with item images (``fitted_with_item_images``),
        so it scores with what its calibration saw, no more and no less.
    :raises LinkerError: not a cascade checkpoint, no calibration, another backbone (one line each).
    """
    from wikivel_bot.linker.cascade import checkpoint as cckpt
    from wikivel_bot.linker.cascade.linker import build_cascade_linker
    from wikivel_bot.linker.spec import get_spec

    try:
        checkpoint = cckpt.load_cascade_checkpoint(path)
    except LinkerError as exc:
        raise LinkerError(f"linker.verifier: {exc}") from None
    if checkpoint.calibration is None:
        raise LinkerError(f"linker.verifier: {checkpoint.path} holds no calibration (a run's last.pt has none): "
                          "use the best.pt of `wikivel-bot train --variant cascade`")
    cascade = CascadeSettings(candidates=checkpoint.candidates, text_tokens=checkpoint.text_tokens, verifier=True)
    spec = get_spec(str(checkpoint.spec.get("name", "cascade")))
    try:
        return build_cascade_linker(spec, replace(settings, name=spec.name, checkpoint=checkpoint.path, verifier=""),
                                    cascade, backbone=_shared_backbone(inner),
                                    item_image_loader=item_image_loader if checkpoint.fitted_with_item_images else None)
    except LinkerError as exc:
        raise LinkerError(f"linker.verifier: {exc}") from None


def _shared_backbone(inner: Optional[Linker]) -> Any:
    """The linker's backbone when the verifier can use it as is (else None: it loads its own)."""
    from wikivel_bot.linker.cascade.linker import PAIR_PRECISIONS

    backbone = getattr(inner, "backbone", None)
    if backbone is None or getattr(backbone, "precision", "fp32") not in PAIR_PRECISIONS:
        return None
    checkpoint = getattr(inner, "checkpoint", None)
    if getattr(checkpoint, "text_encoder", None):
        return None  # naive-te replaced the text tower
    return backbone
