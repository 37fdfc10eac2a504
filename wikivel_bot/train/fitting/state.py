"""Resuming a training run: what is saved beside the checkpoints, and the early-stopping state.

``<out>/last.pt`` is an ordinary self-describing checkpoint (the linker can use it);
``<out>/train-state.pt`` holds what only the trainer needs to go on exactly where it
stopped: optimizer moments, the temperature, torch's RNG state (dropout), the position
(epoch, next batch, step) and the early-stopping record. Both are written atomically, the
state last, so a crash between them resumes from the previous state.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import torch

from wikivel_bot.errors import UsageError

# The checkpoints every run writes: the best validation pass, and the latest position.
BEST = "best.pt"
LAST = "last.pt"
STATE = "train-state.pt"
STATE_FORMAT = "wikivel-train-state"
# Settings that may change between an interrupted run and its resumption (how long to go
# on, how to report); every other setting must match or the result would not be one run.
MAY_CHANGE = ("epochs", "max_steps", "patience", "progress", "resume", "device", "threads", "cache_dir",
              "out", "data", "labels", "images")


@dataclass
class Position:
    """Where training is: the next batch to run and the early-stopping record.

    :param epoch: current epoch (0-based).
    :param batch: next batch index within the epoch.
    :param step: optimizer steps done.
    :param best: best value of the watched metric so far (None before the first pass).
    :param best_step: step of that value.
    :param bad_passes: validation passes since the last improvement.
    :param stopped: why training ended ('' while it goes on).
    """

    epoch: int = 0
    batch: int = 0
    step: int = 0
    best: Optional[float] = None
    best_step: int = 0
    bad_passes: int = 0
    stopped: str = ""
    history: list = field(default_factory=list)


@dataclass
class TrainResult:
    """What a run produced (the heads' ``train`` and the cascade's alike)."""

    out: Path
    best: Optional[Path]
    last: Path
    position: Position
    best_metrics: Dict[str, float] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    seconds: float = 0.0


def run_result(out: Path, position: Position, select: str, notes: List[str], started: float,
               last: Optional[Path] = None) -> TrainResult:
    """The :class:`TrainResult` of a run in ``out`` that watched ``select``; its best pass's
    metrics are the history entry holding the best value.

    :param started: ``time.perf_counter()`` at the run's start.
    """
    best = out / BEST
    best_metrics: Dict[str, float] = {}
    if position.history and position.best is not None:
        best_metrics = next((m for m in position.history if m.get(select) == position.best), {})
    return TrainResult(out=out, best=best if best.exists() else None, last=last or out / LAST, position=position,
                       best_metrics=best_metrics, notes=notes, seconds=time.perf_counter() - started)


def improved(value: float, best: Optional[float], higher: bool) -> bool:
    """Whether ``value`` beats ``best`` (strictly)."""
    if best is None:
        return True
    return value > best if higher else value < best


def record_pass(position: Position, value: float, higher: bool, patience: int) -> bool:
    """Note a validation pass for early stopping; True when it is the best so far (keep it).

    After ``patience`` passes without improvement ``position.stopped`` becomes ``early_stopping``.
    """
    if improved(value, position.best, higher):
        position.best, position.best_step, position.bad_passes = value, position.step, 0
        return True
    position.bad_passes += 1
    if position.bad_passes >= patience:
        position.stopped = "early_stopping"
    return False


def save_state(out_dir: Path, *, config: Mapping[str, Any], position: Position, variant_state: Mapping[str, Any],
               optimizer: torch.optim.Optimizer, logit_scale: torch.Tensor) -> Path:
    """Write ``train-state.pt`` atomically."""
    doc = {
        "format": STATE_FORMAT,
        "config": dict(config),
        "position": asdict(position),
        "variant": {k: v.detach().cpu() for k, v in variant_state.items()},
        "optimizer": optimizer.state_dict(),
        "logit_scale": logit_scale.detach().cpu(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    target = Path(out_dir) / STATE
    handle, tmp = tempfile.mkstemp(dir=out_dir, prefix=STATE, suffix=".tmp")
    os.close(handle)
    try:
        torch.save(doc, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def load_state(out_dir: Path, config: Mapping[str, Any]) -> Dict[str, Any]:
    """Read ``train-state.pt`` and check it belongs to the same run.

    :raises UsageError: no state to resume, or settings that differ (named).
    """
    path = Path(out_dir) / STATE
    if not path.is_file():
        raise UsageError(f"nothing to resume in {out_dir}: no {STATE} (start without --resume)")
    doc = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise UsageError(f"{path} is not a wikivel training state")
    saved = doc["config"]
    differ = sorted(k for k in set(saved) | set(config)
                    if k not in MAY_CHANGE and saved.get(k) != config.get(k))
    if differ:
        shown = ", ".join(f"{k}: {saved.get(k)!r} then, {config.get(k)!r} now" for k in differ[:4])
        raise UsageError(f"cannot resume {out_dir} with other settings ({shown}); use the same options or a new --out")
    return doc


def restore_rng(doc: Mapping[str, Any]) -> None:
    """Put torch's RNGs back where the saved run had them (dropout continues identically)."""
    torch.set_rng_state(doc["torch_rng"])
    if torch.cuda.is_available() and doc.get("cuda_rng"):
        torch.cuda.set_rng_state_all(doc["cuda_rng"])


def position_of(doc: Mapping[str, Any]) -> Position:
    """The saved :class:`Position`."""
    return Position(**doc["position"])
