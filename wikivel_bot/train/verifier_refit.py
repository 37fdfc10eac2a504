"""The verifier's calibration re-fitted on reviewers' decisions (docs/learning.md).

With ``linker.verifier`` set, every suggestion carries the verifier's ``P(match)``: its
pair model's logit through the calibration map stored in its cascade checkpoint, fitted
once on the training data's held-out files. Reviewers' decisions are the truer labels of the
pairs the bot actually proposes, so a learning round fits that map again — the pair model's
weights stay as they are — on the ``calibration`` files of the decision records: the
verifier's logit of each decided (file, item) pair against the human answer (approved or
rejected), with the checkpoint's own method (Platt or isotonic).

The verifier is run exactly as it runs beside the linker: its own checkpoint, the label set
attached under ``linker.cache_dir``, item images (P18) when its checkpoint says it was fitted
with them, and each file's text in the order it was trained with — read from the record's
title, description and categories, and its image from the dataset's ``images/``.

The result goes into the challenger's checkpoint (``extra["verifier_calibration"]``), keyed
by the verifier checkpoint's digest: :func:`wikivel_bot.linker.learned.learned_verifier_calibration`
applies it only beside that very verifier, so a changed ``linker.verifier`` falls back to
its own calibration. The evaluation files say whether it helped (ECE, before and after).
Nothing is re-fitted when the calibration files' decisions are all of one kind, or when the
fitted Platt map would fall as the score rises (on these decisions the score says nothing):
the checkpoint's own calibration then stays, and the round says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# Files run through the verifier at a time (their decoded thumbnails are the memory).
FILE_BLOCK = 64


@dataclass(frozen=True)
class VerifierRefit:
    """What re-fitting gave.

    :param path: ``linker.verifier``; :param digest: its checkpoint's digest.
    :param calibration: the re-fitted map (``core.verification.Calibration``), or None.
    :param reason: why there is none (empty when there is one).
    :param pairs: decided pairs scored per split; :param evaluation: the evaluation pairs'
        metrics with the checkpoint's calibration (``before``) and the re-fitted one (``after``).
    """

    path: str
    digest: str
    calibration: Any = None
    reason: str = ""
    pairs: Dict[str, int] = field(default_factory=dict)
    evaluation: Dict[str, Dict[str, float]] = field(default_factory=dict)

    def as_extra(self) -> Dict[str, Any]:
        """What the challenger's checkpoint stores (only when there is a calibration)."""
        return {"verifier": self.path, "verifier_digest": self.digest, "pairs": dict(self.pairs),
                "calibration": self.calibration.as_dict()}

    def as_report(self) -> Dict[str, Any]:
        return {"verifier": self.path, "verifier_digest": self.digest, "refitted": self.calibration is not None,
                "reason": self.reason, "pairs": dict(self.pairs), "evaluation": self.evaluation,
                "calibration": self.calibration.as_dict() if self.calibration is not None else None}

    def summary(self) -> str:
        if self.calibration is None:
            return f"verifier calibration kept: {self.reason}"
        ece = {k: v.get("ece") for k, v in self.evaluation.items()}
        shown = "" if not ece else f" (evaluation ECE {ece.get('before', float('nan')):.3f} -> " \
                                   f"{ece.get('after', float('nan')):.3f})"
        return f"verifier calibration re-fitted on {self.pairs.get('calibration', 0)} decided pairs{shown}"


