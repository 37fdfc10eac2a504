"""The file text the cascade's pair model reads: cleaned file name, description, categories.

Seed 004 found the cleaned image file name a strong text signal (§3.2: no path, no extension,
underscores and dashes as spaces); Commons files also carry a description and categories.
Categories about the *file* rather than what it shows (users, licenses, upload dates,
maintenance and tracking) are left out — the dataset builder drops the same kinds
(``train/categories.py`` holds the full, configurable list used for datasets; the short
list here covers the kinds that appear on nearly every upload, and keeps ``linker`` free of
an import from ``train``).

Torch-free and pure.
"""

from __future__ import annotations

import re
from typing import Iterable, List

from wikivel_bot.linker.texts import clean_title
from wikivel_bot.types import MediaFile

# Anchored like train/categories.py's DEFAULT_PATTERNS; matched case-insensitively on the
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


def cascade_file_text(title: str, description: str, categories: Iterable[str]) -> str:
    """``"<cleaned file name>. <description>. <cat>; <cat>"`` with empty parts left out.

    Dashes in the file name become spaces too (seed 004 §3.2).
    """
    name = re.sub(r"\s+", " ", clean_title(title).replace("-", " ")).strip()
    parts = [name, re.sub(r"\s+", " ", description).strip(), "; ".join(descriptive_categories(categories))]
    return ". ".join(p for p in parts if p)


def media_text(media: MediaFile) -> str:
    """:func:`cascade_file_text` of a fetched file."""
    return cascade_file_text(media.title, media.description, media.categories)
