"""The verifier re-fitted on reviewers' decisions: its calibration, and its weights when that helps (docs/learning.md).

With ``linker.verifier`` set, every suggestion carries the verifier's ``P(match)``: its
pair model's logit through the calibration map stored in its cascade checkpoint, fitted
once on the training data's held-out files. Reviewers' decisions are the truer labels of the
pairs the bot actually proposes, so a learning round learns from them twice over:

* **calibration only** — the map fitted again, the pair model's weights as they are, on the
  ``calibration`` files of the decision records: the verifier's logit of each decided
  (file, item) pair against the human answer (approved or rejected), with the checkpoint's
  own method (Platt or isotonic);
* **weights and calibration** — a copy of the pair model fine-tuned on the ``train`` files'
  decisions (``train.decisions.pair.fine_tune_pair``: rejections are explicit negatives,
  early-stopped on the ``calibration`` files), then its map fitted on the ``calibration``
  files' logits of the *new* weights.

The ``evaluation`` files, which neither saw, judge all three — the checkpoint as it is
(``before``), the re-fitted map (``after``) and the tuned weights with theirs (``tuned``):
the tuned weights are kept only when their evaluation log-loss is measurably lower than what
would run otherwise (the re-fit; the checkpoint's own map when there is no re-fit): the 95 %
interval of the change, a paired bootstrap over the evaluation *files*, below zero.

The verifier is run exactly as it runs beside the linker: its own checkpoint, the label set
attached under ``linker.cache_dir``, item images (P18) when its checkpoint says it was fitted
with them, and each file's text in the order it was trained with — read from the record's
title, description and categories, and its image from the dataset's ``images/``.

The re-fitted map goes into the challenger's checkpoint (``extra["verifier_calibration"]``),
keyed by the verifier checkpoint's digest: :func:`wikivel_bot.linker.learned.learned_verifier_calibration`
applies it only beside that very verifier, so a changed ``linker.verifier`` falls back to
its own calibration. Kept tuned weights are a cascade checkpoint of their own beside the
challenger (:meth:`VerifierRefit.write_checkpoint`, ``verifier.pt``), named in
``extra["verifier_checkpoint"]`` under the same key: beside that verifier the factory runs
this file instead (:func:`wikivel_bot.linker.learned.learned_verifier_checkpoint`).
Nothing is re-fitted when the calibration files' decisions are all of one kind, or when the
fitted Platt map would fall as the score rises (on these decisions the score says nothing):
the checkpoint's own calibration then stays, and the round says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# Decided pairs run through the pair model at a time.
PAIR_BLOCK = 512
# The tuned verifier's file, in the challenger's directory.
TUNED_FILE = "verifier.pt"
# Probabilities are clipped this far from 0 and 1 for the log-loss: an isotonic map's steps
# may say 0 or 1 outright, and one such pair must not make the loss infinite.
_EPS = 1e-6


@dataclass(frozen=True)
class VerifierRefit:
    """What re-fitting gave.

    :param path: ``linker.verifier``; :param digest: its checkpoint's digest.
    :param calibration: the re-fitted map of the verifier's own weights
        (``core.verification.Calibration``), or None.
    :param reason: why there is none (empty when there is one).
    :param pairs: decided pairs scored per split; :param evaluation: the evaluation pairs'
        metrics (``verification_metrics`` and ``log_loss``) with the checkpoint's calibration
        (``before``), the re-fitted one (``after``) and the tuned weights with theirs (``tuned``).
    :param tuned: the fine-tuned pair model, only when it is kept; :param tuned_calibration: its map.
    :param weights: why the tuned weights were kept or not (one phrase).
    :param source: the verifier's checkpoint (``CascadeCheckpoint``), copied for the tuned file.
    """

    path: str
    digest: str
    calibration: Any = None
    reason: str = ""
    pairs: Dict[str, int] = field(default_factory=dict)
    evaluation: Dict[str, Dict[str, float]] = field(default_factory=dict)
    tuned: Any = None
    tuned_calibration: Any = None
    weights: str = ""
    source: Any = None

    def as_extra(self) -> Dict[str, Any]:
        """What the challenger's checkpoint stores (only when there is a calibration)."""
        return {"verifier": self.path, "verifier_digest": self.digest, "pairs": dict(self.pairs),
                "calibration": self.calibration.as_dict()}

    def as_report(self) -> Dict[str, Any]:
        tuned = self.tuned_calibration.as_dict() if self.tuned_calibration is not None else None
        return {"verifier": self.path, "verifier_digest": self.digest, "refitted": self.calibration is not None,
                "reason": self.reason, "pairs": dict(self.pairs), "evaluation": self.evaluation,
                "calibration": self.calibration.as_dict() if self.calibration is not None else None,
                "weights": {"tuned": self.tuned is not None, "reason": self.weights, "calibration": tuned}}

    def summary(self) -> str:
        shown = self._shown("tuned" if self.tuned is not None else "after")
        if self.tuned is not None:
            return (f"verifier fine-tuned on reviewers' decisions and re-calibrated on {self.pairs.get('calibration', 0)} "
                    f"decided pairs{shown}: {self.weights}")
        weights = f"; its weights kept: {self.weights}" if self.weights else ""
        if self.calibration is None:
            return f"verifier calibration kept: {self.reason}{weights}"
        return f"verifier calibration re-fitted on {self.pairs.get('calibration', 0)} decided pairs{shown}{weights}"

    def _shown(self, name: str) -> str:
        before, after = self.evaluation.get("before"), self.evaluation.get(name)
        if before is None or after is None:
            return ""
        return (f" (evaluation ECE {before['ece']:.3f} -> {after['ece']:.3f}, "
                f"log-loss {before['log_loss']:.3f} -> {after['log_loss']:.3f})")

    def write_checkpoint(self, directory: Path) -> Dict[str, str]:
        """Write the tuned verifier as a cascade checkpoint in ``directory`` (the challenger's):
        everything of the verifier's own checkpoint, with the new pair weights and calibration.

        :returns: what the challenger's ``extra["verifier_checkpoint"]`` records: the file
            relative to ``directory``, the configured verifier's digest (the key) and the file's.
        """
        from wikivel_bot.linker.cascade.checkpoint import save_cascade_checkpoint
        from wikivel_bot.linker.checkpoint import file_digest

        if self.tuned is None or self.source is None:
            raise ValueError("no tuned verifier to write")
        source = self.source
        extra = dict(source.extra)
        extra["from_decisions"] = {"verifier_digest": self.digest, "verifier": self.path, "pairs": dict(self.pairs),
                                   "evaluation": self.evaluation}
        path = save_cascade_checkpoint(
            Path(directory) / TUNED_FILE, spec=source.spec, pair=self.tuned, pair_args=source.pair_args,
            backbone=source.open_clip, labelset_hash=source.labelset_hash, first_stage_linker=source.first_stage_linker,
            first_stage=source.first_stage, candidates=source.candidates, text_tokens=source.text_tokens,
            calibration=self.tuned_calibration, verification=self.evaluation.get("tuned", {}), extra=extra,
            text_order=source.text_order, item_images=source.item_images)
        return {"path": TUNED_FILE, "verifier_digest": self.digest, "digest": file_digest(Path(path))}