def refit_verifier(settings: Any, records: Sequence[Any], data_dir: Path, *, label_set: Callable[[], Any],
                   item_images: Optional[Callable[[], Any]] = None) -> VerifierRefit:
    """Re-fit ``settings.verifier``'s calibration on the records' ``calibration`` files.

    :param settings: ``LinkerSettings`` (``verifier`` set; model, weights, device, cache_dir).
    :param records: ``learning.records.Record`` values with a split and an image path.
    :param data_dir: the dataset directory the records' image paths are relative to.
    :param label_set: the label set in use (asked here: the verifier scores its items).
    :param item_images: where P18 images come from, asked only when the verifier was fitted
        with them; without one its calibration is kept (it would not run as it was fitted).
    :raises LinkerError: the verifier cannot be loaded or attached (one line, as at link time).
    """
    from wikivel_bot.core.verification import fit_calibration, verification_metrics
    from wikivel_bot.errors import UsageError
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint
    from wikivel_bot.linker.cascade.verifier import load_verifier

    path = settings.verifier
    checkpoint = load_cascade_checkpoint(path)
    if checkpoint.fitted_with_item_images and item_images is None:
        return VerifierRefit(path, checkpoint.digest, reason="it was fitted with item images (P18) and there is "
                                                             "no item image source here")
    loader = item_images() if checkpoint.fitted_with_item_images and item_images is not None else None
    verifier = load_verifier(path, settings, item_image_loader=loader)
    verifier.attach(label_set(), settings.cache_dir)
    scored = {name: _scored(verifier, [r for r in records if r.split == name], data_dir)
              for name in ("calibration", "evaluation")}
    pairs = {name: len(logits) for name, (logits, _) in scored.items()}
    old = verifier.checkpoint.calibration
    logits, labels = scored["calibration"]
    try:
        new = fit_calibration(logits, labels, old.method)
    except UsageError as exc:  # one class only, or nothing decided: nothing to fit on
        return VerifierRefit(path, verifier.checkpoint.digest, reason=str(exc), pairs=pairs)
    if new.method == "platt" and new.a <= 0:
        # A falling map would rank the verifier's surest pairs least likely: on these
        # decisions its score says nothing (or the opposite), and no re-fit can mend that.
        return VerifierRefit(path, verifier.checkpoint.digest, pairs=pairs,
                             reason=f"on these decisions the verifier's score does not rise with approval "
                                    f"(Platt slope {new.a:.3g})")
    evaluation: Dict[str, Dict[str, float]] = {}
    held_logits, held_labels = scored["evaluation"]
    if held_logits:
        evaluation = {name: verification_metrics([c.probability(z) for z in held_logits], held_labels)
                      for name, c in (("before", old), ("after", new))}
    return VerifierRefit(path, verifier.checkpoint.digest, new, pairs=pairs, evaluation=evaluation)


def _scored(verifier: Any, records: Sequence[Any], data_dir: Path) -> Tuple[List[float], List[bool]]:
    """The verifier's logit and the human label of every decided pair of ``records`` whose
    file has an image and whose item is in the label set (the others cannot be scored)."""
    from wikivel_bot.errors import FileUnavailable
    from wikivel_bot.linker.backbone.images import decode_image
    from wikivel_bot.linker.base import Query
    from wikivel_bot.types import MediaFile

    label_set = verifier.label_set
    logits: List[float] = []
    labels: List[bool] = []
    for start in range(0, len(records), FILE_BLOCK):
        queries, positions, answers = [], [], []
        for record in records[start:start + FILE_BLOCK]:
            decided = [(q, True) for q in record.positives] + [(q, False) for q in record.negatives]
            found = [(label_set.index_of(q), y) for q, y in decided]
            found = [(p, y) for p, y in found if p is not None]
            image_path = data_dir / record.image if record.image else None
            if not found or image_path is None or not image_path.is_file():
                continue
            try:
                image = decode_image(image_path.read_bytes(), min_side=verifier.backbone.image_size)
            except FileUnavailable:  # an undecodable image leaves the file out, as in training
                continue
            media = MediaFile(page_id=record.page_id, title=record.title, description=record.description,
                              categories=tuple(record.categories))
            queries.append(Query(record.title, image, verifier.query_text(media)))
            positions.append([p for p, _ in found])
            answers.append([y for _, y in found])
        if queries:
            for row, ys in zip(verifier.verify(queries, positions), answers):
                logits.extend(float(z) for z in row)
                labels.extend(ys)
    return logits, labels

