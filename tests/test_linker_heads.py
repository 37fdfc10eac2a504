"""Heads (shape, residual, masking) and self-describing checkpoints (round trip, refusals)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from tests.linker_support import animals_label_set, tiny_settings  # noqa: E402
from wikivel_bot.errors import LinkerError  # noqa: E402
from wikivel_bot.linker import checkpoint as ckpt  # noqa: E402
from wikivel_bot.linker.clip import backbone_info, build_clip_linker  # noqa: E402
from wikivel_bot.linker.backbone.text_tower import text_tower_state  # noqa: E402
from wikivel_bot.linker.heads import FusionHead, MLPHead, NaiveHeads, build_heads  # noqa: E402
from wikivel_bot.linker.spec import get_spec  # noqa: E402


def test_mlp_head_layers_follow_the_paper():
    head = MLPHead(32)
    first, relu, dropout, last = head.net
    assert (first.in_features, first.out_features) == (32, 64)
    assert isinstance(relu, torch.nn.ReLU)
    assert dropout.p == 0.5
    assert (last.in_features, last.out_features) == (64, 32)


def test_mlp_head_is_residual_and_starts_as_identity():
    torch.manual_seed(0)
    head = MLPHead(32).eval()
    x = torch.randn(5, 32)
    assert head(x).shape == (5, 32)
    assert torch.equal(head(x), x)  # zero-initialised last layer: untrained = zero-shot
    torch.nn.init.normal_(head.net[-1].weight)
    assert torch.allclose(head(x), x + head.net(x))
    assert not torch.allclose(head(x), x)


def test_fusion_head_ignores_absent_modalities():
    torch.manual_seed(0)
    head = FusionHead(32, layers=1).eval()
    torch.nn.init.normal_(head.proj.weight)  # make the transformer path matter
    tokens = torch.randn(2, 2, 32)
    present = torch.tensor([[True, False], [True, False]])
    changed = tokens.clone()
    changed[:, 1] = torch.randn(2, 32) * 10
    out = head(tokens, present)
    assert out.shape == (2, 32)
    assert torch.allclose(out, head(changed, present), atol=1e-5)
    assert not torch.allclose(out, head(tokens, torch.ones(2, 2, dtype=torch.bool)))


def test_untrained_fusion_head_returns_the_mean_of_present_embeddings():
    head = FusionHead(32, layers=1).eval()
    tokens = torch.randn(3, 2, 32)
    present = torch.tensor([[True, True], [True, False], [False, True]])
    expected = torch.stack([tokens[0].mean(0), tokens[1, 0], tokens[2, 1]])
    assert torch.allclose(head(tokens, present), expected, atol=1e-6)


def test_build_heads_rejects_options_of_another_architecture():
    with pytest.raises(LinkerError, match="do not apply"):
        build_heads("naive", 32, {"layers": 2})
    assert build_heads("zero-shot", 32, {}) is None


@pytest.fixture(scope="module")
def naive_setup(tmp_path_factory):
    spec = get_spec("naive-mlp")
    linker = build_clip_linker(spec, tiny_settings())
    heads = NaiveHeads(linker.backbone.embed_dim)
    torch.nn.init.normal_(heads.image_head.net[-1].weight)
    path = tmp_path_factory.mktemp("ckpt") / "naive.pt"
    labels = animals_label_set()
    ckpt.save_checkpoint(path, spec=spec, backbone=backbone_info(linker.backbone), heads=heads,
                         labelset_hash=labels.content_hash, extra={"epochs": 1})
    return spec, linker, heads, path, labels


def test_checkpoint_round_trip_rebuilds_the_heads_from_the_file_alone(naive_setup):
    spec, linker, heads, path, labels = naive_setup
    loaded = ckpt.load_checkpoint(path)
    assert loaded.linker == "naive-mlp"
    assert loaded.open_clip["random_weights"] is True
    assert loaded.extra == {"epochs": 1}
    rebuilt = loaded.build_heads()
    x = torch.randn(4, linker.backbone.embed_dim)
    assert torch.allclose(rebuilt.image_head(x), heads.eval().image_head(x))
    built = build_clip_linker(spec, tiny_settings(checkpoint=str(path)))
    assert built.description.version.endswith(f"ckpt:{loaded.digest[:12]}")
    assert built.attach(labels, cache_dir=str(path.parent / "cache")).items == len(labels.qids)


def test_checkpoint_for_another_label_set_is_refused(naive_setup, tmp_path):
    spec, _, _, path, _ = naive_setup
    other = animals_label_set(extra=[("Q7377", "mammal", "", "")])
    linker = build_clip_linker(spec, tiny_settings(checkpoint=str(path)))
    with pytest.raises(LinkerError, match="trained for label set .* but the label set in use is"):
        linker.attach(other, cache_dir=str(tmp_path))


def test_checkpoint_for_another_backbone_is_refused(naive_setup, tmp_path):
    spec, linker, heads, _, labels = naive_setup
    info = dict(backbone_info(linker.backbone), model="ViT-B-32", pretrained="openai", random_weights=False)
    path = ckpt.save_checkpoint(tmp_path / "b32.pt", spec=spec, backbone=info, heads=heads, labelset_hash=labels.content_hash)
    with pytest.raises(LinkerError, match="trained on backbone ViT-B-32/openai, but this linker uses wikivel-tiny-test with random weights"):
        build_clip_linker(spec, tiny_settings(checkpoint=str(path)))


def test_checkpoint_for_another_architecture_is_refused(naive_setup):
    _, _, _, path, _ = naive_setup
    with pytest.raises(LinkerError, match="holds a naive head"):
        build_clip_linker(get_spec("fusion"), tiny_settings(checkpoint=str(path)))


def test_naive_te_checkpoint_needs_and_loads_the_text_encoder(naive_setup, tmp_path):
    _, linker, heads, path, labels = naive_setup
    spec = get_spec("naive-te")
    with pytest.raises(LinkerError, match="no text encoder weights"):
        build_clip_linker(spec, tiny_settings(checkpoint=str(path)))
    state = text_tower_state(linker.backbone.model)
    state["ln_final.bias"] = state["ln_final.bias"] + 1.0
    te_path = ckpt.save_checkpoint(tmp_path / "te.pt", spec=spec, backbone=backbone_info(linker.backbone),
                                   heads=heads, labelset_hash=labels.content_hash, text_encoder=state)
    built = build_clip_linker(spec, tiny_settings(checkpoint=str(te_path)))
    assert torch.equal(built.backbone.model.ln_final.bias, state["ln_final.bias"])


def test_foreign_or_missing_checkpoint_files_are_refused(tmp_path):
    torch.save({"model": 1}, tmp_path / "other.pt")
    with pytest.raises(LinkerError, match="not a wikivel-bot linker checkpoint"):
        ckpt.load_checkpoint(tmp_path / "other.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(LinkerError, match="not a readable checkpoint"):
        ckpt.load_checkpoint(tmp_path / "junk.pt")
    with pytest.raises(LinkerError, match="checkpoint not found"):
        ckpt.load_checkpoint(tmp_path / "missing.pt")
