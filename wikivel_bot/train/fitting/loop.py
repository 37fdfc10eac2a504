"""``wikivel-bot train``: train a linker's head on a dataset (paper §4.3–4.4).

One run: load the dataset and label set, the frozen backbone and the cached embeddings
(``embeddings.py``), then AdamW over shuffled (file, item) rows with the relaxed
multi-positive contrastive loss (or the hinge triplet loss), two validation passes per
epoch, early stopping on a validation metric, the best checkpoint kept (``best.pt``), the
latest one and the trainer's state (``last.pt``, ``train-state.pt``) for ``--resume``, and
one JSON line per step and per validation pass in ``metrics.jsonl``.

Reproducible: the same seed gives the same batches and the same dropout masks; an
interrupted run resumed with ``--resume`` ends with the same weights as one that was not
interrupted (to float tolerance), because the position, the optimizer and torch's RNG state
are saved after every validation pass, at ``--max-steps`` and on Ctrl-C.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
import torch

from wikivel_bot.errors import UsageError
from wikivel_bot.linker import checkpoint as ckpt
from wikivel_bot.train.fitting.epochs import run_epochs
from wikivel_bot.train.fitting.losses import LOSSES, batch_loss
from wikivel_bot.train.fitting.setup import Prepared, prepare
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
from wikivel_bot.train.fitting.validate import VAL_METRICS, higher_is_better, validate

METRICS_LOG = "metrics.jsonl"


@dataclass
class TrainConfig:
    """Every option of a training run (stored in checkpoints and the state).

    :param linker: registry name: naive-mlp, naive-te or fusion.
    :param data: dataset directory (``dataset build`` / ``dataset synthetic``).
    :param out: run directory (checkpoints, metrics log).
    :param labels: label-set directory ('' = the one the dataset card names).
    :param images: image directory or shards ('' = ``<data>/images``).
    :param cache_dir: embedding cache root.
    :param model: open_clip architecture or model config JSON; :param pretrained: its tag;
    :param weights: a local weights file or ``random``; :param device: auto, cpu, cuda...
    :param threads: CPU threads for torch (0 = default).
    :param epochs: at most this many epochs; :param batch_size: rows per batch (paper 1024).
    :param lr: AdamW learning rate of the heads (paper 1e-3); :param text_lr: of the text
        tower (naive-te); :param weight_decay: AdamW weight decay.
    :param loss: ``contrastive`` or ``triplet``; :param margin: triplet margin.
    :param temperature: initial contrastive temperature; :param learn_temperature: learn it.
    :param target_hops: hierarchy hops that still make a target (paper: 1; 0 = exact items).
    :param hop_weight: weight of a target h hops away = hop_weight ** h.
    :param rescale: weight rows by inverse batch frequency.
    :param val_per_epoch: validation passes per epoch (paper: 2).
    :param patience: stop after this many validation passes without improvement.
    :param select: the metric early stopping watches (``R@10``, ``mAP@10``, ``val_loss``...).
    :param val_limit: validation files ranked per pass (0 = all).
    :param seed: seed of batches, head initialisation and dropout.
    :param max_steps: stop after this many optimizer steps in total (resumable).
    :param resume: continue the run in ``out``.
    :param progress: progress bars.
    """

    linker: str
    data: str
    out: str
    labels: str = ""
    images: str = ""
    cache_dir: str = "cache"
    model: str = "ViT-B-32"
    pretrained: str = "laion2b_s34b_b79k"
    weights: str = ""
    device: str = "auto"
    threads: int = 0
    epochs: int = 10
    batch_size: int = 1024
    lr: float = 1e-3
    text_lr: float = 1e-5
    weight_decay: float = 0.01
    loss: str = "contrastive"
    margin: float = 0.2
    temperature: float = 0.07
    learn_temperature: bool = True
    target_hops: int = 1
    hop_weight: float = 0.5
    rescale: bool = True
    val_per_epoch: int = 2
    patience: int = 4
    select: str = "R@10"
    val_limit: int = 10_000
    seed: int = 0
    max_steps: Optional[int] = None
    resume: bool = False
    progress: bool = False


def check_config(config: TrainConfig) -> None:
    """Refuse impossible settings before anything is loaded.

    :raises UsageError: naming the option.
    """
    if config.loss not in LOSSES:
        raise UsageError(f"--loss must be one of {', '.join(LOSSES)}, not {config.loss!r}")
    if config.batch_size < 2:
        raise UsageError("--batch-size must be at least 2 (the loss compares rows within a batch)")
    if not 0 <= config.target_hops <= 3:
        raise UsageError("--target-hops must be between 0 and 3")
    if config.val_per_epoch < 1 or config.epochs < 1:
        raise UsageError("--epochs and --val-per-epoch must be at least 1")
    if config.select not in VAL_METRICS:
        raise UsageError(f"--select must be one of {', '.join(VAL_METRICS)}, not {config.select!r}")


def train(config: TrainConfig) -> TrainResult:
    """Run (or resume) training as configured; returns where the checkpoints are.

    :raises UsageError: bad options, a dataset or label set that does not fit, nothing to
        resume or a resume with other settings.
    :raises LinkerError: backbone, weights or device problems.
    """
    check_config(config)
    started = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    plain = asdict(config)
    saved = load_state(out, plain) if config.resume else None
    torch.manual_seed(config.seed)
    prepared = prepare(config)
    variant = prepared.variant
    device = prepared.device
    logit_scale = torch.nn.Parameter(torch.tensor(math.log(1.0 / config.temperature), device=device),
                                     requires_grad=config.learn_temperature and config.loss == "contrastive")
    groups = variant.parameter_groups(config.lr, config.text_lr, config.weight_decay)
    if logit_scale.requires_grad:
        groups.append({"params": [logit_scale], "lr": config.lr, "weight_decay": 0.0})
    optimizer = torch.optim.AdamW(groups)
    position = Position()
    if saved is not None:
        variant.load_extra_state(saved["variant"])
        optimizer.load_state_dict(saved["optimizer"])
        with torch.no_grad():
            logit_scale.copy_(saved["logit_scale"].to(device))
        position = position_of(saved)
        restore_rng(saved)
        if position.stopped == "early_stopping" or (position.stopped == "epochs" and position.epoch >= config.epochs):
            return run_result(out, position, prepared.select, prepared.notes, started)
        position.stopped = ""
        _truncate_log(out / METRICS_LOG, position.step)
    log = (out / METRICS_LOG).open("a", encoding="utf-8")
    train_rows = prepared.train_rows
    n_batches = _batches_per_epoch(len(train_rows[0]), config.batch_size)
    if n_batches == 0:
        raise UsageError(f"the train split has {len(train_rows[0])} usable rows: too few for a batch")
    val_after = {math.ceil(n_batches * (k + 1) / config.val_per_epoch) - 1 for k in range(config.val_per_epoch)}

    def loss_of(files: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        queries, entities = variant.encode_rows(files, items)
        targets = prepared.targets(files, items)
        return batch_loss(config.loss, queries, entities, targets, items, logit_scale=logit_scale,
                          margin=config.margin, rescale=config.rescale)

    def checkpoint(path: Path, metrics: Dict[str, float]) -> Path:
        return ckpt.save_checkpoint(
            path, spec=prepared.spec, backbone=prepared.backbone_block, heads=variant.heads,
            labelset_hash=prepared.label_set.content_hash, text_encoder=variant.text_encoder_state(),
            extra=_extra(config, prepared, position, metrics, logit_scale.exp().item()),
        )

    def persist() -> Path:
        # last.pt, then the state: a crash between the two resumes from the previous state.
        last = checkpoint(out / LAST, position.history[-1] if position.history else {})
        save_state(out, config=plain, position=position, variant_state=variant.extra_state(),
                   optimizer=optimizer, logit_scale=logit_scale)
        return last

    def step(rows: np.ndarray) -> float:
        files = torch.from_numpy(train_rows[0][rows]).to(device)
        items = torch.from_numpy(train_rows[1][rows]).to(device)
        loss = loss_of(files, items)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            logit_scale.clamp_(0.0, math.log(100.0))  # CLIP's cap on the inverse temperature
        return loss.item()

    def after_batch(done: int, value: float) -> None:
        log.write(json.dumps({"kind": "train", "step": position.step, "epoch": position.epoch,
                              "batch": done, "loss": round(value, 6),
                              "logit_scale": round(logit_scale.exp().item(), 4),
                              "seconds": round(time.perf_counter() - started, 3)}) + "\n")
        if done in val_after:
            metrics = validate(variant, prepared.validation, prepared.label_set.qids, loss_of, config.batch_size)
            _record(position, metrics, config, log, out, checkpoint)
            persist()

    try:
        variant.train()
        run_epochs(position, epochs=config.epochs, rows=len(train_rows[0]), batch_size=config.batch_size,
                   n_batches=n_batches, seed=config.seed, max_steps=config.max_steps, step=step,
                   after_batch=after_batch, progress=config.progress)
    finally:
        log.close()
    return run_result(out, position, prepared.select, prepared.notes, started, persist())


def _truncate_log(path: Path, step: int) -> None:
    """Drop log lines written after the saved state (a crash after it): resuming logs them again."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line).get("step", 0) <= step]
    if len(kept) != len(lines):
        path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def _batches_per_epoch(rows: int, batch_size: int) -> int:
    # A last batch of one row has no in-batch negatives: it is dropped, others are kept.
    full, rest = divmod(rows, batch_size)
    return full + (1 if rest >= 2 else 0)


def _record(position: Position, metrics: Dict[str, float], config: TrainConfig, log: Any, out: Path,
            checkpoint: Any) -> None:
    """Log a validation pass, keep the best checkpoint, update early stopping."""
    value = metrics.get(config.select, float("nan"))
    entry = {"kind": "validation", "step": position.step, "epoch": position.epoch, **{k: round(v, 6) for k, v in metrics.items()}}
    log.write(json.dumps(entry) + "\n")
    log.flush()
    position.history.append(metrics)
    if record_pass(position, value, higher_is_better(config.select), config.patience):
        checkpoint(out / BEST, metrics)


def _extra(config: TrainConfig, prepared: Prepared, position: Position, metrics: Dict[str, float],
           scale: float) -> Dict[str, Any]:
    return {
        "train": asdict(config),
        "step": position.step,
        "epoch": position.epoch,
        "validation": dict(metrics),
        "logit_scale": scale,
        "data": prepared.data_info,
        "open_clip_config": prepared.open_clip_config,
        "device": str(prepared.device),
    }
