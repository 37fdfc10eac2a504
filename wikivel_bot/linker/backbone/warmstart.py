"""Start fast: the inference-ready backbone weights cached on disk, loaded without rework.

Building an open_clip model the ordinary way initialises every weight randomly (seconds of
``uniform_`` for ViT-B-32), then loads or converts the real ones, then fuses reparameterizable
blocks and casts to bf16 — the same work on every start. Here the first start saves the
result (every parameter and buffer, after reparameterization and in the storage precision)
under ``<cache_dir>/backbones/``, and later starts build the module skeleton on the ``meta``
device (no memory, no initialisation) and attach the cached tensors, memory-mapped.

The cache key covers the architecture config, the weights' identity (tag, file fingerprint
or random seed), the storage dtype and the torch/open_clip versions; anything else (a text
tower from a checkpoint, CUDA, weights still to be downloaded) takes the ordinary path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, Optional

import open_clip
import torch

from wikivel_bot.linker.backbone.encoders import (
    Backbone,
    LazyTokenizer,
    _quiet_open_clip,
    config_digest,
    file_stem,
    load_backbone,
    register_model_file,
    resolve_device,
)
from wikivel_bot.linker.backbone.fastpath import reparameterize
from wikivel_bot.linker.backbone.weights import resolve_weights

log = logging.getLogger(__name__)

CACHE_FORMAT = 1


def storage_dtype(precision: str) -> torch.dtype:
    """What the cache holds for a precision: bf16 weights for bf16, fp32 otherwise (int8 is
    quantized from fp32 at load; its packed weights are not a portable format)."""
    return torch.bfloat16 if precision == "bf16" else torch.float32


def load_cached_backbone(
    model: str, pretrained: str, weights: str, device: str, threads: int, cache_dir: str, precision: str
) -> Backbone:
    """A backbone whose weights are reparameterized and stored in ``precision``'s dtype.

    Same arguments as ``encoders.load_backbone`` plus the cache directory and the resolved
    precision. Falls back to the ordinary path (and fills the cache) when nothing is cached.
    """
    torch_device = resolve_device(device)
    name = register_model_file(model)
    if torch_device.type != "cpu" or not cache_dir:
        return load_backbone(model, pretrained, weights, device, threads)
    source = resolve_weights(name, pretrained, weights)
    if not source.random and source.preprocess is None:
        # Weights that will be downloaded (no local file yet): the ordinary path.
        return load_backbone(model, pretrained, weights, device, threads)
    config = open_clip.get_model_config(name)
    dtype = storage_dtype(precision)
    key = hashlib.sha256(json.dumps({
        "format": CACHE_FORMAT, "config": config, "weights": source.identity, "dtype": str(dtype),
        "torch": torch.__version__, "open_clip": open_clip.__version__, "quick_gelu": source.quick_gelu,
    }, sort_keys=True, default=str).encode()).hexdigest()[:20]
    path = Path(cache_dir) / "backbones" / f"{file_stem(name)}-{str(dtype).split('.')[-1]}-{key}.pt"
    if threads > 0:
        torch.set_num_threads(threads)
    if path.is_file():
        loaded = _from_cache(path, name, source, dtype, pretrained, config)
        if loaded is not None:
            return loaded
    backbone = load_backbone(model, pretrained, weights, device, threads)
    reparameterize(backbone)
    backbone.model = backbone.model.to(dtype)
    _save(path, backbone.model)
    return backbone


def _from_cache(path: Path, name: str, source: Any, dtype: torch.dtype, pretrained: str, config: Dict) -> Optional[Backbone]:
    kwargs: Dict[str, Any] = dict(source.preprocess or {})
    if source.quick_gelu:
        kwargs["force_quick_gelu"] = True
    try:
        tensors = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        with torch.device("meta"), _quiet_open_clip():
            net, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=None, device="meta", **kwargs)
        skeleton = Backbone(net, preprocess, None, name, "", "", True, torch.device("meta"), 0, "")
        reparameterize(skeleton)
        net = skeleton.model.to(dtype)
        if not _assign(net, tensors):
            log.info("backbone cache %s does not fit the model; rebuilding", path)
            return None
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        log.info("backbone cache %s unusable (%s); rebuilding", path, exc)
        return None
    net.eval()
    return Backbone(
        model=net, preprocess=preprocess, tokenizer=LazyTokenizer(name), model_name=name,
        pretrained="" if source.random else pretrained, weights=source.identity, random_weights=source.random,
        device=torch.device("cpu"), embed_dim=int(config["embed_dim"]), config_digest=config_digest(config),
    )


def _assign(net: Any, tensors: Dict[str, torch.Tensor]) -> bool:
    """Attach ``tensors`` (every parameter and buffer by name) to the meta skeleton ``net``."""
    wanted = {n for n, _ in net.named_parameters()} | {n for n, _ in net.named_buffers()}
    if wanted != set(tensors):
        return False
    for full, tensor in tensors.items():
        module_name, _, attr = full.rpartition(".")
        module = net.get_submodule(module_name) if module_name else net
        if attr in module._parameters:
            if module._parameters[attr].shape != tensor.shape:
                return False
            module._parameters[attr] = torch.nn.Parameter(tensor, requires_grad=False)
        else:
            if module._buffers[attr].shape != tensor.shape:
                return False
            module._buffers[attr] = tensor
    return not any(t.is_meta for t in list(net.parameters()) + list(net.buffers()))


def _save(path: Path, net: Any) -> None:
    tensors = {n: t.detach().contiguous() for n, t in net.named_parameters()}
    tensors.update({n: t.detach().contiguous() for n, t in net.named_buffers()})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save(tensors, tmp)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache only costs the next start its speed
        log.info("cannot write the backbone cache %s: %s", path, exc)

