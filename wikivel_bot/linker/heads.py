"""Trainable heads on top of the frozen CLIP embeddings (paper §4.1 and §4.2).

Both heads are residual, and their last layer starts at zero: an untrained head is exactly
the identity on the CLIP embedding (zero-shot behaviour), training only moves away from it,
and a linker without a checkpoint still gives sensible (zero-shot) answers.

A training run builds these with :func:`build_heads`, trains them, and stores them with
``checkpoint.save_checkpoint``; the linker rebuilds them from the checkpoint alone.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import torch
from torch import nn

from wikivel_bot.errors import LinkerError


class MLPHead(nn.Module):
    """Linear d→2d, ReLU, Dropout(p), Linear 2d→d, plus the input (residual).

    :param dim: embedding size d.
    :param hidden_mult: hidden width as a multiple of d (2 in the paper).
    :param dropout: dropout probability (0.5 in the paper).
    """

    def __init__(self, dim: int, hidden_mult: int = 2, dropout: float = 0.5) -> None:
        super().__init__()
        last = nn.Linear(dim * hidden_mult, dim)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.net = nn.Sequential(nn.Linear(dim, dim * hidden_mult), nn.ReLU(), nn.Dropout(dropout), last)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.net(x)


class NaiveHeads(nn.Module):
    """The two heads of Naive CLIP: one for image embeddings, one for item-text embeddings."""

    def __init__(self, dim: int, hidden_mult: int = 2, dropout: float = 0.5) -> None:
        super().__init__()
        self.image_head = MLPHead(dim, hidden_mult, dropout)
        self.text_head = MLPHead(dim, hidden_mult, dropout)


class FusionHead(nn.Module):
    """A small transformer over modality tokens giving one embedding per side (CLIP Fusion).

    Input: one CLIP embedding per modality (e.g. [image, text]) and a mask of which are
    present (a file without a description, an item without an image). A learned CLS token
    reads them; its output, projected, is added to the mean of the present embeddings.

    :param dim: embedding size d.
    :param modalities: number of modality tokens.
    :param layers: transformer layers.
    :param head_width: attention head width (heads = d / head_width, at least 1).
    :param mlp_ratio: feed-forward width as a multiple of d.
    :param dropout: dropout inside the transformer.
    """

    def __init__(
        self, dim: int, modalities: int = 2, layers: int = 2, head_width: int = 64, mlp_ratio: int = 2,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        heads = max(1, dim // head_width)
        while dim % heads:
            heads -= 1
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.modality = nn.Parameter(torch.randn(1, modalities, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=dim, nhead=heads, dim_feedforward=dim * mlp_ratio, dropout=dropout, batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self, tokens: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """:param tokens: (batch, modalities, d) normalised embeddings (absent ones any value).
        :param present: (batch, modalities) bool, True where the modality exists.
        :returns: (batch, d) unnormalised fused embeddings.
        """
        weights = present.to(tokens.dtype).unsqueeze(-1)
        tokens = tokens * weights
        residual = tokens.sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        x = torch.cat([self.cls.expand(tokens.shape[0], -1, -1), tokens + self.modality], dim=1)
        cls_present = torch.ones((present.shape[0], 1), dtype=torch.bool, device=present.device)
        padding = ~torch.cat([cls_present, present.bool()], dim=1)
        y = self.encoder(x, src_key_padding_mask=padding)[:, 0]
        return residual + self.proj(self.norm(y))


class FusionHeads(nn.Module):
    """Commons side (query: [image, file text]) and Wikidata side (entity: [label text, image]).

    Two heads with separate weights over one shared backbone, as in the paper's Figure 6 and
    the WIT cascade's separate downstream encoders (seed 004).
    """

    def __init__(self, dim: int, **kwargs: Any) -> None:
        super().__init__()
        self.query_head = FusionHead(dim, modalities=2, **kwargs)
        self.entity_head = FusionHead(dim, modalities=2, **kwargs)


_NAIVE_ARGS = ("hidden_mult", "dropout")
_FUSION_ARGS = ("layers", "head_width", "mlp_ratio", "dropout")


def head_args(architecture: str, head: Mapping[str, Any]) -> Dict[str, Any]:
    """The constructor arguments for a config's ``head`` block, checked against the architecture."""
    allowed = {"naive": _NAIVE_ARGS, "fusion": _FUSION_ARGS}.get(architecture, ())
    unknown = sorted(set(head) - set(allowed))
    if unknown:
        raise LinkerError(f"head options {unknown} do not apply to a {architecture} linker (allowed: {list(allowed)})")
    return dict(head)


def build_heads(architecture: str, dim: int, head: Mapping[str, Any]) -> Optional[nn.Module]:
    """The head module of an architecture, freshly initialised (identity at start).

    :param architecture: ``zero-shot`` (no head), ``naive`` or ``fusion``.
    :param dim: CLIP embedding size.
    :param head: the config's head options.
    """
    args = head_args(architecture, head)
    if architecture == "naive":
        return NaiveHeads(dim, **args)
    if architecture == "fusion":
        return FusionHeads(dim, **args)
    return None
