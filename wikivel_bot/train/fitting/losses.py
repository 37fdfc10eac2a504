"""Training losses over one in-batch similarity matrix (paper §4.3; seeds 002 and 004).

A batch holds B *rows*; a row is one (file, item) pair of the dataset, so a file with three
depicted items gives three rows (the paper's "#rows", Table 1). Row i contributes the image
side ``q_i`` (the file) and the item side ``e_i`` (the item), and ``logits[i, j]`` compares
file i with item j.

**Targets.** CLIP's loss assumes the only match of row i is column i. Here every pair that
shares an item is a target: ``targets[i, j] > 0`` when item j is one of file i's items (so
two rows of *human* are each other's targets, and a file's rows are all targets of each of
its items). Optionally items *related* through the hierarchy are targets too, with a smaller
weight: ``hop_weight ** h`` for an item h hops above or below one of the file's items, up to
``target_hops`` hops (the paper trained with "one loss target hop").

**Relaxed multi-positive contrastive loss.** ``0.5 * (image→text + text→image)``, each a
cross-entropy against the row-normalised (column-normalised) target weights, so a row with
four positives spreads its probability mass over four columns instead of being punished for
three of them.

**Inverse batch frequency.** A batch of Commons rows is dominated by a few items (*human*
alone is 8% of the paper's training rows). Each row's loss term is weighted by
``1 / (rows of its item in the batch)``, weights rescaled to mean 1, so every distinct item
in the batch weighs the same — the paper's "rescale item gradients by inverse batch
frequency".

**Hinge triplet loss** (seed 004 eq. 3, seed 002): for each row, the hardest in-batch
negative (the most similar column that is not a target) must score at least ``margin`` below
the row's own pair, in both directions. Cosine similarities, no temperature.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

LOSSES = ("contrastive", "triplet")


def inverse_frequency_weights(item_ids: torch.Tensor) -> torch.Tensor:
    """Per-row weights ``1 / count(row's item in the batch)``, rescaled to mean 1.

    :param item_ids: (B,) integer item id of each row.
    :returns: (B,) float weights (the dtype of the default float type).
    """
    _, inverse, counts = torch.unique(item_ids, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[inverse].to(torch.get_default_dtype())
    return weights * (weights.numel() / weights.sum())


def relaxed_contrastive_loss(
    logits: torch.Tensor, targets: torch.Tensor, row_weights: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """``0.5 * (image→text CE + text→image CE)`` with every positive of ``targets`` a target.

    :param logits: (B, B) scaled similarities, rows = files (image side), columns = items.
    :param targets: (B, B) non-negative target weights; every row and every column must have
        a positive entry (the diagonal always is one: a row's own pair).
    :param row_weights: (B,) weight of each row's term (inverse batch frequency); None = 1.
    :returns: the scalar loss.
    """
    targets = targets.to(logits.dtype)
    image_to_text = _soft_cross_entropy(logits, targets / targets.sum(dim=1, keepdim=True))
    text_to_image = _soft_cross_entropy(logits.T, (targets / targets.sum(dim=0, keepdim=True)).T)
    if row_weights is not None:
        weights = row_weights.to(logits.dtype)
        image_to_text = image_to_text * weights
        text_to_image = text_to_image * weights
    return 0.5 * (image_to_text.mean() + text_to_image.mean())


def _soft_cross_entropy(logits: torch.Tensor, distribution: torch.Tensor) -> torch.Tensor:
    # Per-row cross-entropy against a target distribution; log_softmax is the stable form.
    return -(distribution * F.log_softmax(logits, dim=1)).sum(dim=1)


def hinge_triplet_loss(
    similarities: torch.Tensor, targets: torch.Tensor, margin: float = 0.2,
    row_weights: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Hinge loss on the hardest in-batch negative, both directions (seed 004, eq. 3).

    ``max(0, margin + S[i, hardest j] - S[i, i]) + max(0, margin + S[hardest i', i] - S[i, i])``
    where negatives are the entries with ``targets == 0``; a row without negatives adds 0.

    :param similarities: (B, B) cosine similarities (no temperature).
    :param targets: (B, B) target weights; zero entries are the negatives.
    :param margin: gamma of eq. 3.
    :param row_weights: (B,) weight of each row's term; None = 1.
    :returns: the scalar loss (mean over rows of the two hinge terms summed).
    """
    positive = similarities.diagonal()
    negatives = targets <= 0
    blocked = torch.finfo(similarities.dtype).min
    hardest_item = similarities.masked_fill(~negatives, blocked).amax(dim=1)
    hardest_file = similarities.masked_fill(~negatives, blocked).amax(dim=0)
    # Rows with no negative at all get hardest = blocked, so their hinge is exactly 0.
    loss = F.relu(margin + hardest_item - positive) + F.relu(margin + hardest_file - positive)
    if row_weights is not None:
        loss = loss * row_weights.to(loss.dtype)
    return loss.mean()


def batch_loss(
    kind: str,
    queries: torch.Tensor,
    items: torch.Tensor,
    targets: torch.Tensor,
    item_ids: torch.Tensor,
    *,
    logit_scale: Optional[torch.Tensor] = None,
    margin: float = 0.2,
    rescale: bool = True,
) -> torch.Tensor:
    """The training loss of one batch.

    :param kind: ``contrastive`` (relaxed multi-positive, §4.3) or ``triplet`` (hinge).
    :param queries: (B, d) L2-normalised file embeddings.
    :param items: (B, d) L2-normalised item embeddings, row-aligned with ``queries``.
    :param targets: (B, B) target weights (see :mod:`wikivel_bot.train.fitting.targets`).
    :param item_ids: (B,) item id of each row, for inverse batch frequency.
    :param logit_scale: log of the contrastive temperature's inverse (CLIP's ``logit_scale``).
    :param margin: triplet margin.
    :param rescale: weight rows by inverse batch frequency.
    :raises ValueError: an unknown ``kind``.
    """
    weights = inverse_frequency_weights(item_ids).to(queries.device) if rescale else None
    similarities = queries @ items.T
    if kind == "contrastive":
        scale = logit_scale.exp() if logit_scale is not None else torch.tensor(1.0 / 0.07)
        return relaxed_contrastive_loss(similarities * scale, targets, weights)
    if kind == "triplet":
        return hinge_triplet_loss(similarities, targets, margin, weights)
    raise ValueError(f"unknown loss {kind!r} (known: {', '.join(LOSSES)})")
