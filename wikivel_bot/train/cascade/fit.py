"""``wikivel-bot train --variant cascade``: train the cascade's pair model (seed 004 §3.2.2).

The first stage is frozen (a trained ``naive-mlp`` or ``fusion`` checkpoint, ``--first-stage``;
without one its untrained head ranks like zero-shot). Every file's top K candidates are taken once from
it over cached CLIP embeddings; the pair model then learns to re-rank them from the image,
the file's text (cleaned name, categories, description in ``text_order`` — cut to
``text_tokens`` tokens as the linker cuts them), the item's text and its P18 image.

Losses over each file's candidate list (the first stage's top K are the hardest negatives
there are; in training a file's true items missing from its list replace the last ones):

* ``triplet`` — hinge on the hardest negative candidate for every true item (seed 004 eq. 3,
  on the ``z / a`` scores, margin ``--margin``);
* ``contrastive`` — the relaxed multi-positive loss (§4.3): cross-entropy of the softmax over
  the candidates against the uniform distribution over the file's true items.

After each epoch a validation pass re-ranks the validation files' lists (no injection) and
scores them; the best pass (``--select``, default nDCG@5) is kept as ``best.pt`` with the
verifier's calibration (``--calibration platt|isotonic``) fitted on the validation files'
(logit, match) pairs. ``last.pt`` and ``train-state.pt`` after every epoch make ``--resume``
continue exactly where a run stopped.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from wikivel_bot.config import CascadeSettings
from wikivel_bot.core.verification import METHODS, fit_calibration, verification_metrics
from wikivel_bot.errors import UsageError
from wikivel_bot.linker.cascade.text import TEXT_ORDER
from wikivel_bot.train.cascade.data import CascadeData, prepare_cascade
from wikivel_bot.train.fitting.epochs import run_epochs
from wikivel_bot.train.fitting.state import (
    BEST,
    LAST,
    Position,
    TrainResult,
    load_state,
    position_of,
    record_pass,
    restore_rng,
    run_result,
    save_state,
)
from wikivel_bot.train.fitting.validate import higher_is_better

LOSSES = ("triplet", "contrastive")
SELECTABLE = ("nDCG@5", "R@1", "R@5", "R@10", "mAP@10", "MRR")


@dataclass
class CascadeTrainConfig:
    """Every option of a cascade training run (stored in checkpoints and the state).

    :param data: dataset directory; :param out: run directory.
    :param first_stage: a trained first-stage checkpoint (naive-mlp or fusion); '' = untrained.
    :param first_stage_linker: its registry name when no checkpoint is given.
    :param candidates: K, first-stage candidates per file; :param text_tokens: file-text tokens.
    :param text_order: the order of the file text's parts (``linker.cascade.text``), recorded in the checkpoint.
    :param loss: ``triplet`` or ``contrastive``; :param margin: triplet margin.
    :param calibration: ``platt`` or ``isotonic`` (the verifier's map).
    Other fields as in ``loop.TrainConfig``; ``batch_size`` counts files here.
    """

    data: str
    out: str
    first_stage: str = ""
    first_stage_linker: str = "naive-mlp"
    labels: str = ""
    images: str = ""
    cache_dir: str = "cache"
    model: str = "ViT-B-32"
    pretrained: str = "laion2b_s34b_b79k"
    weights: str = ""
    device: str = "auto"
    threads: int = 0
    candidates: int = 50
    text_tokens: int = CascadeSettings.text_tokens
    text_order: Tuple[str, ...] = TEXT_ORDER
    epochs: int = 10
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    loss: str = "contrastive"
    margin: float = 0.2
    calibration: str = "platt"
    select: str = "nDCG@5"
    patience: int = 4
    seed: int = 0
    max_steps: Optional[int] = None
    resume: bool = False
    progress: bool = False


def check_config(config: CascadeTrainConfig) -> None:
    """:raises UsageError: naming the bad option."""
    if config.loss not in LOSSES:
        raise UsageError(f"--loss for the cascade must be one of {', '.join(LOSSES)}, not {config.loss!r}")
    if config.calibration not in METHODS:
        raise UsageError(f"--calibration must be one of {', '.join(METHODS)}, not {config.calibration!r}")
    if config.select not in SELECTABLE:
        raise UsageError(f"--select for the cascade must be one of {', '.join(SELECTABLE)}, not {config.select!r}")
    if config.candidates < 2 or config.text_tokens < 2 or config.batch_size < 1 or config.epochs < 1:
        raise UsageError("--candidates and --text-tokens must be at least 2, --batch-size and --epochs at least 1")


def cascade_loss(kind: str, logits: torch.Tensor, scores: torch.Tensor, targets: torch.Tensor,
                 margin: float = 0.2) -> torch.Tensor:
    """The loss of a batch of candidate lists.

    :param kind: ``triplet`` or ``contrastive``.
    :param logits: (B, K) final logits z; :param scores: (B, K) z / a (cosine units).
    :param targets: (B, K) bool, True where the candidate is one of the file's items.
    :param margin: triplet margin.
    """
    has = targets.any(dim=1)
    if not bool(has.any()):
        return logits.sum() * 0.0
    logits, scores, targets = logits[has], scores[has], targets[has]
    if kind == "contrastive":
        weights = targets.float() / targets.float().sum(dim=1, keepdim=True)
        return -(weights * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
    blocked = torch.finfo(scores.dtype).min
    hardest = scores.masked_fill(targets, blocked).amax(dim=1, keepdim=True)
    hinge = F.relu(margin + hardest - scores) * targets.float()
    # Lists with no negative at all have hardest = blocked: their hinge is exactly 0.
    return (hinge.sum(dim=1) / targets.float().sum(dim=1)).mean()


def train_cascade(config: CascadeTrainConfig) -> TrainResult:
    """Run (or resume) a cascade training run; see the module docstring."""
    from wikivel_bot.linker.cascade.checkpoint import save_cascade_checkpoint
    from wikivel_bot.linker.cascade.pair import build_pair_model, pair_args

    check_config(config)
    started = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    plain = asdict(config)
    saved = load_state(out, plain) if config.resume else None
    torch.manual_seed(config.seed)
    data = prepare_cascade(config)
    args = pair_args(data.spec.head)
    pair = build_pair_model(data.dim, args).to(data.device)
    pair.set_statistics(data.images[data.train_files], data.file_text[data.train_files], data.item_text,
                        data.item_image)
    optimizer = torch.optim.AdamW(pair.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    position = Position()
    if saved is not None:
        pair.load_state_dict({k[5:]: v for k, v in saved["variant"].items() if k.startswith("pair.")})
        optimizer.load_state_dict(saved["optimizer"])
        position = position_of(saved)
        restore_rng(saved)
        if position.stopped == "early_stopping" or (position.stopped == "epochs" and position.epoch >= config.epochs):
            return run_result(out, position, config.select, data.notes, started)
        position.stopped = ""
    log = (out / "metrics.jsonl").open("a", encoding="utf-8")
    train_files = data.train_files
    n_batches = max(1, -(-len(train_files) // config.batch_size))

    def checkpoint(path: Path, metrics: Dict[str, float], calibration: Any = None,
                   verification: Optional[Dict[str, float]] = None) -> Path:
        return save_cascade_checkpoint(
            path, spec=data.spec.as_dict(), pair=pair, pair_args=args, backbone=data.backbone_block,
            labelset_hash=data.label_set.content_hash, first_stage_linker=data.first_stage_linker,
            first_stage=data.first_stage_doc, candidates=config.candidates, text_tokens=config.text_tokens,
            text_order=config.text_order, calibration=calibration, verification=verification,
            # The verifier beside a linker gets item images exactly when it was fitted with them.
            item_images=int(data.item_image_present.sum()),
            extra={"train": plain, "step": position.step, "epoch": position.epoch, "validation": dict(metrics),
                   "data": data.data_info, "open_clip_config": data.open_clip_config},
        )

    def step(picked: np.ndarray) -> float:
        batch = data.batch(train_files[picked], inject=True)
        result = pair(*batch.inputs)
        loss = cascade_loss(config.loss, result.logits, result.scores, batch.targets, config.margin)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.item()

    def after_batch(done: int, value: float) -> None:
        log.write(json.dumps({"kind": "train", "step": position.step, "epoch": position.epoch,
                              "loss": round(value, 6)}) + "\n")

    def after_epoch() -> None:
        metrics, logits, labels = evaluate_lists(pair, data, data.validation_files)
        log.write(json.dumps({"kind": "validation", "step": position.step, "epoch": position.epoch,
                              **{k: round(v, 6) for k, v in metrics.items()}}) + "\n")
        log.flush()
        position.history.append(metrics)
        value = metrics[config.select]
        if record_pass(position, value, higher_is_better(config.select), config.patience):
            calibration = fit_calibration(logits, labels, config.calibration)
            verification = verification_metrics([calibration.probability(z) for z in logits], labels)
            checkpoint(out / BEST, metrics, calibration, verification)
        checkpoint(out / LAST, metrics)
        save_state(out, config=plain, position=position,
                   variant_state={f"pair.{k}": v for k, v in pair.state_dict().items()},
                   optimizer=optimizer, logit_scale=torch.zeros(()))

    try:
        pair.train()
        run_epochs(position, epochs=config.epochs, rows=len(train_files), batch_size=config.batch_size,
                   n_batches=n_batches, seed=config.seed, max_steps=config.max_steps, step=step,
                   after_batch=after_batch, after_epoch=after_epoch, progress=config.progress)
    finally:
        log.close()
    if not (out / LAST).exists() or position.stopped in ("max_steps", "interrupted"):
        checkpoint(out / LAST, position.history[-1] if position.history else {})
        save_state(out, config=plain, position=position,
                   variant_state={f"pair.{k}": v for k, v in pair.state_dict().items()},
                   optimizer=optimizer, logit_scale=torch.zeros(()))
    return run_result(out, position, config.select, data.notes, started)


@torch.no_grad()
def evaluate_lists(pair: Any, data: CascadeData, files: np.ndarray) -> Tuple[Dict[str, float], List[float], List[bool]]:
    """Re-rank ``files``' candidate lists; (metrics, every candidate's logit, its match label)."""
    from wikivel_bot.evaluation import score_rankings

    was = pair.training
    pair.eval()
    try:
        rankings, logits, labels = [], [], []
        for start in range(0, len(files), 256):
            rows = files[start:start + 256]
            batch = data.batch(rows, inject=False)
            result = pair(*batch.inputs)
            order = torch.argsort(result.scores, dim=1, descending=True)
            for r, row in enumerate(rows.tolist()):
                ranked = batch.candidates[r][order[r]].tolist()
                rankings.append((str(row), [data.label_set.qids[i] for i in ranked]))
            logits.extend(result.logits.flatten().tolist())
            labels.extend(batch.targets.flatten().tolist())
        truth = {str(row): data.truth_qids[row] for row in files.tolist()}
        report = score_rankings(rankings, truth, ks=(1, 5, 10), hops=(0,))
        scores = report.scores[0]
        return {k: float(scores[k]) for k in ("R@1", "R@5", "R@10", "DivR@10", "mAP@10", "nDCG@5", "MRR")}, logits, labels
    finally:
        pair.train(was)


