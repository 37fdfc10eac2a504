"""Chunked top-k with a running merge equals a full top-k."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from wikivel_bot.linker.search import chunked_topk, full_topk  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 300),
    batch=st.integers(1, 5),
    dim=st.integers(1, 16),
    k=st.integers(1, 40),
    chunk=st.integers(1, 97),
    seed=st.integers(0, 2**31 - 1),
)
def test_chunked_topk_equals_full_topk(n, batch, dim, k, chunk, seed):
    generator = torch.Generator().manual_seed(seed)
    items = torch.randn(n, dim, generator=generator)
    queries = torch.randn(batch, dim, generator=generator)
    scores, index = chunked_topk(queries, items, k, chunk_size=chunk)
    full_scores, _ = full_topk(queries, items, k)
    assert scores.shape == index.shape == (batch, min(k, n))
    assert torch.allclose(scores, full_scores, atol=1e-5)
    # Same items up to the order of exact ties: each returned index has the returned score.
    all_scores = queries @ items.T
    assert torch.allclose(torch.gather(all_scores, 1, index), scores, atol=1e-5)
    for row in range(batch):
        assert len(set(index[row].tolist())) == index.shape[1]


def test_memory_mapped_fp16_items_are_searched_in_chunks(tmp_path):
    rng = np.random.default_rng(1)
    items = rng.standard_normal((1000, 8)).astype(np.float16)
    path = tmp_path / "items.npy"
    np.save(path, items)
    mapped = np.load(path, mmap_mode="r")
    queries = torch.from_numpy(rng.standard_normal((3, 8)).astype(np.float32))
    scores, index = chunked_topk(queries, mapped, 7, chunk_size=128)
    expected_scores, expected_index = full_topk(queries, torch.from_numpy(items.astype(np.float32)), 7)
    assert torch.allclose(scores, expected_scores, atol=1e-4)
    assert index.tolist() == expected_index.tolist()


def test_k_larger_than_the_index_and_empty_inputs():
    items = torch.eye(3)
    scores, index = chunked_topk(torch.eye(3)[:1], items, 10)
    assert index[0, 0].item() == 0 and sorted(index[0].tolist()) == [0, 1, 2]
    assert scores.shape == (1, 3)
    scores, index = chunked_topk(torch.zeros(0, 3), items, 2)
    assert scores.shape == (0, 2)
    scores, index = chunked_topk(torch.ones(2, 3), torch.zeros(0, 3), 2)
    assert index.shape == (2, 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_half_precision_search_agrees_with_cpu():
    generator = torch.Generator().manual_seed(3)
    items = torch.nn.functional.normalize(torch.randn(20_000, 64, generator=generator), dim=-1)
    queries = torch.nn.functional.normalize(torch.randn(8, 64, generator=generator), dim=-1)
    cpu_scores, cpu_index = chunked_topk(queries, items, 10)
    gpu_scores, gpu_index = chunked_topk(queries.cuda(), items.half().cuda(), 10)
    assert torch.allclose(cpu_scores, gpu_scores, atol=5e-3)
    overlap = [len(set(a) & set(b)) for a, b in zip(cpu_index.tolist(), gpu_index.tolist())]
    assert min(overlap) >= 8
