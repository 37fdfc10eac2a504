"""Compute only the rows the pooling reads in a CLIP tower's last transformer block.

CLIP pools each tower at one position: the image tower at its class token (open_clip's
``pool_type = 'tok'``), the text tower at its end-of-text token. Every other row of the last
block's output is computed and thrown away. In that block the pooled row still attends to
every position, so keys and values are needed for all rows, but the query, the attention
output projection and the MLP (10 of the block's 12 d² multiply-adds per row) are needed
for the pooled row only: about 1/12 × 10/12 ≈ 7 % of a 12-block tower's work
(``bench/pooled.py`` measures it end to end; docs/benchmarks.md).

The same function up to float rounding (the attention sums run in another order; below
1e-6 at fp32 on ViT-B-32, as ``bench/pooled.py`` prints). Only open_clip's standard blocks
(``ResidualAttentionBlock`` over ``nn.MultiheadAttention`` with packed projections) are
touched; anything else runs as before.
"""

from __future__ import annotations

import types
from typing import Any, Optional

import torch
import torch.nn.functional as F

MARK = "_wikivel_pooled_rows_only"


def standard_block(block: Any) -> bool:
    """An open_clip ``ResidualAttentionBlock`` this module knows how to cut (self-attention,
    packed q/k/v projection)."""
    attn = getattr(block, "attn", None)
    return (type(block).__name__ == "ResidualAttentionBlock"
            and isinstance(attn, torch.nn.MultiheadAttention)
            and bool(getattr(attn, "_qkv_same_embed_dim", False))
            and getattr(attn, "in_proj_weight", None) is not None
            and getattr(attn, "bias_k", None) is None and not getattr(attn, "add_zero_attn", False)
            and not hasattr(block, "ln_1_kv"))


def last_block_rows(block: Any, x: torch.Tensor, rows: Optional[torch.Tensor], sequence_first: bool,
                    causal: bool) -> torch.Tensor:
    """The last block's output at one row per sequence, (batch, width).

    :param block: a :func:`standard_block`.
    :param x: the block's input, (length, batch, width) when ``sequence_first`` else
        (batch, length, width).
    :param rows: (batch,) the position pooled in each sequence; None for position 0.
    :param causal: the position attends only to itself and the positions before it (the
        text tower's mask); else to every position (the image tower).
    """
    attn = block.attn
    if sequence_first:
        length, batch, width = x.shape
    else:
        batch, length, width = x.shape
    heads = attn.num_heads
    head_dim = width // heads
    weight, bias = attn.in_proj_weight, attn.in_proj_bias
    y = block.ln_1(x)
    index = torch.arange(batch, device=x.device)
    at = torch.zeros(batch, dtype=torch.long, device=x.device) if rows is None else rows
    picked = (lambda t: t[at, index]) if sequence_first else (lambda t: t[index, at])
    query = F.linear(picked(y), weight[:width], None if bias is None else bias[:width])
    keys_values = F.linear(y, weight[width:], None if bias is None else bias[width:])
    # (2, batch, heads, length, head_dim) from either layout.
    if sequence_first:
        keys_values = keys_values.view(length, batch, 2, heads, head_dim).permute(2, 1, 3, 0, 4)
    else:
        keys_values = keys_values.view(batch, length, 2, heads, head_dim).permute(2, 0, 3, 1, 4)
    keys, values = keys_values.unbind(0)
    mask = None
    if causal:
        mask = (torch.arange(length, device=x.device).view(1, length) <= at.view(batch, 1)).view(batch, 1, 1, length)
    out = F.scaled_dot_product_attention(query.view(batch, heads, 1, head_dim), keys, values, attn_mask=mask)
    hidden = picked(x) + block.ls_1(attn.out_proj(out.reshape(batch, width)))
    return hidden + block.ls_2(block.mlp(block.ln_2(hidden)))


def _class_token_forward(self: Any, q_x: torch.Tensor, k_x: Any = None, v_x: Any = None,
                         attn_mask: Any = None) -> torch.Tensor:
    # (batch, 1, width): the image tower's pooling ('tok') reads row 0, ln_post and the
    # projection apply to it alone, and the other rows (``tokens``) are not asked for.
    return last_block_rows(self, q_x, None, sequence_first=False, causal=False).unsqueeze(1)


def class_token_only(model: Any) -> bool:
    """Make an open_clip ViT image tower compute only the class token in its last block.

    Applies when the tower pools at the class token (``pool_type 'tok'``, no attention
    pooling, no token outputs) over batch-first standard blocks; idempotent. Returns whether
    the tower runs cut.
    """
    visual = getattr(model, "visual", None)
    transformer = getattr(visual, "transformer", None)
    blocks = list(getattr(transformer, "resblocks", None) or [])
    if not blocks:
        return False
    if getattr(blocks[-1], MARK, False):
        return True
    if (getattr(visual, "pool_type", "") != "tok" or getattr(visual, "attn_pool", None) is not None
            or getattr(visual, "output_tokens", True) or not getattr(transformer, "batch_first", False)
            or not standard_block(blocks[-1])):
        return False
    blocks[-1].forward = types.MethodType(_class_token_forward, blocks[-1])
    setattr(blocks[-1], MARK, True)
    return True
