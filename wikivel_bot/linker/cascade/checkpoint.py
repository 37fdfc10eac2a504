"""Self-describing cascade checkpoints: the pair model, its first stage, the verifier's map.

One ``torch.save`` file of plain data and tensors (loads with ``weights_only=True``)::

    {
      "format": "wikivel-cascade-checkpoint", "format_version": 1,
      "linker": "cascade", "spec": {...},                 # the cascade config trained with
      "pair_args": {"width": 64, ...}, "embed_dim": 512,
      "open_clip": {...},                                 # as in linker checkpoints
      "labelset_hash": "...",
      "pair": {state dict of PairModel},
      "first_stage": {"linker": "naive-mlp", "checkpoint": {a whole linker checkpoint} or None},
      "candidates": 50, "text_tokens": 32,                # what the pair model was trained on
      "text_order": ["name", "categories", "description"], # the file text's parts, in order
      "item_images": 412,                                 # label-set items whose P18 image it read
      "calibration": {"method": "platt", "a": ..., "b": ...} or None,
      "verification": {"accuracy": ..., "roc_auc": ..., "ece": ...},
      "created": "...Z", "extra": {...}
    }

The first stage's own checkpoint is embedded whole, so this one file rebuilds the cascade.
A checkpoint for another label set or backbone is refused with a message saying which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import torch

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.core.verification import Calibration
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker import checkpoint as ckpt
from wikivel_bot.linker.cascade.pair import PairModel, build_pair_model
from wikivel_bot.linker.cascade.text import LEGACY_ORDER, TEXT_ORDER, check_order

FORMAT = "wikivel-cascade-checkpoint"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class CascadeCheckpoint:
    """A loaded cascade checkpoint; see the module docstring."""

    path: str
    digest: str
    spec: Mapping[str, Any]
    pair_args: Mapping[str, Any]
    embed_dim: int
    open_clip: Mapping[str, Any]
    labelset_hash: str
    pair: Mapping[str, torch.Tensor]
    first_stage_linker: str
    first_stage: Optional[Mapping[str, Any]]
    candidates: int
    text_tokens: int
    calibration: Optional[Calibration] = None
    # The order of the file text's parts in training (checkpoints without one: the old order).
    text_order: Tuple[str, ...] = LEGACY_ORDER
    verification: Mapping[str, Any] = field(default_factory=dict)
    created: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Label-set items whose P18 image embedding the pair model read in training (and its
    # calibration was fitted with); None: not recorded (checkpoints before the record).
    item_images: Optional[int] = None

    @property
    def fitted_with_item_images(self) -> bool:
        """Whether the pair model and its calibration saw item images: the verifier then
        needs them too. Unrecorded counts as yes: training has always read every item image
        its image store held."""
        return self.item_images is None or self.item_images > 0

    def build_pair(self) -> PairModel:
        """The pair model rebuilt from the checkpoint alone, weights loaded, in eval mode."""
        model = build_pair_model(self.embed_dim, self.pair_args)
        try:
            model.load_state_dict(dict(self.pair))
        except RuntimeError as exc:
            raise LinkerError(f"{self.path}: pair model weights do not match its pair_args: {exc}") from None
        return model.eval()

    def first_stage_checkpoint(self) -> Optional[ckpt.Checkpoint]:
        """The embedded first-stage linker checkpoint (None: the first stage has no head)."""
        doc = self.first_stage
        if not doc:
            return None
        return ckpt.Checkpoint(
            path=f"{self.path}#first_stage", digest=self.digest, linker=str(doc["linker"]), spec=doc["spec"],
            model_args=doc["model_args"], open_clip=doc["open_clip"], labelset_hash=str(doc["labelset_hash"]),
            heads=doc["heads"], text_encoder=doc.get("text_encoder"), created=str(doc.get("created", "")),
            extra=doc.get("extra") or {},
        )


def first_stage_doc(path: str | Path) -> Dict[str, Any]:
    """A linker checkpoint file as the plain document to embed (validated by loading it first)."""
    ckpt.load_checkpoint(path)
    doc = torch.load(Path(path).expanduser(), map_location="cpu", weights_only=True)
    return dict(doc)


def save_cascade_checkpoint(
    path: str | Path, *, spec: Mapping[str, Any], pair: PairModel, pair_args: Mapping[str, Any],
    backbone: Mapping[str, Any], labelset_hash: str, first_stage_linker: str,
    first_stage: Optional[Mapping[str, Any]], candidates: int, text_tokens: int,
    calibration: Optional[Calibration] = None, verification: Optional[Mapping[str, Any]] = None,
    extra: Optional[Mapping[str, Any]] = None, text_order: Sequence[str] = TEXT_ORDER,
    item_images: Optional[int] = None,
) -> Path:
    """Write a cascade checkpoint atomically (see the module docstring for the fields)."""
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "linker": str(spec.get("name", "cascade")),
        "spec": dict(spec),
        "pair_args": dict(pair_args),
        "embed_dim": int(backbone["embed_dim"]),
        "open_clip": dict(backbone),
        "labelset_hash": labelset_hash,
        "pair": {k: v.detach().cpu() for k, v in pair.state_dict().items()},
        "first_stage": {"linker": first_stage_linker, "checkpoint": dict(first_stage) if first_stage else None},
        "candidates": int(candidates),
        "text_tokens": int(text_tokens),
        "item_images": None if item_images is None else int(item_images),
        "text_order": list(check_order(text_order)),
        "calibration": calibration.as_dict() if calibration is not None else None,
        "verification": dict(verification or {}),
        "created": format_timestamp(),
        "extra": dict(extra or {}),
    }
    return ckpt.save_doc(doc, path)


def is_cascade_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` holds a cascade checkpoint (False for linker checkpoints and junk)."""
    try:
        doc = torch.load(Path(path).expanduser(), map_location="cpu", weights_only=True)
    except Exception:  # any unreadable file is simply not one
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def load_cascade_checkpoint(path: str | Path) -> CascadeCheckpoint:
    """Read a cascade checkpoint.

    :raises LinkerError: missing, unreadable, another kind of file (a plain linker
        checkpoint says so), a newer format.
    """
    path = Path(path).expanduser()
    doc = ckpt.read_doc(path)
    if isinstance(doc, dict) and doc.get("format") == ckpt.FORMAT:
        raise LinkerError(f"{path} is a {doc.get('linker')} checkpoint, not a cascade one: train one with "
                          f"`wikivel-bot train --variant cascade --first-stage {path}`")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LinkerError(f"{path}: not a wikivel-bot cascade checkpoint (no format marker)")
    if int(doc.get("format_version", 0)) > FORMAT_VERSION:
        raise LinkerError(f"{path}: cascade checkpoint format {doc['format_version']} is newer than this wikivel-bot reads")
    first = doc.get("first_stage") or {}
    calibration = doc.get("calibration")
    return CascadeCheckpoint(
        path=str(path), digest=ckpt.file_digest(path), spec=doc["spec"], pair_args=doc["pair_args"],
        embed_dim=int(doc["embed_dim"]), open_clip=doc["open_clip"], labelset_hash=str(doc["labelset_hash"]),
        pair=doc["pair"], first_stage_linker=str(first.get("linker", "")), first_stage=first.get("checkpoint"),
        candidates=int(doc.get("candidates", 50)), text_tokens=int(doc.get("text_tokens", 32)),
        text_order=_text_order(path, doc.get("text_order")),
        calibration=Calibration.from_dict(calibration) if calibration else None,
        verification=doc.get("verification") or {}, created=str(doc.get("created", "")), extra=doc.get("extra") or {},
        item_images=None if doc.get("item_images") is None else int(doc["item_images"]),
    )


