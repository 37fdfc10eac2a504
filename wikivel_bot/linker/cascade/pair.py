"""The cascade's pair model: scores (file, candidate item) pairs with cross-attention.

Seed 004 re-ranks a fast bi-encoder's top candidates with a slower model that sees both
sides at once; seed 000 verifies (image, text) pairs with cross-attention between the
modalities. This module is both, over frozen CLIP embeddings:

* **file side** — the image embedding and the file's text embedding (cleaned file name,
  description, non-maintenance categories), fused with learned **attentive weights α**
  (seed 004 §3.1.1, eq. 1): ``q = α_img · image + α_txt · text``. Unlike eq. 1's two
  independent sigmoids, α here is a softmax over the *present* modalities, so the two weights
  sum to 1 and ``α_img`` reads as "the image's share" — what a reviewer is shown.
* **item side** — the item's text embedding and its P18 image embedding (when it has one).
* **cross-attention** — the file's three tokens (image, text, fused q) attend to the item's
  two tokens and the item's tokens attend to the file's, in a small projected width; pooled,
  compared (product, difference, and the raw cosines between every file and item token) and
  scored by an MLP.
* **combination with the first stage** — the final logit is
  ``z = a · first_stage_cosine + pair_logit``, ``a`` learned and kept ≥ 1, so the pair model
  learns a correction to the first stage rather than starting from nothing. ``z / a`` is the
  linker's score (cosine units, so the ranking rules' margins keep their meaning); ``z`` goes
  into the verifier's calibration (see ``core.verification``).

Shapes: ``files`` (B, 2, d) with mask (B, 2); ``items`` (B, K, 2, d) with mask (B, K, 2);
``first`` (B, K). Absent modalities may hold any value; the masks decide.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import nn

from wikivel_bot.errors import LinkerError

PAIR_ARGS = ("width", "heads", "hidden", "dropout", "first_weight")
DEFAULT_PAIR_ARGS: Dict[str, Any] = {"width": 64, "heads": 2, "hidden": 64, "dropout": 0.1, "first_weight": 10.0}
# Per pair: raw cosines between the file tokens (image, text, fused) and the item tokens
# (text, image), and the same six products in the learned projection (a bilinear match
# score per token pair: "does this file text name this item").
_COSINES = 6
_FEATURES = 2 * _COSINES


class PairOutput(NamedTuple):
    """What one forward pass gives.

    :param logits: (B, K) final logits ``z`` (first stage combined with the pair model).
    :param scores: (B, K) ``z / a``: the linker's score, in first-stage cosine units.
    :param alpha: (B, 2) attentive weights of (image, text); rows sum to 1.
    """

    logits: torch.Tensor
    scores: torch.Tensor
    alpha: torch.Tensor


def pair_args(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The pair model's constructor arguments: defaults, overridden by a config's ``head``.

    :raises LinkerError: an unknown option.
    """
    unknown = sorted(set(options) - set(PAIR_ARGS))
    if unknown:
        raise LinkerError(f"pair model options {unknown} are unknown (allowed: {list(PAIR_ARGS)})")
    return {**DEFAULT_PAIR_ARGS, **dict(options)}


class AttentiveFusion(nn.Module):
    """α = softmax over present modalities of MLP([image, text]); q = Σ α_m · x_m (seed 004 eq. 1).

    The last layer starts at zero, so an untrained fusion weighs the present modalities equally.
    """

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        last = nn.Linear(hidden, 2)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.net = nn.Sequential(nn.Linear(2 * dim, hidden), nn.ReLU(), last)

    def forward(self, tokens: torch.Tensor, present: torch.Tensor, features: Optional[torch.Tensor] = None) -> Any:
        """:param tokens: (B, 2, d) normalised [image, text]; :param present: (B, 2) bool.
        :param features: what the MLP reads instead of ``tokens`` (standardised tokens).
        :returns: (fused (B, d) normalised, alpha (B, 2))."""
        present = present.bool()
        keep = present.unsqueeze(-1).to(tokens.dtype)
        tokens = tokens * keep
        features = tokens if features is None else features * keep
        logits = self.net(features.flatten(1)).masked_fill(~present, float("-inf"))
        # A row with nothing present (cannot happen for files: the image is always there)
        # would be all -inf; give it equal weights instead of NaN.
        logits = torch.where(present.any(dim=1, keepdim=True), logits, torch.zeros_like(logits))
        alpha = torch.softmax(logits, dim=1)
        fused = (alpha.unsqueeze(-1) * tokens).sum(dim=1)
        return F.normalize(fused, dim=-1), alpha


