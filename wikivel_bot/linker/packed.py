"""bf16 MLP weights kept in oneDNN's own blocked layout, so no forward pass re-lays them out.

On CPU a bf16 ``nn.Linear`` goes to oneDNN, which first reorders the plain (out, in) weight
into the tiled layout its AMX / AVX512-BF16 kernels read — on every call, for every layer. A
transformer block's MLP holds two thirds of its weights. :class:`PackedLinear` keeps the
reordered weight (``torch.ops.mkldnn._reorder_linear_weight``) and multiplies with it
(``_linear_pointwise``, the op PyTorch's own compiler emits for frozen bf16 linears): the same
products, bit for bit (``tests/test_linker_packed.py``), without the per-call reorder. About
4 % of the ViT-B-32 image tower on one core of an AMX Xeon (``bench/linker.py``).

The packed weight is an opaque oneDNN tensor that TorchScript cannot save. The module is
scripted with the plain weight as a fallback: an exported tower (``tower.py``) is traced and
saved with ``packed`` unset (:func:`unpacked`), keeps ``packed`` and ``weight`` as attributes
through freezing (:func:`preserved_attributes`) and is packed again after loading
(:func:`repack`). Only the MLP linears are packed: attention's projections live inside
``nn.MultiheadAttention``'s fused path, which takes plain weights.
"""

# No ``from __future__ import annotations``: TorchScript reads PackedLinear's annotations.
import contextlib
import logging
import warnings
from typing import Any, Iterator, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

# The row count oneDNN tunes the packed layout for: a batch of 32 images of 50 tokens.
# Any other row count works (and gives the same products).
ROWS_HINT = 1600
NAME = "PackedLinear"


class PackedLinear(torch.nn.Module):
    """An ``nn.Linear`` (same ``weight`` and ``bias`` parameters, same state dict) whose
    forward uses the packed weight when there is one.

    :param linear: the bf16 layer to take the parameters from.
    """

    packed: Optional[torch.Tensor]

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.weight = linear.weight
        self.bias = linear.bias
        self.packed = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self.packed
        if packed is None:
            return F.linear(x, self.weight, self.bias)
        # TorchScript's type for the op's Scalar?[] argument is this union.
        no_scalars = torch.jit.annotate(List[Optional[Union[int, float, complex]]], [])
        return torch.ops.mkldnn._linear_pointwise(x, packed, self.bias, "none", no_scalars, "")


_SUPPORTED: List[bool] = []


def supported() -> bool:
    """Whether this torch build and CPU can pack bf16 weights (tried once on a tiny layer)."""
    if not _SUPPORTED:
        try:
            weight = torch.randn(8, 16).to(torch.bfloat16)
            x = torch.randn(3, 16).to(torch.bfloat16)
            packed = torch.ops.mkldnn._reorder_linear_weight(weight, 3)
            got = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
            _SUPPORTED.append(bool(torch.equal(got, F.linear(x, weight))))
        except (AttributeError, RuntimeError) as exc:
            log.debug("bf16 weight packing unavailable: %s", exc)
            _SUPPORTED.append(False)
    return _SUPPORTED[0]


def pack_mlp_linears(model: Any) -> int:
    """Replace every transformer block's MLP linears (``mlp.c_fc``, ``mlp.c_proj``) of a bf16
    CPU model by packed :class:`PackedLinear` modules; returns how many. Does nothing where
    packing is not :func:`supported`."""
    if not supported():
        return 0
    count = 0
    for module in list(model.modules()):
        mlp = getattr(module, "mlp", None)
        if not isinstance(mlp, torch.nn.Sequential):
            continue
        for name in ("c_fc", "c_proj"):
            layer = getattr(mlp, name, None)
            if type(layer) is torch.nn.Linear and layer.weight.dtype == torch.bfloat16 \
                    and layer.weight.device.type == "cpu":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # TorchScript's deprecation notice
                    scripted = torch.jit.script(PackedLinear(layer))
                scripted.packed = _pack(layer.weight)
                setattr(mlp, name, scripted)
                count += 1
    return count


def _pack(weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), ROWS_HINT)


def packed_layers(module: Any) -> List[Tuple[str, Any]]:
    """``(dotted name, module)`` of every :class:`PackedLinear` in an eager or scripted module."""
    return [(name, sub) for name, sub in module.named_modules() if getattr(sub, "original_name", "") == NAME]


@contextlib.contextmanager
def unpacked(model: Any) -> Iterator[None]:
    """The model's packed layers run on their plain weights inside (what an export records)."""
    layers = packed_layers(model)
    saved = [layer.packed for _, layer in layers]
    for _, layer in layers:
        layer.packed = None
    try:
        yield
    finally:
        for (_, layer), packed in zip(layers, saved):
            layer.packed = packed


def preserved_attributes(model: Any, prefix: str = "") -> List[str]:
    """The attributes ``torch.jit.freeze`` must keep for :func:`repack` to work after loading."""
    names = [f"{prefix}{name}" for name, _ in packed_layers(model)]
    return [f"{name}.{attr}" for name in names for attr in ("packed", "weight")]


def repack(module: Any) -> int:
    """Pack the weights of a loaded (scripted) module's :class:`PackedLinear` layers again;
    returns how many. Left on their plain weights where packing is not :func:`supported`."""
    if not supported():
        return 0
    layers = packed_layers(module)
    for _, layer in layers:
        layer.packed = _pack(layer.weight)
    return len(layers)
