"""The text side of the backbone: tokens in, normalised text embeddings out, trimmed and grouped
by length; and the text tower's own weights for the variant that trains it (naive-te).

Item labels are mostly 3-10 tokens of CLIP's 77; a file's text in the cascade is cut to a few
dozen. Every path here pays for the tokens a text really has, not for the padding.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch
import torch.nn.functional as F

from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.backbone.encoders import TEXT_BATCH_CPU, TEXT_BATCH_CUDA, Backbone
from wikivel_bot.linker.backbone.pooled import last_block_rows, standard_block


def token_lengths(tokens: torch.Tensor) -> torch.Tensor:
    """Used length of each padded token row: one past the last non-padding (non-zero) id."""
    positions = torch.arange(1, tokens.shape[1] + 1)
    return ((tokens != 0) * positions).amax(dim=1)


def length_groups(lengths: Sequence[int], slack: int = 8, min_group: int = 4, max_group: int = 256) -> List[List[int]]:
    """Row indices grouped by token length, each group to be padded to its own longest row.

    Rows are taken shortest first, and a group holds rows at most ``slack`` tokens longer than
    its shortest (and at most ``max_group`` rows); a group of fewer than ``min_group`` rows
    then joins its neighbour, since a forward pass over very few texts costs more in overhead
    than the padding it saves. So a short text in a batch of long ones is not padded to their
    length, as it is when the whole batch is trimmed to its longest row.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    groups: List[List[int]] = []
    for i in order:
        if groups and len(groups[-1]) < max_group and lengths[i] <= lengths[groups[-1][0]] + slack:
            groups[-1].append(i)
        else:
            groups.append([i])
    merged: List[List[int]] = []
    for group in groups:
        if merged and len(merged[-1]) < min_group and len(merged[-1]) + len(group) <= max_group:
            merged[-1].extend(group)
        else:
            merged.append(group)
    if len(merged) > 1 and len(merged[-1]) < min_group and len(merged[-2]) + len(merged[-1]) <= max_group:
        merged[-2].extend(merged.pop())
    return merged


def encode_tokens(backbone: Backbone, tokens: torch.Tensor, model: Optional[Any] = None) -> torch.Tensor:
    """Text features for a batch of tokens, trimmed to the batch's longest row.

    CLIP's text transformer is causal: the positions after a text's end-of-text token never
    influence it, so cutting padded columns leaves every embedding unchanged while the cost
    falls from 77 positions to the batch's real length.

    :param backbone: the backbone (device, autocast).
    :param tokens: (batch, context_length) token ids.
    :param model: the CLIP model to use (a trainable copy of the text tower); default the
        backbone's.
    :returns: unnormalised features (batch, embed_dim), in the autocast dtype.
    """
    model = model or backbone.model
    can_trim = (
        hasattr(model, "token_embedding")
        and getattr(model, "attn_mask", None) is not None
        and getattr(model, "text_pool_type", "") in ("argmax", "eos")
    )
    if not can_trim:
        return model.encode_text(tokens.to(backbone.device, non_blocking=True))
    length = int(token_lengths(tokens).max().clamp(min=1))
    tokens = tokens[:, :length].to(backbone.device, non_blocking=True)
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast) + model.positional_embedding[:length].to(cast)
    if model.text_pool_type == "argmax":
        rows = tokens.argmax(dim=-1)
    else:
        rows = (tokens == model.text_eos_id).int().argmax(dim=-1)
    mask = model.attn_mask[:length, :length]
    transformer = model.transformer
    blocks = list(transformer.resblocks)
    if not torch.is_grad_enabled() and standard_block(blocks[-1]) and not getattr(transformer, "grad_checkpointing", False):
        # Inference: the last block computes the pooled row of each text only (pooled.py).
        sequence_first = not transformer.batch_first
        x = x.transpose(0, 1).contiguous() if sequence_first else x
        for block in blocks[:-1]:
            x = block(x, attn_mask=mask)
        pooled = model.ln_final(last_block_rows(blocks[-1], x, rows, sequence_first, causal=True))
    else:
        x = model.ln_final(transformer(x, attn_mask=mask))
        pooled = x[torch.arange(x.shape[0], device=x.device), rows]
    projection = model.text_projection
    if projection is None:
        return pooled
    return projection(pooled) if isinstance(projection, torch.nn.Linear) else pooled @ projection


@torch.inference_mode()
def encode_texts(
    backbone: Backbone, texts: Sequence[str], batch_size: int = 0, progress: Any = None
) -> torch.Tensor:
    """Normalised fp32 text embeddings in input order, batched by token length.

    Texts are sorted by token count so each batch is padded only to its own longest text
    (item labels are mostly 3-10 tokens, not 77).

    :param backbone: the backbone.
    :param texts: the texts.
    :param batch_size: texts per forward pass (0 = a device default).
    :param progress: a tqdm-like object with ``update(n)``, or None.
    """
    if not texts:
        return torch.zeros((0, backbone.embed_dim), device=backbone.device)
    size = batch_size or (TEXT_BATCH_CUDA if backbone.on_cuda else (backbone.text_batch or TEXT_BATCH_CPU))
    tokens = backbone.tokenizer(list(texts))
    order = torch.argsort(token_lengths(tokens), stable=True)
    out = torch.empty((len(texts), backbone.embed_dim), device=backbone.device)
    for start in range(0, len(texts), size):
        index = order[start:start + size]
        with backbone.autocast():
            features = encode_tokens(backbone, tokens[index])
        out[index.to(backbone.device)] = F.normalize(features.float(), dim=-1)
        if progress is not None:
            progress.update(len(index))
    return out


TEXT_TOWER_PREFIXES = ("token_embedding.", "positional_embedding", "transformer.", "ln_final.", "text_projection", "text.")


def text_tower_state(model: Any) -> dict:
    """The text encoder's parameters (what the naive-te variant trains and checkpoints)."""
    return {k: v.detach().cpu() for k, v in model.state_dict().items() if k.startswith(TEXT_TOWER_PREFIXES)}


def load_text_tower_state(model: Any, state: dict) -> None:
    """Load :func:`text_tower_state` output into ``model``.

    :raises LinkerError: the state does not fit this architecture.
    """
    own = {k for k in model.state_dict() if k.startswith(TEXT_TOWER_PREFIXES)}
    if set(state) != own:
        missing, extra = sorted(own - set(state))[:3], sorted(set(state) - own)[:3]
        raise LinkerError(f"text encoder weights do not fit this model (missing {missing}, unexpected {extra})")
    try:
        model.load_state_dict(state, strict=False)
    except RuntimeError as exc:
        raise LinkerError(f"text encoder weights do not fit this model: {exc}") from None


def text_tower_parameters(model: Any) -> List[torch.nn.Parameter]:
    """Parameters of the text encoder, for a trainer that unfreezes it (naive-te)."""
    return [p for n, p in model.named_parameters() if n.startswith(TEXT_TOWER_PREFIXES)]
