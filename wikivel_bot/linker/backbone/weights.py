"""Where the CLIP backbone's weights come from: a pretrained tag, a local file, or ``random``.

open_clip downloads a tag's weights from the Hugging Face Hub on first use. Offline, its
download retries for about a minute before failing with a generic message, so we look in the
cache first, probe the Hub once with a short timeout, and fail with one message that says how
to get the weights onto the machine.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from wikivel_bot.errors import LinkerError

RANDOM = "random"
# Seed of ``--weights random``: fixed, so two processes build the same model and share the
# label index cache (and a head trained on a random backbone still fits it).
RANDOM_SEED = 0
HUB_HOST = "huggingface.co"
RANDOM_IDENTITY = f"random-seed{RANDOM_SEED}"


@dataclass(frozen=True)
class WeightsSource:
    """Resolved weights for ``open_clip.create_model_and_transforms``.

    :param pretrained: what to pass as ``pretrained`` (a file path, a tag, or None).
    :param identity: a short stable id for cache keys and Candidate versions.
    :param random: no weights at all (smoke runs); every output must say so.
    :param preprocess: image mean/std/interpolation/resize mode of the tag, applied when a
        cached file is loaded by path (a path alone carries no preprocessing config).
    :param quick_gelu: the tag was trained with QuickGELU activations.
    """

    pretrained: Optional[str]
    identity: str
    random: bool = False
    preprocess: Optional[Dict[str, Any]] = None
    quick_gelu: bool = False


def how_to_get(model: str, tag: str) -> str:
    """The instructions printed when weights are missing."""
    return (
        f"On a machine with internet run: python -c \"import open_clip; "
        f"open_clip.create_model_and_transforms('{model}', pretrained='{tag}')\" "
        f"(fills the Hugging Face cache, ~/.cache/huggingface, which you can copy here), or "
        f"download the weights file and pass --weights PATH (setting linker.weights). "
        f"--weights random runs without weights (smoke test; suggestions are meaningless)."
    )


def resolve_weights(model: str, pretrained: str, weights: str, *, hub_timeout_s: float = 3.0) -> WeightsSource:
    """Decide where the backbone's weights come from, without downloading anything yet.

    :param model: open_clip architecture name (``ViT-B-32``).
    :param pretrained: the pretrained tag (``laion2b_s34b_b79k``); '' means none.
    :param weights: '' (use the tag), ``random``, or a local file path.
    :param hub_timeout_s: how long to wait when probing whether the Hub is reachable.
    :raises LinkerError: a missing weights file, an unknown tag, or a tag neither cached nor
        downloadable — with instructions.
    """
    import open_clip

    if weights == RANDOM:
        return WeightsSource(None, RANDOM_IDENTITY, random=True)
    tag_cfg = open_clip.get_pretrained_cfg(model, pretrained) if pretrained else {}
    if weights:
        path = Path(weights).expanduser()
        if not path.is_file():
            raise LinkerError(f"weights file not found: {path}. " + how_to_get(model, pretrained or "TAG"))
        check_weights_file(path)
        return WeightsSource(
            str(path), file_identity(path), preprocess=_preprocess_of(tag_cfg),
            quick_gelu=bool(tag_cfg.get("quick_gelu", False)),
        )
    if not pretrained:
        raise LinkerError(
            f"no weights configured for {model}: set linker.pretrained to a tag, --weights PATH, "
            f"or --weights random for a smoke run"
        )
    if not tag_cfg:
        tags = open_clip.list_pretrained_tags_by_model(model)
        known = ", ".join(tags) if tags else "none"
        raise LinkerError(f"unknown pretrained tag {pretrained!r} for {model} (known tags: {known})")
    identity = tag_identity(model, pretrained)
    cached = cached_tag_file(tag_cfg)
    if cached is not None:
        return WeightsSource(
            cached, identity, preprocess=_preprocess_of(tag_cfg), quick_gelu=bool(tag_cfg.get("quick_gelu", False))
        )
    if os.environ.get("HF_HUB_OFFLINE") not in (None, "", "0") or not hub_reachable(hub_timeout_s):
        raise LinkerError(
            f"the weights of {model}/{pretrained} are not in the local cache and {HUB_HOST} "
            f"cannot be reached. " + how_to_get(model, pretrained)
        )
    return WeightsSource(pretrained, identity)


def weights_identity(model: str, pretrained: str, weights: str) -> Optional[str]:
    """The identity :func:`resolve_weights` gives these settings, worked out without open_clip
    or the network (for cache keys read at start-up); None when only ``resolve_weights`` can
    tell (no weights configured, a missing file — it also says what is wrong).

    :param model: architecture name (not a config path).
    """
    if weights == RANDOM:
        return RANDOM_IDENTITY
    if weights:
        path = Path(weights).expanduser()
        return file_identity(path) if path.is_file() else None
    return tag_identity(model, pretrained) if pretrained else None


def tag_identity(model: str, pretrained: str) -> str:
    return f"tag:{model}:{pretrained}"


def file_identity(path: Path) -> str:
    return f"file:{file_fingerprint(path)}"


def check_weights_file(path: Path) -> None:
    """Refuse a file that cannot be weights before torch tries to unpickle it (a text file
    given by mistake ends in a KeyError deep inside ``torch.load`` otherwise).

    Accepted by their first bytes: a zip archive (``torch.save`` since PyTorch 1.6, and
    ``.npz``), a pickle (older ``torch.save``), or safetensors (an 8-byte header length then
    a JSON header).

    :raises LinkerError: unreadable, empty, or none of these formats.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(9)
    except OSError as exc:
        raise LinkerError(f"cannot read the weights file {path}: {exc.strerror or exc}") from None
    if not head:
        raise LinkerError(f"the weights file {path} is empty")
    is_zip = head[:4] == b"PK\x03\x04"
    is_pickle = head[:1] == b"\x80" and 2 <= head[1] <= 5 if len(head) > 1 else False
    is_safetensors = len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 0
    if not (is_zip or is_pickle or is_safetensors):
        raise LinkerError(
            f"{path} is not a weights file (not a PyTorch checkpoint, .npz or safetensors): "
            "give the open_clip checkpoint (.pt, .bin, .safetensors) or --weights random"
        )


