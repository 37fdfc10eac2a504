"""Validation passes during training: the in-batch loss on validation rows and the ranking
metrics of validation files against the whole label set (what early stopping watches).

The ranking uses the same exact chunked top-k as the linker (``linker.search``) and the
same scoring as ``wikivel-bot evaluate`` (``evaluation.score_rankings`` over
``core.metrics``), so a validation R@10 means what a test R@10 means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence

import numpy as np
import torch

from wikivel_bot.evaluation import score_rankings
from wikivel_bot.linker.search import chunked_topk

VAL_KS = (1, 5, 10, 100)
# What a validation pass reports (and what --select may watch).
VAL_METRICS = ("val_loss", "R@1", "R@5", "R@10", "R@100", "DivR@10", "mAP@10", "MRR")
# Metrics where a larger value is better; everything else (the loss) is minimised.
HIGHER_IS_BETTER = ("R@", "DivR@", "mAP@", "P@", "nDCG@", "MRR")


@dataclass
class ValidationSet:
    """What one validation pass reads.

    :param row_files: (R,) manifest row of each validation (file, item) row, for the loss.
    :param row_items: (R,) label-set position of each row's item.
    :param files: (F,) manifest rows of the validation files ranked (capped by --val-limit).
    :param truth: ground-truth QIDs of each of ``files``.
    """

    row_files: np.ndarray
    row_items: np.ndarray
    files: np.ndarray
    truth: List[List[str]]


def higher_is_better(metric: str) -> bool:
    """Whether ``metric`` (``R@10``, ``loss``...) improves upwards."""
    return metric.startswith(HIGHER_IS_BETTER)


@torch.no_grad()
def validate(
    variant: Any,
    data: ValidationSet,
    qids: Sequence[str],
    loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    batch_size: int,
) -> Dict[str, float]:
    """One validation pass (the variant is put in eval mode and back).

    :param variant: the :class:`~wikivel_bot.train.fitting.variants.Variant`.
    :param data: validation rows and files.
    :param qids: the label set's QIDs (ranking positions to items).
    :param loss_of: ``(files, items) -> loss`` of one batch (targets built by the caller).
    :param batch_size: rows per loss batch.
    :returns: ``{"val_loss": ..., "R@1": ..., "R@10": ..., "DivR@10": ..., "mAP@10": ..., "MRR": ...}``.
    """
    was_training = variant.training
    variant.eval()
    try:
        device = variant.inputs.images.device
        total, weight = 0.0, 0
        for start in range(0, len(data.row_files), batch_size):
            files = torch.from_numpy(data.row_files[start:start + batch_size]).to(device)
            items = torch.from_numpy(data.row_items[start:start + batch_size]).to(device)
            if files.numel() < 2:
                continue
            total += float(loss_of(files, items)) * files.numel()
            weight += files.numel()
        out: Dict[str, float] = {"val_loss": total / weight if weight else float("nan")}
        if len(data.files):
            items = variant.all_items(len(qids))
            rankings = []
            k = min(max(VAL_KS), len(qids))
            for start in range(0, len(data.files), 1024):
                chunk = data.files[start:start + 1024]
                queries = variant.encode_files(torch.from_numpy(chunk).to(device))
                _, index = chunked_topk(queries, items, k)
                for row, positions in zip(chunk.tolist(), index.tolist()):
                    rankings.append((str(row), [qids[p] for p in positions]))
            truth = {str(row): items_ for row, items_ in zip(data.files.tolist(), data.truth)}
            report = score_rankings(rankings, truth, ks=VAL_KS, hops=(0,))
            scores = report.scores[0]
            for name in VAL_METRICS[1:]:
                out[name] = scores[name]
        return out
    finally:
        variant.train(was_training)
