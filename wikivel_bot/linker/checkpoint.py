"""Self-describing head checkpoints (as in nanoGPT's ``ckpt.pt``).

A checkpoint is one ``torch.save`` file holding plain data and tensors only (so it loads
with ``weights_only=True``)::

    {
      "format": "wikivel-linker-checkpoint", "format_version": 1,
      "linker": "naive-mlp",                      # registry name it was trained as
      "spec": {...},                              # the linker config it was trained with
      "model_args": {"architecture": "naive", "embed_dim": 512, "head": {...}},
      "open_clip": {"model": "ViT-B-32", "pretrained": "laion2b_s34b_b79k",
                    "random_weights": false, "weights": "tag:...", "config_digest": "..."},
      "labelset_hash": "...",                     # LabelSetView.content_hash
      "heads": {state dict of NaiveHeads / FusionHeads},
      "text_encoder": {state dict of the text tower} or None,   # naive-te only
      "created": "2024-...Z", "extra": {...}      # whatever the trainer wants to remember
    }

The heads are rebuilt from ``model_args`` alone; a checkpoint made for another linker,
backbone or label set is refused with a message saying which and what to do.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import torch
from torch import nn

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.heads import build_heads
from wikivel_bot.linker.spec import LinkerSpec

FORMAT = "wikivel-linker-checkpoint"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint; see the module docstring for the fields."""

    path: str
    digest: str
    linker: str
    spec: Mapping[str, Any]
    model_args: Mapping[str, Any]
    open_clip: Mapping[str, Any]
    labelset_hash: str
    heads: Mapping[str, torch.Tensor]
    text_encoder: Optional[Mapping[str, torch.Tensor]] = None
    created: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def build_heads(self) -> nn.Module:
        """The head module, rebuilt from the checkpoint alone, weights loaded, in eval mode."""
        args = self.model_args
        heads = build_heads(str(args["architecture"]), int(args["embed_dim"]), dict(args.get("head", {})))
        if heads is None:
            raise LinkerError(f"{self.path}: architecture {args['architecture']!r} has no head")
        try:
            heads.load_state_dict(dict(self.heads))
        except RuntimeError as exc:
            raise LinkerError(f"{self.path}: head weights do not match its model_args: {exc}") from None
        return heads.eval()


def backbone_info(model: str, pretrained: str, random_weights: bool, weights: str, config_digest: str, embed_dim: int) -> Dict[str, Any]:
    """The ``open_clip`` block of a checkpoint (use the attributes of an ``encoders.Backbone``)."""
    return {
        "model": model,
        "pretrained": "" if random_weights else pretrained,
        "random_weights": bool(random_weights),
        "weights": weights,
        "config_digest": config_digest,
        "embed_dim": int(embed_dim),
    }


def save_checkpoint(
    path: str | Path,
    *,
    spec: LinkerSpec,
    backbone: Mapping[str, Any],
    heads: nn.Module,
    labelset_hash: str,
    text_encoder: Optional[Mapping[str, torch.Tensor]] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> Path:
    """Write a checkpoint atomically (a crash never leaves half a file under ``path``).

    :param path: target file.
    :param spec: the linker variant the heads belong to.
    :param backbone: :func:`backbone_info` of the backbone the heads were trained on.
    :param heads: the trained ``NaiveHeads`` / ``FusionHeads``.
    :param labelset_hash: content hash of the label set trained for.
    :param text_encoder: text tower state (``text_tower.text_tower_state``) for naive-te.
    :param extra: training metadata (epochs, metrics, data hashes...): plain data only.
    """
    if "text_encoder" in spec.trainable and text_encoder is None:
        raise LinkerError(f"linker {spec.name} trains the text encoder: pass its weights (text_encoder=...)")
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "linker": spec.name,
        "spec": spec.as_dict(),
        "model_args": {"architecture": spec.architecture, "embed_dim": int(backbone["embed_dim"]), "head": dict(spec.head)},
        "open_clip": dict(backbone),
        "labelset_hash": labelset_hash,
        "heads": {k: v.detach().cpu() for k, v in heads.state_dict().items()},
        "text_encoder": None if text_encoder is None else {k: v.detach().cpu() for k, v in text_encoder.items()},
        "created": format_timestamp(),
        "extra": dict(extra or {}),
    }
    return save_doc(doc, path)


