"""The texts the linker encodes: item templates and a file's own text."""

from __future__ import annotations

import pytest

from wikivel_bot.linker.texts import clean_title, file_text, render_item_text
from wikivel_bot.types import MediaFile


@pytest.mark.parametrize(
    ("template", "label", "description", "expected"),
    [
        ("{label}, {description}", "house cat", "domesticated feline", "house cat, domesticated feline"),
        ("{label}, {description}", "house cat", "", "house cat"),
        ("{label}, {description}", "", "domesticated feline", "domesticated feline"),
        ("a photo of {label}, {description}", "sheep", "", "a photo of sheep"),
        ("{label}", "dog", "ignored", "dog"),
    ],
)
def test_render_item_text_leaves_out_empty_fields_with_their_separator(template, label, description, expected):
    assert render_item_text(template, label, description) == expected


def test_clean_title_follows_the_filename_cleaning_of_seed_004():
    assert clean_title("File:Red_fox_(Vulpes_vulpes)_in_snow.JPG") == "Red fox (Vulpes vulpes) in snow"
    assert clean_title("https://upload.wikimedia.org/a/ab/Tour_Eiffel.jpeg") == "Tour Eiffel"


def test_file_text_joins_the_requested_parts_in_order():
    media = MediaFile(page_id=1, title="File:Etna_2021.jpg", description="  Etna   erupting ",
                      categories=("Category:Mount_Etna", "Volcanoes of Italy"))
    assert file_text(media, ("description", "categories")) == "Etna erupting. Mount Etna; Volcanoes of Italy"
    assert file_text(media, ("title",)) == "Etna 2021"
    assert file_text(MediaFile(page_id=2, title="File:X.png"), ("description", "categories")) == ""


def test_zero_shot_encodes_the_naive_clip_item_text_without_a_prompt(tmp_path):
    # Table 4's zero-shot row is Naive CLIP without heads: item text = label + ", " + description.
    import numpy as np

    from tests.linker_support import tiny_settings
    from wikivel_bot.labels import label_set_from_records
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.backbone.text_tower import encode_texts

    labels = label_set_from_records([
        {"qid": "Q146", "label": "house cat", "description": "domesticated feline"},
        {"qid": "Q144", "label": "dog", "description": ""},
    ])
    expected = {"zero-shot": ["dog", "house cat, domesticated feline"],
                "zero-shot-prompt": ["a photo of dog", "a photo of house cat, domesticated feline"]}
    for name, texts in expected.items():
        linker = create_linker(name, tiny_settings())
        linker.attach(labels, str(tmp_path))
        want = encode_texts(linker.backbone, texts).float().numpy()
        got = np.asarray(linker._items, dtype=np.float32)
        # The index stores fp16: equal to the encoded texts within fp16 rounding.
        assert np.allclose(got, want, atol=2e-3), name
        other = expected["zero-shot-prompt" if name == "zero-shot" else "zero-shot"]
        assert not np.allclose(got, encode_texts(linker.backbone, other).float().numpy(), atol=2e-3)
        prompts = [w for w in linker.description.warnings if "prompt" in w]
        if name == "zero-shot":
            assert prompts == []
        else:
            assert prompts == ["item text prompt 'a photo of {label}, {description}' (the paper encodes "
                               "'{label}, {description}' without a prompt)"]
