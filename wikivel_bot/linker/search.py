"""Exact top-k by cosine over the label index, in chunks along the item axis.

With 2.3 million items a full (queries × items) score matrix is 2.3M × batch floats; instead
each chunk of items is scored, its own top-k taken, and merged into a running top-k, so
memory is (batch × chunk) whatever the index size. The result is the same as a full top-k
(up to the order of exactly tied scores).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import torch

# Items per chunk: 64k × a batch of 256 fp32 scores = 64 MiB.
CHUNK_ITEMS = 65_536


def chunked_topk(
    queries: torch.Tensor,
    items: Any,
    k: int,
    *,
    chunk_size: int = CHUNK_ITEMS,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Top ``k`` items per query by dot product (cosine for normalised vectors).

    :param queries: (batch, d) query embeddings, on the device to compute on.
    :param items: (n, d) item embeddings: a torch tensor (any device, any float dtype) or a
        numpy array / memmap (fp16 on disk is fine). Chunks are moved to the queries'
        device; on CUDA they are scored in fp16, on CPU in fp32 (CPU half matmul is slow).
    :param k: how many to return (capped at n).
    :param chunk_size: items scored at once.
    :returns: (scores, indices), both (batch, min(k, n)) on the CPU, best first; scores fp32.
    """
    n = int(items.shape[0])
    batch = int(queries.shape[0])
    k = max(0, min(int(k), n))
    device = queries.device
    compute = torch.float16 if device.type == "cuda" else torch.float32
    q = queries.to(compute)
    best_scores = torch.full((batch, 0), float("-inf"), device=device)
    best_index = torch.zeros((batch, 0), dtype=torch.long, device=device)
    if k == 0 or batch == 0:
        return torch.zeros((batch, k)), torch.zeros((batch, k), dtype=torch.long)
    for start in range(0, n, chunk_size):
        chunk = _chunk(items, start, min(start + chunk_size, n), device, compute)
        scores = (q @ chunk.T).float()
        take = min(k, scores.shape[1])
        top_scores, top_index = torch.topk(scores, take, dim=1)
        # Merge with the running best: at most 2k candidates per row, re-select k.
        merged_scores = torch.cat([best_scores, top_scores], dim=1)
        merged_index = torch.cat([best_index, top_index + start], dim=1)
        keep = min(k, merged_scores.shape[1])
        best_scores, order = torch.topk(merged_scores, keep, dim=1)
        best_index = torch.gather(merged_index, 1, order)
    return best_scores.cpu(), best_index.cpu()


def full_topk(queries: torch.Tensor, items: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reference top-k over the whole score matrix (tests and benchmarks only)."""
    scores = queries.float() @ items.float().T
    return torch.topk(scores, min(k, items.shape[0]), dim=1)


def _chunk(items: Any, start: int, stop: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(items, torch.Tensor):
        return items[start:stop].to(device=device, dtype=dtype, non_blocking=True)
    # np.array copies (a memmap slice is read-only) and converts on the host in one pass.
    block = np.array(items[start:stop], dtype=np.float16 if dtype == torch.float16 else np.float32)
    return torch.from_numpy(block).to(device=device, non_blocking=True)