def save_doc(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write a checkpoint document atomically (a temporary file, then a rename), so a crash
    mid-write never leaves a half checkpoint under the real name. Shared by every kind of
    checkpoint (``cascade.checkpoint`` too)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(handle)
    try:
        torch.save(dict(doc), tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def read_doc(path: Path) -> Any:
    """The document in a checkpoint file (tensors and plain data only; no code is unpickled).

    :raises LinkerError: missing or unreadable file.
    """
    if not path.is_file():
        raise LinkerError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises a zoo of types for a damaged or foreign file
        raise LinkerError(f"{path}: not a readable checkpoint: {str(exc).splitlines()[0]}") from None


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Read a checkpoint (tensors and plain data only; no code is unpickled).

    :raises LinkerError: missing file, not a wikivel checkpoint, a newer format.
    """
    path = Path(path).expanduser()
    doc = read_doc(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LinkerError(f"{path}: not a wikivel-bot linker checkpoint (no format marker)")
    if int(doc.get("format_version", 0)) > FORMAT_VERSION:
        raise LinkerError(f"{path}: checkpoint format {doc['format_version']} is newer than this wikivel-bot reads")
    return Checkpoint(
        path=str(path),
        digest=file_digest(path),
        linker=str(doc["linker"]),
        spec=doc["spec"],
        model_args=doc["model_args"],
        open_clip=doc["open_clip"],
        labelset_hash=str(doc["labelset_hash"]),
        heads=doc["heads"],
        text_encoder=doc.get("text_encoder"),
        created=str(doc.get("created", "")),
        extra=doc.get("extra") or {},
    )


def check_backbone(checkpoint: Checkpoint, spec: LinkerSpec, backbone: Mapping[str, Any]) -> None:
    """Refuse a checkpoint trained for another linker variant or another backbone.

    A local weights file counts as the tag it claims (``linker.pretrained``): it is how an
    offline machine loads the same weights.

    :raises LinkerError: naming what differs and what to do.
    """
    where = checkpoint.path
    if checkpoint.model_args.get("architecture") != spec.architecture:
        raise LinkerError(
            f"{where} holds a {checkpoint.model_args.get('architecture')} head (trained as "
            f"{checkpoint.linker!r}); linker {spec.name!r} needs a {spec.architecture} head"
        )
    if "text_encoder" in spec.trainable and not checkpoint.text_encoder:
        raise LinkerError(f"{where} has no text encoder weights; linker {spec.name!r} needs them")
    mine = (str(backbone["model"]), str(backbone["pretrained"]), bool(backbone["random_weights"]))
    theirs = (str(checkpoint.open_clip.get("model", "")), str(checkpoint.open_clip.get("pretrained", "")),
              bool(checkpoint.open_clip.get("random_weights", False)))
    if mine != theirs or int(checkpoint.open_clip.get("embed_dim", -1)) != int(backbone["embed_dim"]):
        raise LinkerError(
            f"{where} was trained on backbone {_backbone_name(*theirs)}, but this linker uses "
            f"{_backbone_name(*mine)}; use the matching --model/--weights or train a head for this backbone"
        )
    if checkpoint.open_clip.get("config_digest") not in (None, "", backbone.get("config_digest")):
        raise LinkerError(f"{where} was trained on a different {mine[0]} model config; retrain the head")


def check_labelset(checkpoint: Checkpoint, labelset_hash: str) -> None:
    """Refuse a checkpoint trained for another label set.

    :raises LinkerError: with both hashes.
    """
    if checkpoint.labelset_hash != labelset_hash:
        raise LinkerError(
            f"{checkpoint.path} was trained for label set {checkpoint.labelset_hash[:12]}, but the label set "
            f"in use is {labelset_hash[:12]}; use the label set it was trained with (--labels) or train a head for this one"
        )


def file_digest(path: Path) -> str:
    """sha256 of a file, hex (checkpoints are small enough to hash whole)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _backbone_name(model: str, pretrained: str, random_weights: bool) -> str:
    return f"{model} with random weights" if random_weights else f"{model}/{pretrained or '?'}"