class PairModel(nn.Module):
    """See the module docstring.

    :param dim: CLIP embedding size d.
    :param width: width of the cross-attention (tokens are projected d → width).
    :param heads: attention heads.
    :param hidden: hidden width of the α MLP and of the scoring MLP.
    :param dropout: dropout in the scoring MLP.
    :param first_weight: initial ``a`` (the first stage's weight in the final logit).
    """

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, dim: int, width: int = 64, heads: int = 2, hidden: int = 64, dropout: float = 0.1,
                 first_weight: float = 10.0) -> None:
        super().__init__()
        if width % heads:
            raise LinkerError(f"pair model width {width} is not a multiple of heads {heads}")
        self.dim = dim
        self.fusion = AttentiveFusion(dim, hidden)
        self.file_proj = nn.Linear(dim, width)
        self.item_proj = nn.Linear(dim, width)
        self.file_type = nn.Parameter(torch.randn(3, width) * 0.02)
        self.item_type = nn.Parameter(torch.randn(2, width) * 0.02)
        self.file_to_item = nn.MultiheadAttention(width, heads, batch_first=True)
        self.item_to_file = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = nn.LayerNorm(width)
        last = nn.Linear(hidden, 1)
        # Zero at start: an untrained pair model ranks exactly like the first stage.
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.score = nn.Sequential(nn.Linear(2 * width + _FEATURES, hidden), nn.ReLU(), nn.Dropout(dropout), last)
        self.log_first = nn.Parameter(torch.tensor(float(first_weight)).log())
        # Per-modality mean and spread of the CLIP embeddings (image, file text, item text,
        # item image), set from the training data by :meth:`set_statistics` and saved with the
        # weights. CLIP embeddings share a large common direction; what tells two files apart
        # is a small difference on top of it, and projections learn far faster on
        # standardised inputs (a linear probe reads a colour word from the tiny test model's
        # text embedding at 96 % standardised, hardly at all raw).
        self.register_buffer("mean", torch.zeros(4, dim))
        self.register_buffer("std", torch.ones(4, dim))

    @property
    def first_weight(self) -> torch.Tensor:
        """``a`` ≥ 1: the first stage's weight in the final logit."""
        return self.log_first.exp().clamp(min=1.0)

    @torch.no_grad()
    def set_statistics(self, images: torch.Tensor, file_texts: torch.Tensor, item_texts: torch.Tensor,
                       item_images: torch.Tensor) -> None:
        """Set the standardisation from (n, d) samples of each modality (present rows only)."""
        for i, x in enumerate((images, file_texts, item_texts, item_images)):
            x = x[x.abs().sum(dim=1) > 0].float()
            if len(x) >= 2:
                self.mean[i] = x.mean(dim=0)
                self.std[i] = x.std(dim=0).clamp(min=1e-4)

    def fuse(self, files: torch.Tensor, file_mask: torch.Tensor) -> Any:
        """(fused file embedding (B, d), α (B, 2)) — the file side alone, for reviewers."""
        return self.fusion(files, file_mask, (files - self.mean[:2]) / self.std[:2])

    def forward(self, files: torch.Tensor, file_mask: torch.Tensor, items: torch.Tensor, item_mask: torch.Tensor,
                first: torch.Tensor) -> PairOutput:
        """Score every (file, candidate) pair; see the module docstring for the shapes."""
        batch, k = first.shape
        file_mask = file_mask.bool()
        item_mask = item_mask.bool()
        fused, alpha = self.fusion(files, file_mask, (files - self.mean[:2]) / self.std[:2])
        file_tokens = torch.cat([files, fused.unsqueeze(1)], dim=1)            # (B, 3, d)
        file_present = torch.cat([file_mask, torch.ones_like(file_mask[:, :1])], dim=1)  # (B, 3)
        item_mask = item_mask.clone()
        # Every item needs one key to attend to; its text is always there in practice.
        item_mask[..., 0] |= ~item_mask.any(dim=-1)
        # Cosines between every file token and every item token (absent ones zeroed).
        cos = torch.einsum("bfd,bkid->bkfi", file_tokens, items)                # (B, K, 3, 2)
        cos = cos * file_present[:, None, :, None] * item_mask[:, :, None, :]
        standard_files = torch.cat([(files - self.mean[:2]) / self.std[:2],
                                    ((fused - self.mean[0]) / self.std[0]).unsqueeze(1)], dim=1)
        standard_items = (items - self.mean[2:]) / self.std[2:]
        f = self.norm(self.file_proj(standard_files) + self.file_type)         # (B, 3, w)
        e = self.norm(self.item_proj(standard_items) + self.item_type)         # (B, K, 2, w)
        width = f.shape[-1]
        bilinear = torch.einsum("bfw,bkiw->bkfi", f, e) / width ** 0.5                # (B, K, 3, 2)
        bilinear = bilinear * file_present[:, None, :, None] * item_mask[:, :, None, :]
        f_rep = f.unsqueeze(1).expand(batch, k, 3, width).reshape(batch * k, 3, width)
        f_pad = (~file_present).unsqueeze(1).expand(batch, k, 3).reshape(batch * k, 3)
        e_flat = e.reshape(batch * k, 2, width)
        e_pad = (~item_mask).reshape(batch * k, 2)
        f_att, _ = self.file_to_item(f_rep, e_flat, e_flat, key_padding_mask=e_pad, need_weights=False)
        e_att, _ = self.item_to_file(e_flat, f_rep, f_rep, key_padding_mask=f_pad, need_weights=False)
        f_pool = _masked_mean(f_rep + f_att, ~f_pad)
        e_pool = _masked_mean(e_flat + e_att, ~e_pad)
        features = torch.cat([f_pool * e_pool, (f_pool - e_pool).abs(), cos.reshape(batch * k, _COSINES),
                              bilinear.reshape(batch * k, _COSINES)], dim=1)
        pair = self.score(features).reshape(batch, k)
        a = self.first_weight
        logits = a * first + pair
        return PairOutput(logits=logits, scores=logits / a, alpha=alpha)


def _masked_mean(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    weights = keep.to(x.dtype).unsqueeze(-1)
    return (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def build_pair_model(dim: int, options: Mapping[str, Any]) -> PairModel:
    """A fresh pair model (ranks like the first stage until trained).

    :param dim: CLIP embedding size.
    :param options: the cascade config's ``head`` block (see :data:`PAIR_ARGS`).
    """
    args = pair_args(options)
    return PairModel(dim, width=int(args["width"]), heads=int(args["heads"]), hidden=int(args["hidden"]),
                     dropout=float(args["dropout"]), first_weight=float(args["first_weight"]))
