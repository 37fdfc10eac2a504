"""packed.py: bf16 MLP weights packed once into oneDNN's layout give the same products, keep
the state dict, and survive the exported tower's save and load; prepare_image runs the
checked ImagePrep (numpy, bit-identical to torchvision)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from tests.linker_support import animals_label_set, tiny_settings  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.backbone import packed  # noqa: E402
from wikivel_bot.linker.backbone.encoders import checked_input_steps, load_backbone, prepare_image  # noqa: E402
from wikivel_bot.linker.backbone.text_tower import encode_texts  # noqa: E402
from wikivel_bot.linker.backbone.tower import ExportedBackbone  # noqa: E402

LABELS = animals_label_set()
needs_packing = pytest.mark.skipif(not packed.supported(), reason="this CPU / torch build cannot pack bf16 weights")


@needs_packing
def test_a_packed_layer_gives_the_plain_layers_products_bit_for_bit():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 256).to(torch.bfloat16)
    x = torch.randn(5, 7, 64).to(torch.bfloat16)
    layer = packed.PackedLinear(linear.weight, linear.bias)
    layer.packed = packed._pack(linear.weight)
    assert torch.equal(layer(x), linear(x))
    assert set(layer.state_dict()) == {"weight", "bias"}  # the packed copy is not state


@needs_packing
def test_bf16_linkers_pack_every_mlp_layer_and_embed_as_before(tmp_path):
    linker = create_linker("fusion", tiny_settings(precision="bf16", cache_dir=str(tmp_path)))
    model = linker.backbone.model
    layers = packed.packed_layers(model)
    # Tiny model: 2 image blocks and 2 text blocks, c_fc and c_proj in each, and each
    # tower's first block's attention projections (the last blocks are pooled: pooled.py).
    names = [name for name, _ in layers]
    assert len(layers) == 12 and all(layer.packed is not None for _, layer in layers)
    assert {"visual.transformer.resblocks.0.packed_attention.qkv", "transformer.resblocks.0.packed_attention.out"} <= set(names)
    assert not any("resblocks.1.packed_attention" in name for name in names)
    plain = load_backbone(linker.settings.model, weights="random", device="cpu")
    plain.model = plain.model.to(torch.bfloat16)
    assert set(model.state_dict()) == set(plain.model.state_dict())
    images = torch.randn(3, 3, 32, 32).to(torch.bfloat16)
    texts = ["a red cat on a wall", "Category:Buildings in 2024", ""]
    with torch.inference_mode():
        with packed.unpacked(model):
            want_images, want_texts = linker.backbone.encode_image(images), encode_texts(linker.backbone, texts)
        assert all(layer.packed is not None for _, layer in layers)  # put back on leaving
        assert torch.equal(linker.backbone.encode_image(images), want_images)
        assert torch.equal(encode_texts(linker.backbone, texts), want_texts)


@needs_packing
def test_packed_attention_computes_what_the_native_paths_do():
    linker = create_linker("fusion", tiny_settings(precision="bf16", cache_dir=""))
    model = linker.backbone.model
    image_block, text_block = model.visual.transformer.resblocks[0], model.transformer.resblocks[0]
    assert hasattr(image_block, "packed_attention") and hasattr(text_block, "packed_attention")
    assert not hasattr(model.transformer.resblocks[-1], "packed_attention")  # pooled at inference
    torch.manual_seed(1)
    image_x = torch.randn(4, 17, 64).to(torch.bfloat16)  # batch-first
    text_x = torch.randn(9, 4, 64).to(torch.bfloat16)  # sequence-first, causal
    causal = model.attn_mask[:9, :9]
    with torch.inference_mode():
        for block, x, mask in ((image_block, image_x, None), (text_block, text_x, causal)):
            packed_out = block.attention(x, attn_mask=mask)
            native = type(block).attention(block, x, attn_mask=mask)  # open_clip's, over nn.MultiheadAttention
            assert packed_out.shape == native.shape
            cosine = torch.nn.functional.cosine_similarity(packed_out.float().flatten(), native.float().flatten(), dim=0)
            assert cosine > 0.9995  # bf16 sums in another order, nothing more
            worst = (packed_out.float() - native.float()).abs().max()
            assert worst < 0.05 * native.float().abs().max()
        # Without the mask the text block's first position would see the later ones.
        unmasked = text_block.attention(text_x)
        assert not torch.allclose(unmasked[0].float(), text_block.attention(text_x, attn_mask=causal)[0].float(), atol=1e-3)
    with pytest.raises(NotImplementedError):
        image_block.attention(image_x, k_x=image_x)


def test_fp32_and_int8_linkers_are_not_packed():
    for precision in ("fp32", "int8"):
        linker = create_linker("zero-shot", tiny_settings(precision=precision))
        assert packed.packed_layers(linker.backbone.model) == []


@needs_packing
def test_the_exported_bf16_tower_is_packed_again_at_load_and_answers_alike(tmp_path):
    settings = tiny_settings(precision="bf16", cache_dir=str(tmp_path))
    first = create_linker("zero-shot", settings)  # builds the model, exports the tower
    second = create_linker("zero-shot", settings)  # loads the export
    assert isinstance(second.backbone, ExportedBackbone)
    layers = packed.packed_layers(second.backbone._tower)
    # The image tower only: 2 MLPs and the first block's attention.
    assert len(layers) == 6 and all(layer.packed is not None for _, layer in layers)
    images = torch.randn(5, 3, 32, 32).to(torch.bfloat16)
    with torch.inference_mode():
        assert torch.equal(second.backbone.encode_image(images), first.backbone.encode_image(images))


def test_prepare_image_runs_the_checked_steps_bit_identical_to_torchvision():
    backbone = load_backbone(tiny_settings().model, weights="random", device="cpu")
    steps = checked_input_steps(backbone)
    assert steps is not None and checked_input_steps(backbone) is steps  # worked out once
    rng = np.random.default_rng(3)
    for size in [(50, 40), (32, 32), (17, 90), (301, 203)]:
        image = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
        assert torch.equal(prepare_image(backbone, image), backbone.preprocess(image))


def test_a_replaced_transform_is_checked_again():
    backbone = load_backbone(tiny_settings().model, weights="random", device="cpu")
    assert checked_input_steps(backbone) is not None
    backbone.preprocess = lambda image: torch.zeros(3, 32, 32)  # not one ImagePrep reproduces
    assert checked_input_steps(backbone) is None
    assert torch.equal(prepare_image(backbone, Image.new("RGB", (40, 40))), torch.zeros(3, 32, 32))