def refit_verifier(settings: Any, records: Sequence[Any], data_dir: Path, *, label_set: Callable[[], Any],
                   item_images: Optional[Callable[[], Any]] = None, epochs: int = 0, lr: float = 1e-3,
                   seed: int = 0) -> VerifierRefit:
    """Re-fit ``settings.verifier``'s calibration on the records' ``calibration`` files, and
    fine-tune its weights on the ``train`` files, kept only when that beats the re-fit.

    :param settings: ``LinkerSettings`` (``verifier`` set; model, weights, device, cache_dir).
    :param records: ``learning.records.Record`` values with a split and an image path.
    :param data_dir: the dataset directory the records' image paths are relative to.
    :param label_set: the label set in use (asked here: the verifier scores its items).
    :param item_images: where P18 images come from, asked only when the verifier was fitted
        with them; without one its calibration and weights are kept (it would not run as it was fitted).
    :param epochs, lr, seed: the fine-tuning (``learning.epochs``, ``lr``, ``seed``); epochs 0:
        the calibration only.
    :raises LinkerError: the verifier cannot be loaded or attached (one line, as at link time).
    """
    import copy

    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint
    from wikivel_bot.linker.cascade.verifier import load_verifier
    from wikivel_bot.train.decisions.pair import PairTuneConfig, encode_pair_records, fine_tune_pair

    path = settings.verifier
    checkpoint = load_cascade_checkpoint(path)
    if checkpoint.fitted_with_item_images and item_images is None:
        return VerifierRefit(path, checkpoint.digest, reason="it was fitted with item images (P18) and there is "
                                                             "no item image source here")
    loader = item_images() if checkpoint.fitted_with_item_images and item_images is not None else None
    verifier = load_verifier(path, settings, item_image_loader=loader)
    verifier.attach(label_set(), settings.cache_dir)
    source = verifier.checkpoint
    # Every decided pair's features, once: both the verifier's weights and the tuned ones read them.
    data = encode_pair_records(records, data_dir, verifier)
    original = copy.deepcopy(verifier.pair).float().cpu().eval()
    scored = {name: _logits(original, data, name) for name in ("calibration", "evaluation")}
    pairs = {name: len(logits) for name, (logits, _) in scored.items()}
    old = source.calibration
    new, reason = _fit(*scored["calibration"], old.method)
    held_logits, held_labels = scored["evaluation"]
    evaluation: Dict[str, Dict[str, float]] = {}
    if held_logits:
        evaluation["before"] = _metrics(old, held_logits, held_labels)
        if new is not None:
            evaluation["after"] = _metrics(new, held_logits, held_labels)
    if epochs <= 0:
        return VerifierRefit(path, source.digest, new, reason, pairs, evaluation, source=source)
    tuned = fine_tune_pair(original, data, PairTuneConfig(epochs=epochs, lr=lr, seed=seed))
    tuned_calibration, why = _fit(*_logits(tuned, data, "calibration"), old.method)
    losses: Dict[str, List[float]] = {}
    if tuned_calibration is not None and held_logits:
        tuned_logits = _logits(tuned, data, "evaluation")[0]
        evaluation["tuned"] = _metrics(tuned_calibration, tuned_logits, held_labels)
        losses = {"tuned": _pair_losses(tuned_calibration, tuned_logits, held_labels),
                  "after" if new is not None else "before": _pair_losses(new if new is not None else old,
                                                                          held_logits, held_labels)}
    keep, weights = _keep_tuned(evaluation, why, losses, _files(data, "evaluation"), seed)
    if not keep:
        return VerifierRefit(path, source.digest, new, reason, pairs, evaluation, weights=weights, source=source)
    return VerifierRefit(path, source.digest, new, reason, pairs, evaluation, tuned, tuned_calibration, weights, source)


