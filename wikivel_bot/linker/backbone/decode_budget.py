"""Bounded memory for linking many images: group them by decoded size, not by count.

A decoded RGB image takes 3 bytes per pixel whatever its file size: 32 photos of 39
megapixels are 3.7 GB decoded, plus their file bytes. :func:`pixel_batches` cuts a stream of
images into groups whose pixels add up to at most a budget (one image alone may exceed it;
the decompression-bomb guard of ``images.decode_image`` still applies), so the caller holds
at most one group's bytes and decoded images at a time.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, TypeVar, Union

# 40 megapixels decoded is about 120 MB: a few camera photos, or hundreds of thumbnails.
DECODE_BUDGET_PIXELS = 40_000_000

T = TypeVar("T")


def header_pixels(source: Union[bytes, Path]) -> int:
    """width × height from the image header only (no pixel is decoded); 0 if unreadable,
    so an unreadable file costs nothing here and gets its reason when decoded."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            handle = io.BytesIO(source) if isinstance(source, bytes) else source
            with Image.open(handle) as image:
                width, height = image.size
                return int(width) * int(height)
    except Exception:  # noqa: BLE001 - any unreadable header is "size unknown"
        return 0


def pixel_batches(items: Iterable[T], pixels_of: Callable[[T], int], *, max_pixels: int = DECODE_BUDGET_PIXELS,
                  max_count: int = 32) -> Iterator[List[T]]:
    """Consecutive groups of ``items``, each at most ``max_count`` long and, unless it holds
    a single item, at most ``max_pixels`` pixels in total.

    :param items: any iterable; it is consumed lazily, one group ahead at most.
    :param pixels_of: an item's decoded size in pixels (0 when unknown).
    """
    group: List[T] = []
    total = 0
    for item in items:
        pixels = max(0, pixels_of(item))
        if group and (len(group) >= max_count or total + pixels > max_pixels):
            yield group
            group, total = [], 0
        group.append(item)
        total += pixels
    if group:
        yield group
