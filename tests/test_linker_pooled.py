"""The last block computes only the pooled rows (linker/backbone/pooled.py): the same embeddings.

On the tiny test model (2 blocks, so the cut block is half the tower) and fp32, against
open_clip's own uncut forward: image embeddings at the class token, text embeddings at the
end-of-text token of texts of different lengths in one batch (each row attends to its own
prefix only), and the training path (gradients on) left uncut.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from tests.linker_support import tiny_settings  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.backbone.text_tower import encode_tokens  # noqa: E402
from wikivel_bot.linker.backbone.pooled import MARK, class_token_only  # noqa: E402

TEXTS = ["a", "a red church", "the tower of a church in the snow at night, with its lights on", ""]


@pytest.fixture(scope="module")
def backbone():
    # fusion reads file text: the full model, with the precision (and the cut) applied.
    return create_linker("fusion", tiny_settings(precision="fp32")).backbone


def _uncut_image(model, pixels):
    block = model.visual.transformer.resblocks[-1]
    cut = block.__dict__.pop("forward")
    try:
        return model.encode_image(pixels)
    finally:
        block.forward = cut


def test_the_image_tower_is_cut_and_gives_the_same_embeddings(backbone):
    model = backbone.model
    assert getattr(model.visual.transformer.resblocks[-1], MARK, False), "apply_precision did not cut the tower"
    assert class_token_only(model)  # idempotent: already cut, still reported as cut
    pixels = torch.randn(5, 3, backbone.image_size, backbone.image_size, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        cut, uncut = model.encode_image(pixels), _uncut_image(model, pixels)
    assert cut.shape == uncut.shape == (5, backbone.embed_dim)
    assert torch.allclose(cut, uncut, atol=1e-5, rtol=1e-4)
    # And not trivially: the cut block's output matters (another batch gives other rows).
    with torch.inference_mode():
        assert not torch.allclose(model.encode_image(pixels.flip(0)), cut)


def test_texts_of_different_lengths_keep_their_embeddings(backbone):
    model = backbone.model
    tokens = backbone.tokenizer(TEXTS)
    with torch.inference_mode():
        cut = encode_tokens(backbone, tokens)
        uncut = model.encode_text(tokens)  # open_clip's own: 77 positions, every row
    assert torch.allclose(cut, uncut, atol=1e-5, rtol=1e-4)
    # Each text alone gives what it gives in the batch (no row reads another's positions).
    with torch.inference_mode():
        for i in range(len(TEXTS)):
            assert torch.allclose(encode_tokens(backbone, tokens[i:i + 1]), cut[i:i + 1], atol=1e-5, rtol=1e-4)


def test_training_runs_the_whole_last_block(backbone, monkeypatch):
    import copy

    from wikivel_bot.linker.backbone import pooled

    tokens = backbone.tokenizer(TEXTS)
    with torch.inference_mode():
        expected = encode_tokens(backbone, tokens)
    trainable = copy.deepcopy(backbone.model).requires_grad_(True)  # as train/ does with the text tower
    calls = []
    monkeypatch.setattr("wikivel_bot.linker.backbone.text_tower.last_block_rows",
                        lambda *a, **k: calls.append(1) or pooled.last_block_rows(*a, **k))
    with torch.enable_grad():
        features = encode_tokens(backbone, tokens, model=trainable)
        features.sum().backward()
    assert not calls, "the cut ran with gradients on"
    last = trainable.transformer.resblocks[-1]
    assert last.mlp.c_fc.weight.grad is not None and last.mlp.c_fc.weight.grad.abs().sum() > 0
    assert torch.allclose(features.detach(), expected, atol=1e-5, rtol=1e-4)
    with torch.inference_mode():
        encode_tokens(backbone, tokens)
    assert calls, "the cut did not run at inference"


def test_a_tower_that_pools_otherwise_is_left_alone(backbone):
    import copy

    model = copy.deepcopy(backbone.model)
    last = model.visual.transformer.resblocks[-1]
    last.__dict__.pop("forward")
    delattr(last, MARK)
    model.visual.pool_type = "avg"  # pooled over every patch: every row is needed
    assert not class_token_only(model)
    assert "forward" not in last.__dict__