def _text_order(path: Path, found: Any) -> Tuple[str, ...]:
    """The checkpoint's file-text order (:data:`LEGACY_ORDER` when it predates the field)."""
    if found is None:
        return LEGACY_ORDER
    try:
        return check_order(found)
    except LinkerError as exc:
        raise LinkerError(f"{path}: {exc}") from None


def check_labelset(checkpoint: CascadeCheckpoint, labelset_hash: str) -> None:
    """Refuse a cascade checkpoint trained for another label set.

    :raises LinkerError: with both hashes.
    """
    if checkpoint.labelset_hash != labelset_hash:
        raise LinkerError(
            f"{checkpoint.path} was trained for label set {checkpoint.labelset_hash[:12]}, but the label set "
            f"in use is {labelset_hash[:12]}; use the label set it was trained with (--labels) or train a cascade "
            f"for this one"
        )


def check_backbone(checkpoint: CascadeCheckpoint, backbone: Mapping[str, Any]) -> None:
    """Refuse a cascade checkpoint trained on another backbone.

    :raises LinkerError: naming both backbones.
    """
    theirs = checkpoint.open_clip
    keys = ("model", "pretrained", "random_weights", "embed_dim")
    if any(str(theirs.get(k)) != str(backbone.get(k)) for k in keys):
        raise LinkerError(
            f"{checkpoint.path} was trained on backbone {theirs.get('model')}/{theirs.get('pretrained') or 'random'}, "
            f"but this linker uses {backbone.get('model')}/{backbone.get('pretrained') or 'random'}; use the matching "
            f"--model/--weights or train a cascade for this backbone"
        )
    if theirs.get("config_digest") not in (None, "", backbone.get("config_digest")):
        raise LinkerError(f"{checkpoint.path} was trained on a different {backbone.get('model')} model config")
