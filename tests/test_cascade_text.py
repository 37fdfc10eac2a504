"""The file text the cascade reads (linker/cascade_text.py) and how it is cut (linker/cascade.py)."""

from __future__ import annotations

import pytest

from wikivel_bot.linker.cascade_text import cascade_file_text, descriptive_categories, media_text
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

    from wikivel_bot.linker.cascade import short_tokens

    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    long_text = " ".join(["fox"] * 60)
    tokens = short_tokens(tokenizer, [long_text, "a fox"], 16)
    assert tokens.shape == (2, 16)
    eot = tokenizer(["a"]).max().item()
    assert tokens[0, -1].item() == eot and tokens[0].argmax().item() == 15  # CLIP pools at the argmax
    full = tokenizer(["a fox"])[0]
    assert tokens[1].tolist() == full[:16].tolist()  # short texts are unchanged
