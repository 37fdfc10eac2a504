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
