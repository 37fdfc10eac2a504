"""How a Commons file's name is written where titles, P18 values and loose files meet.

A file title (``File:Red_fox.jpg``), an item's P18 image (``Red fox.jpg``) and a loose image
file on disk name the same file in different spellings. Both the dataset (removing from the
test split files that are some item's P18 image) and the image store (finding a file by
name) compare them in the one form below, so it lives beneath both.
"""

from __future__ import annotations

from wikivel_bot.core.titles import FILE_PREFIXES, page_name


def file_name(title: str) -> str:
    """``File:Red_fox.jpg`` / ``Red fox.jpg`` -> ``Red fox.jpg`` (how P18 values are written)."""
    return page_name(title, FILE_PREFIXES)
