"""Decoding thumbnails safely: one bad file must cost one reason, never the batch.

Pillow refuses images above ``Image.MAX_IMAGE_PIXELS`` only with a warning (and with an error
at twice that); a thumbnail endpoint should never send such a thing, so anything above our own
limit is a reason, checked from the header before any pixel is decoded.
"""

from __future__ import annotations

import io
import logging
import warnings
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence, Tuple

from PIL import Image, ImageOps, UnidentifiedImageError

from wikivel_bot.errors import FileUnavailable

log = logging.getLogger(__name__)

# 40 megapixels: far above any thumbnail step (3840 px wide), far below what would take
# gigabytes to decode.
MAX_PIXELS = 40_000_000


def decode_image(data: bytes, *, max_pixels: int = MAX_PIXELS, min_side: Optional[int] = None) -> Any:
    """Decode image bytes into an RGB ``PIL.Image``.

    :param data: the file's (thumbnail) bytes.
    :param max_pixels: refuse images with more pixels than this (decompression bombs).
    :param min_side: when given, JPEGs are decoded at the smallest DCT scale that still
        leaves both sides at least this large (2-8x faster for big JPEGs, same result after
        the model's resize).
    :raises FileUnavailable: empty, not an image, truncated, too many pixels.
    """
    if not data:
        raise FileUnavailable("empty image data")
    # Pillow's own guard (MAX_IMAGE_PIXELS) still applies when it is stricter; None (= off)
    # elsewhere in the process must not switch ours off.
    pillow_limit = Image.MAX_IMAGE_PIXELS
    limit = max_pixels if pillow_limit is None else min(max_pixels, int(pillow_limit))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image: Any = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > limit:
                raise FileUnavailable(
                    f"image too large: {width}x{height} = {width * height} pixels "
                    f"(limit {limit}; decompression bomb guard)"
                )
            if min_side and image.format == "JPEG":
                image.draft("RGB", (min_side, min_side))
            image = ImageOps.exif_transpose(image)
            if image.mode != "RGB":
                image = _to_rgb(image)
            image.load()
            return image
    except FileUnavailable:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise FileUnavailable(f"image too large (decompression bomb guard): {exc}") from None
    except UnidentifiedImageError:
        raise FileUnavailable("not an image Pillow can read (unknown or corrupt format)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        # Truncated and damaged files surface here as OSError ("image file is truncated").
        raise FileUnavailable(f"corrupt image: {exc}") from None


def decode_item_images(
    loader: Callable[[Sequence[str]], Mapping[str, bytes]], wanted: Iterable[Tuple[int, str]], min_side: Optional[int]
) -> Tuple[List[int], List[Any]]:
    """(rows, images): the item images (P18) of ``wanted`` (row, file name) pairs that the
    loader has and that decode; the others are left out (an unreadable image is logged once,
    and the item is ranked by its text alone).

    :param loader: a linker's ``item_image_loader`` (file names → bytes).
    :param min_side: the model's input side (JPEGs are decoded at the smallest scale above it).
    """
    pairs = list(wanted)
    found = loader(sorted({name for _, name in pairs})) if pairs else {}
    rows: List[int] = []
    decoded: List[Any] = []
    for row, name in pairs:
        if name not in found:
            continue
        try:
            decoded.append(decode_image(found[name], min_side=min_side))
            rows.append(row)
        except FileUnavailable as exc:
            log.info("item image %s skipped: %s", name, exc)
    return rows, decoded


def _to_rgb(image: Any) -> Any:
    """RGB with transparency flattened onto white (transparent pixels are often black)."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
