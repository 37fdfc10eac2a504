"""The file text the cascade reads (linker/cascade/text.py) and how it is cut (linker/cascade/linker.py)."""

from __future__ import annotations

import pytest

from wikivel_bot.linker.cascade.text import cascade_file_text, descriptive_categories, media_text
from wikivel_bot.types import MediaFile


def test_file_name_is_cleaned_as_in_seed_004():
    text = cascade_file_text("File:Red_fox-in_snow_(Vulpes_vulpes).JPG", "", ())
    assert text == "Red fox in snow (Vulpes vulpes)"


def test_maintenance_categories_are_left_out():
    kept = descriptive_categories([
        "Category:Red foxes in Germany", "Category:CC-BY-SA-4.0", "Category:Photographs by John Doe",
        "Category:Files with no machine-readable author", "Category:Uploaded with UploadWizard",
        "Category:Quality images", "Category:Foxes_in_winter", "Category:2024-01-05",
    ])
    assert kept == ["Red foxes in Germany", "Foxes in winter"]


def test_parts_joined_and_empty_ones_dropped():
    media = MediaFile(page_id=1, title="File:IMG_1234.jpg", description="  A fox\n in the   snow ",
                      categories=("Category:Vulpes vulpes", "Category:Self-published work"))
    assert media_text(media) == "IMG 1234. A fox in the snow. Vulpes vulpes"
    assert cascade_file_text("File:X.png", "", ["Category:GFDL"]) == "X"


def test_short_tokens_keep_an_end_of_text_token():
    pytest.importorskip("open_clip")
    import open_clip

    from wikivel_bot.linker.cascade.linker import short_tokens

    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    long_text = " ".join(["fox"] * 60)
    tokens = short_tokens(tokenizer, [long_text, "a fox"], 16)
    assert tokens.shape == (2, 16)
    eot = tokenizer(["a"]).max().item()
    assert tokens[0, -1].item() == eot and tokens[0].argmax().item() == 15  # CLIP pools at the argmax
    full = tokenizer(["a fox"])[0]
    assert tokens[1].tolist() == full[:16].tolist()  # short texts are unchanged


def test_length_groups_pad_each_text_to_its_own_kind():
    from wikivel_bot.linker.backbone.text_tower import length_groups

    lengths = [32, 5, 32, 6, 31, 7, 5, 30, 32, 6]
    groups = length_groups(lengths, slack=8, min_group=4)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))  # every row once
    assert [sorted(lengths[i] for i in g) for g in groups] == [[5, 5, 6, 6, 7], [30, 31, 32, 32, 32]]
    # Too few short texts for a pass of their own ride with the long ones.
    assert len(length_groups([3, 32, 32, 32, 32], slack=8, min_group=4)) == 1
    assert all(len(g) <= 2 for g in length_groups([4] * 5, max_group=2))
    assert length_groups([]) == []


def test_file_texts_of_mixed_lengths_encode_as_each_alone(monkeypatch):
    """Grouped by length, each file text gets the embedding it gets when encoded on its own."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    from tests.linker_support import tiny_settings
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.backbone import text_tower
    from wikivel_bot.linker.cascade import linker as cascade
    from wikivel_bot.linker.cascade.linker import encode_file_texts

    backbone = create_linker("fusion", tiny_settings(precision="fp32")).backbone
    long = "Church of Saint Mary in the snow at night, seen from the market square with lights"
    texts = ["Fox", long, "", "A red church", long + " and a tram", "Tram 7", "Bridge", "Owl", "Tram " + long,
             "Snow. " + long]
    widths = []
    real = text_tower.encode_tokens

    def spy(bb, tokens, model=None):
        widths.append(int(text_tower.token_lengths(tokens).max()))
        return real(bb, tokens, model)

    monkeypatch.setattr(cascade, "encode_tokens", spy)
    grouped, present = encode_file_texts(backbone, texts, 16)
    monkeypatch.undo()
    alone = [encode_file_texts(backbone, [t], 16)[0][0] for t in texts]
    assert present.tolist() == [bool(t) for t in texts]
    assert torch.allclose(grouped, torch.stack(alone), atol=1e-5, rtol=1e-4)
    assert grouped[2].abs().sum() == 0  # no text: zeros
    # The short texts were not padded to the long ones' 16 tokens.
    assert sorted(widths) == [5, 16] and len(widths) == 2