def _fit(logits: List[float], labels: List[bool], method: str) -> Tuple[Any, str]:
    """(the map fitted on these pairs, "") or (None, why none can be)."""
    from wikivel_bot.core.verification import fit_calibration
    from wikivel_bot.errors import UsageError

    try:
        fitted = fit_calibration(logits, labels, method)
    except UsageError as exc:  # one class only, or nothing decided: nothing to fit on
        return None, str(exc)
    if fitted.method == "platt" and fitted.a <= 0:
        # A falling map would rank the verifier's surest pairs least likely: on these
        # decisions its score says nothing (or the opposite), and no re-fit can mend that.
        return None, f"on these decisions the verifier's score does not rise with approval (Platt slope {fitted.a:.3g})"
    return fitted, ""


def _pair_losses(calibration: Any, logits: List[float], labels: List[bool]) -> List[float]:
    """Each pair's log-loss through ``calibration`` (probabilities clipped as in :func:`_metrics`)."""
    import math

    clipped = [min(max(calibration.probability(z), _EPS), 1 - _EPS) for z in logits]
    return [-math.log(p if y else 1 - p) for p, y in zip(clipped, labels)]


def _loss_gain_interval(tuned: List[float], other: List[float], files: Sequence[int], seed: int,
                        resamples: int = 1000) -> Tuple[float, float]:
    """The 95 % paired-bootstrap interval of the per-pair mean of (tuned − other) log-loss,
    resampling **files** (seeded): a file's pairs share its image and its reviewer, so they
    are not independent, and resampling pairs would make the interval too narrow."""
    import numpy as np

    diff = np.asarray(tuned, dtype=float) - np.asarray(other, dtype=float)
    names, row = np.unique(np.asarray(files), return_inverse=True)
    sums, counts = np.bincount(row, weights=diff, minlength=names.size), np.bincount(row, minlength=names.size)
    weights = np.random.default_rng(seed).multinomial(names.size, np.full(names.size, 1.0 / names.size),
                                                      size=resamples)
    means = (weights @ sums) / np.maximum(weights @ counts, 1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _keep_tuned(evaluation: Dict[str, Dict[str, float]], why: str, losses: Dict[str, List[float]],
                files: Sequence[int], seed: int) -> Tuple[bool, str]:
    """Whether the tuned weights *measurably* beat what would run otherwise on the evaluation
    pairs, and why: their log-loss lower, and the whole 95 % paired-bootstrap interval of the
    change below zero (as the champion/challenger rule asks of precision) — a few pairs
    lower by luck keep the weights that ran."""
    if "tuned" not in evaluation:
        return False, f"the tuned weights could not be calibrated ({why})" if why else \
            "no evaluation pairs to judge the tuned weights on"
    other, named = ("after", "the re-fitted calibration") if "after" in evaluation else \
        ("before", "the checkpoint's own calibration")
    # Log-loss rather than Brier: it is what the fine-tuning and the Platt fit minimise, and it
    # punishes a confident wrong P(match) without bound where Brier caps it at 1 — and a
    # verifier's confident errors are what a reviewer's ordering and thresholds trust most.
    tuned, before = evaluation["tuned"]["log_loss"], evaluation[other]["log_loss"]
    low, high = _loss_gain_interval(losses["tuned"], losses[other], files, seed)
    shown = (f"log-loss {tuned:.4f} against {before:.4f} with {named}, change 95% interval over files "
             f"[{low:+.4f}, {high:+.4f}]")
    if tuned < before and high < 0:
        return True, f"evaluation {shown}"
    return False, f"they do not measurably beat {named} on the evaluation decisions ({shown})"


def _metrics(calibration: Any, logits: List[float], labels: List[bool]) -> Dict[str, float]:
    """``verification_metrics`` of the pairs through ``calibration``, and their log-loss."""
    import math

    from wikivel_bot.core.verification import verification_metrics

    probabilities = [calibration.probability(z) for z in logits]
    clipped = [min(max(p, _EPS), 1 - _EPS) for p in probabilities]
    metrics = verification_metrics(probabilities, labels)
    metrics["log_loss"] = -sum(math.log(p if y else 1 - p) for p, y in zip(clipped, labels)) / len(labels)
    return metrics


def _files(data: Any, split: str) -> List[int]:
    """The page id of every decided pair of ``split``, in :func:`_logits`' order."""
    return [int(data.page_ids[int(data.pair_file[i])]) for i in data.select(split).tolist()]


def _logits(pair: Any, data: Any, split: str) -> Tuple[List[float], List[bool]]:
    """The pair model's logit ``z`` and the human label of every decided pair of ``split``
    (those ``encode_pair_records`` could encode: a file with an image, an item in the label set)."""
    import torch

    from wikivel_bot.train.decisions.pair import pair_output

    chosen = data.select(split)
    logits: List[float] = []
    pair.eval()
    with torch.no_grad():
        for start in range(0, int(chosen.numel()), PAIR_BLOCK):
            block = chosen[start:start + PAIR_BLOCK]
            out = pair_output(pair, data, data.pair_file[block], data.pair_item[block].unsqueeze(1))
            logits.extend(float(z) for z in out.logits[:, 0].tolist())
    return logits, [bool(y > 0.5) for y in data.label[chosen].tolist()]
