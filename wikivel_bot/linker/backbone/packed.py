"""bf16 weights kept in oneDNN's own blocked layout, so no forward pass re-lays them out.

On CPU a bf16 ``nn.Linear`` goes to oneDNN, which first reorders the plain (out, in) weight
into the tiled layout its AMX / AVX512-BF16 kernels read — on every call, for every layer.
:class:`PackedLinear` keeps the reordered weight (``torch.ops.mkldnn._reorder_linear_weight``)
and multiplies with it (``_linear_pointwise``, the op PyTorch's own compiler emits for frozen
bf16 linears): the same products, bit for bit (``tests/test_linker_packed.py``), without the
per-call reorder. Two places use it:

* every transformer block's MLP (``mlp.c_fc``, ``mlp.c_proj``; both towers): same function;
* both towers' self-attention (:class:`PackedSelfAttention`): packed input and output
  projections around ``scaled_dot_product_attention``, in place of ``nn.MultiheadAttention``'s
  paths, which take plain weights only. Same function in another order of bf16 sums.

What each gave end to end on an AMX Xeon is in docs/benchmarks.md ("Concurrent batches and
packed bf16 weights", ``bench/linker.py``). The packed copies are kept beside the plain weights
(the state dict, the export and :func:`repack` read those): 203 MB more resident memory for
ViT-B-32 at bf16 (``bench/packed_memory.py``).

The packed weight is an opaque oneDNN tensor that TorchScript cannot save. The modules are
scripted with the plain weight as a fallback: an exported tower (``tower.py``) is traced and
saved with ``packed`` unset (:func:`unpacked`), keeps ``packed`` and ``weight`` as attributes
through freezing (:func:`preserved_attributes`) and is packed again after loading
(:func:`repack`).
"""

# No ``from __future__ import annotations``: TorchScript reads PackedLinear's annotations.
import contextlib
import functools
import logging
import types
import warnings
from typing import Any, Iterator, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F

from wikivel_bot.linker.backbone.pooled import standard_block

log = logging.getLogger(__name__)

# The row count oneDNN tunes the packed layout for: a batch of 32 images of 50 tokens.
# Any other row count works (and gives the same products).
ROWS_HINT = 1600
NAME = "PackedLinear"


class PackedLinear(torch.nn.Module):
    """A linear layer whose forward uses the packed weight when there is one.

    :param weight: (out, in) bf16 weight; an ``nn.Parameter`` stays one (the layer then has
        ``nn.Linear``'s state dict), a plain tensor is an attribute outside the state dict
        (the attention projections, whose parameters ``nn.MultiheadAttention`` keeps).
    :param bias: (out,) or None.
    """

    packed: Optional[torch.Tensor]
    bias: Optional[torch.Tensor]

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> None:
        super().__init__()
        self.weight = weight
        self.bias = bias
        self.packed = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self.packed
        if packed is None:
            return F.linear(x, self.weight, self.bias)
        # TorchScript's type for the op's Scalar?[] argument is this union.
        no_scalars = torch.jit.annotate(List[Optional[Union[int, float, complex]]], [])
        return torch.ops.mkldnn._linear_pointwise(x, packed, self.bias, "none", no_scalars, "")


class PackedSelfAttention(torch.nn.Module):
    """An ``nn.MultiheadAttention`` used for self-attention, with packed input and output
    projections and ``scaled_dot_product_attention`` between them.

    The same function as the path it replaces (the fused native one in the image tower,
    ``F.multi_head_attention_forward`` under the text tower's causal mask), in another order
    of bf16 sums: fused attention instead of separate products and softmax, and no per-call
    weight reorder.

    :param attn: the block's attention (packed self-attention: ``in_proj_weight``).
    :param sequence_first: inputs are (length, batch, width) (the text tower here), else
        (batch, length, width).
    """

    def __init__(self, attn: torch.nn.MultiheadAttention, sequence_first: bool) -> None:
        super().__init__()
        assert attn.in_proj_weight is not None
        self.heads = int(attn.num_heads)
        self.sequence_first = sequence_first
        bias = attn.in_proj_bias
        self.qkv = PackedLinear(attn.in_proj_weight.detach(), None if bias is None else bias.detach())
        out_bias = attn.out_proj.bias
        self.out = PackedLinear(attn.out_proj.weight.detach(), None if out_bias is None else out_bias.detach())

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        """:param mask: an additive (length, length) float mask, as ``nn.MultiheadAttention`` takes."""
        if self.sequence_first:
            length, batch, width = x.shape
            qkv = self.qkv(x).view(length, batch, 3, self.heads, width // self.heads).permute(2, 1, 3, 0, 4)
        else:
            batch, length, width = x.shape
            qkv = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=mask)  # (batch, heads, length, dim)
        if self.sequence_first:
            return self.out(attended.permute(2, 0, 1, 3).reshape(length, batch, width))
        return self.out(attended.transpose(1, 2).reshape(batch, length, width))


@functools.lru_cache(maxsize=None)
def supported() -> bool:
    """Whether this torch build and CPU can pack bf16 weights (tried once on a tiny layer)."""
    try:
        weight = torch.randn(8, 16).to(torch.bfloat16)
        x = torch.randn(3, 16).to(torch.bfloat16)
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, 3)
        got = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
        return bool(torch.equal(got, F.linear(x, weight)))
    except (AttributeError, RuntimeError) as exc:
        log.debug("bf16 weight packing unavailable: %s", exc)
        return False


def _scripted(module: torch.nn.Module) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript's deprecation notice
        return torch.jit.script(module)


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
                scripted = _scripted(PackedLinear(layer.weight, layer.bias))
                scripted.packed = _pack(layer.weight)
                setattr(mlp, name, scripted)
                count += 1
    return count


def pack_attention(model: Any) -> int:
    """Give the standard blocks of a bf16 CPU model's towers a :class:`PackedSelfAttention`;
    returns how many. Each tower's last block is left as it is: at inference it computes the
    pooled rows itself (``pooled.py``) from the plain weights. Does nothing where packing is
    not :func:`supported`, or for blocks ``pooled.standard_block`` does not know."""
    if not supported():
        return 0
    count = 0
    for transformer in (getattr(getattr(model, "visual", None), "transformer", None),
                        getattr(model, "transformer", None)):
        blocks = list(getattr(transformer, "resblocks", None) or [])
        sequence_first = not getattr(transformer, "batch_first", True)
        for block in blocks[:-1]:
            if not standard_block(block):
                continue
            attn: torch.nn.MultiheadAttention = block.attn  # standard_block checked its type
            if attn.in_proj_weight.dtype != torch.bfloat16 or attn.in_proj_weight.device.type != "cpu":
                continue
            packed_attention = _scripted(PackedSelfAttention(attn, sequence_first))
            for layer in (packed_attention.qkv, packed_attention.out):
                layer.packed = _pack(layer.weight)
            block.packed_attention = packed_attention
            block.attention = types.MethodType(_packed_attention, block)
            count += 1
    return count


def _packed_attention(self: Any, q_x: torch.Tensor, k_x: Any = None, v_x: Any = None,
                      attn_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    # open_clip's ResidualAttentionBlock.attention, for self-attention (the only use in CLIP's
    # towers); cross-attention would be a model this module does not know.
    if k_x is not None or v_x is not None:
        raise NotImplementedError("packed attention is for self-attention")
    return self.packed_attention(q_x, None if attn_mask is None else attn_mask.to(q_x.dtype))


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