def cached_tag_file(tag_cfg: Dict[str, Any]) -> Optional[str]:
    """The local file of a tag's weights when already downloaded, else None (no network)."""
    hub = tag_cfg.get("hf_hub", "")
    if hub:
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # pragma: no cover - open_clip depends on it
            return None
        # open_clip's form: "org/repo/" (default file names) or "org/repo/file.bin".
        model_id, filename = os.path.split(hub)
        stem = filename.rsplit(".", 1)[0] if filename else ""
        names = [stem + ".safetensors", filename] if filename else [
            "open_clip_model.safetensors", "open_clip_pytorch_model.bin",
        ]
        for name in names:
            found = try_to_load_from_cache(model_id, name)
            if isinstance(found, str) and os.path.isfile(found):
                return found
        return None
    url = tag_cfg.get("url", "")
    if url:
        target = Path(os.path.expanduser("~/.cache/clip")) / os.path.basename(url)
        return str(target) if target.is_file() else None
    return None


def hub_reachable(timeout_s: float) -> bool:
    """One TCP connection attempt to the Hub; False on any network error."""
    try:
        with socket.create_connection((HUB_HOST, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def file_fingerprint(path: Path) -> str:
    """A cheap stable id of a large file: size, and hashes of its first and last MiB."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(1 << 20))
        if size > 2 << 20:
            handle.seek(-(1 << 20), os.SEEK_END)
            digest.update(handle.read(1 << 20))
    return f"{path.name}:{digest.hexdigest()[:16]}"


def _preprocess_of(tag_cfg: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if not tag_cfg:
        return None
    keys = {"mean": "image_mean", "std": "image_std", "interpolation": "image_interpolation",
            "resize_mode": "image_resize_mode"}
    return {arg: tag_cfg[key] for key, arg in keys.items() if key in tag_cfg}
