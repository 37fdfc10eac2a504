"""The cascade's pair model: shapes, masks, attentive α (linker/cascade/pair.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from wikivel_bot.errors import LinkerError  # noqa: E402
from wikivel_bot.linker.cascade.pair import build_pair_model, pair_args  # noqa: E402

DIM = 16


def _inputs(batch: int = 3, k: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    files = F.normalize(torch.randn(batch, 2, DIM, generator=g), dim=-1)
    items = F.normalize(torch.randn(batch, k, 2, DIM, generator=g), dim=-1)
    file_mask = torch.ones(batch, 2, dtype=torch.bool)
    item_mask = torch.ones(batch, k, 2, dtype=torch.bool)
    first = torch.rand(batch, k, generator=g)
    return files, file_mask, items, item_mask, first


def _trained_like(seed: int = 1):
    """A pair model with every weight random (as after training), so α and scores move."""
    torch.manual_seed(seed)
    model = build_pair_model(DIM, {"width": 8, "heads": 2, "hidden": 8, "dropout": 0.0})
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    return model.eval()


def test_shapes_and_alpha_sums_to_one():
    model = _trained_like()
    out = model(*_inputs(batch=3, k=5))
    assert out.logits.shape == (3, 5) and out.scores.shape == (3, 5) and out.alpha.shape == (3, 2)
    assert torch.allclose(out.alpha.sum(dim=1), torch.ones(3))
    assert ((out.alpha > 0) & (out.alpha < 1)).all()
    assert torch.allclose(out.scores * model.first_weight, out.logits)


def test_untrained_model_ranks_like_the_first_stage():
    model = build_pair_model(DIM, {}).eval()
    files, file_mask, items, item_mask, first = _inputs()
    out = model(files, file_mask, items, item_mask, first)
    # The scoring layer starts at zero: score == first-stage cosine, α equal for both modalities.
    assert torch.allclose(out.scores, first, atol=1e-6)
    assert torch.allclose(out.alpha, torch.full((3, 2), 0.5))


def test_blanked_text_moves_alpha_to_the_image():
    model = _trained_like()
    files, file_mask, items, item_mask, first = _inputs()
    both = model(files, file_mask, items, item_mask, first).alpha
    no_text = file_mask.clone()
    no_text[:, 1] = False
    blank = model(files, no_text, items, item_mask, first).alpha
    assert torch.allclose(blank[:, 0], torch.ones(3)) and torch.allclose(blank[:, 1], torch.zeros(3))
    assert (blank[:, 0] > both[:, 0]).all()
    # Zeroing the text embedding instead of masking it also moves α (the MLP reads both).
    zeroed = files.clone()
    zeroed[:, 1] = 0
    moved = model(zeroed, file_mask, items, item_mask, first).alpha
    assert not torch.allclose(moved, both)


def test_masked_modalities_do_not_leak_into_scores():
    model = _trained_like()
    files, file_mask, items, item_mask, first = _inputs()
    file_mask[:, 1] = False
    item_mask[..., 1] = False
    reference = model(files, file_mask, items, item_mask, first)
    # Whatever sits in an absent slot changes nothing.
    files2, items2 = files.clone(), items.clone()
    files2[:, 1] = torch.randn_like(files2[:, 1])
    items2[..., 1, :] = torch.randn_like(items2[..., 1, :])
    again = model(files2, file_mask, items2, item_mask, first)
    assert torch.allclose(reference.logits, again.logits, atol=1e-5)
    assert torch.allclose(reference.alpha, again.alpha)
    # ...while a present slot does change the scores.
    file_mask[:, 1] = True
    changed = model(files2, file_mask, items2, item_mask, first)
    assert not torch.allclose(reference.logits, changed.logits, atol=1e-3)


def test_candidates_are_scored_independently():
    model = _trained_like()
    files, file_mask, items, item_mask, first = _inputs(k=6)
    full = model(files, file_mask, items, item_mask, first)
    part = model(files, file_mask, items[:, :3], item_mask[:, :3], first[:, :3])
    assert torch.allclose(full.logits[:, :3], part.logits, atol=1e-5)


def test_unknown_options_are_refused():
    with pytest.raises(LinkerError, match="unknown"):
        pair_args({"widht": 3})
    with pytest.raises(LinkerError, match="multiple of heads"):
        build_pair_model(DIM, {"width": 9, "heads": 2})
