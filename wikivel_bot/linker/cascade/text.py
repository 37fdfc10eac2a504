"""The file text the cascade's pair model reads: cleaned file name, categories, description.

The parts come in the order of what they are worth, because the text is cut at
``cascade.text_tokens`` tokens and what comes last is what gets cut: the cleaned file name
(seed 004's strongest text signal), then the descriptive categories (short and curated),
then the description (often long: a cut there loses least). Before, the categories came
last and a one-sentence description pushed them past the cut. ``bench/cascade_text.py``
chose this order and kept the default budget (24) on synthetic data (docs/cascade.md, "File
text: order and budget"). A checkpoint records the order it was trained with
(:data:`LEGACY_ORDER` for checkpoints saved before it did).

Seed 004 found the cleaned image file name a strong text signal (§3.2: no path, no extension,
underscores and dashes as spaces); Commons files also carry a description and categories.
Categories about the *file* rather than what it shows (users, licenses, upload dates,
maintenance and tracking) are left out — the dataset builder drops the same kinds
(``train/data/categories.py`` holds the full, configurable list used for datasets; the short
list here covers the kinds that appear on nearly every upload, and keeps ``linker`` free of
an import from ``train``).

Torch-free and pure.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Sequence, Tuple

from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.texts import clean_title
from wikivel_bot.types import MediaFile

PARTS = ("categories", "name", "description")
# The order the cascade reads (and trains with) unless a checkpoint says otherwise; measured
# by bench/cascade_text.py against categories first and the old order (docs/cascade.md).
TEXT_ORDER: Tuple[str, ...] = ("name", "categories", "description")
# What checkpoints saved before the order was recorded were trained with.
LEGACY_ORDER: Tuple[str, ...] = ("name", "description", "categories")

# Anchored like train/data/categories.py's DEFAULT_PATTERNS; matched case-insensitively on the
# name without "Category:" and with spaces for underscores.
_NOT_ABOUT_THE_IMAGE = re.compile(
    r"(\bUser:|^(Photographs|Photos|Pictures|Images|Files|Media) (by|from|taken by|uploaded by) "
    r"|^Self-published work|uploaded (on|in|during|with|via|by|from|using) |^Uploaded |taken on \d{4}"
    r"|^\d{4}-\d{2}-\d{2}$|^(CC[- ](BY|Zero|0|PD)|Creative Commons|GFDL|FAL|PD[- ]|Public domain|License"
    r"|Licensed|Attribution only|Copyrighted free use|No known copyright)"
    r"|^(Files|Pages|Media|Images|Photos|Items) (with|without|needing|lacking|missing|requiring|to be|in need of"
    r"|using|moved|transferred)\b|^(Hidden categories|Uncategorized|Check categories|Deletion requests"
    r"|Media needing|Quality images|Featured pictures|Valued images|Pictures of the day|Supported by"
    r"|Wiki Loves|Template:|Taken with|Photos taken with|Exif)|\b(OTRS|VRT|VRTS) (permission|pending|received)"
    r"|^(Retouched|Cropped|Scanned) (pictures|images|photos|photographs|files)\b)",
    re.IGNORECASE,
)


def descriptive_categories(categories: Iterable[str]) -> List[str]:
    """Category names (no ``Category:``, spaces for underscores) that describe the image."""
    out = []
    for category in categories:
        name = category.split(":", 1)[1] if category.lower().startswith("category:") else category
        name = name.replace("_", " ").strip()
        if name and not _NOT_ABOUT_THE_IMAGE.search(name):
            out.append(name)
    return out


def check_order(order: Sequence[str]) -> Tuple[str, ...]:
    """``order`` as a tuple when it names each of :data:`PARTS` once.

    :raises LinkerError: naming the order given.
    """
    found = tuple(str(p) for p in order)
    if sorted(found) != sorted(PARTS):
        raise LinkerError(f"file-text order {','.join(found) or '(empty)'!r} must name each of "
                          f"{', '.join(PARTS)} once")
    return found


def cascade_file_text(title: str, description: str, categories: Iterable[str],
                      order: Sequence[str] = TEXT_ORDER) -> str:
    """``"<cleaned file name>. <cat>; <cat>. <description>"`` (parts in ``order``), empty parts left out.

    Dashes in the file name become spaces too (seed 004 §3.2).

    :param order: the parts' order, a permutation of :data:`PARTS` (default :data:`TEXT_ORDER`).
    """
    name = re.sub(r"\s+", " ", clean_title(title).replace("-", " ")).strip()
    # A description's own final full stop would double the separator (and cost a token).
    parts = {"name": name, "description": re.sub(r"\s+", " ", description).strip().rstrip(". ").strip(),
             "categories": "; ".join(descriptive_categories(categories))}
    return ". ".join(parts[p] for p in check_order(order) if parts[p])


def media_text(media: MediaFile, order: Sequence[str] = TEXT_ORDER) -> str:
    """:func:`cascade_file_text` of a fetched file."""
    return cascade_file_text(media.title, media.description, media.categories, order)
