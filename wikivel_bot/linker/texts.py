"""The texts a linker encodes: an item's text from a template, a file's own text.

Torch-free and pure, so the label index key can include exactly what was encoded.
"""

from __future__ import annotations

import re
from typing import Sequence

from wikivel_bot.types import MediaFile

_EXTENSION = re.compile(r"\.(jpe?g|png|gif|tiff?|webp|svg|bmp|xcf|djvu|pdf|ogv|webm)$", re.IGNORECASE)
_SEPARATORS = " ,;:-"


def render_item_text(template: str, label: str, description: str) -> str:
    """Fill an item text template such as ``"{label}, {description}"``.

    An empty field is left out together with the separator next to it, so an item without a
    description becomes ``"cat"``, not ``"cat, "`` (CLIP embeds the trailing comma too).

    :param template: text with ``{label}`` and/or ``{description}``.
    :param label: the item's label ('' when none).
    :param description: the item's description ('' when none).
    """
    text = template
    for name, value in (("label", label), ("description", description)):
        if value:
            continue
        # Drop the placeholder and one separator run before it (or after it at the start).
        text = re.sub(r"[ ,;:\-]*\{" + name + r"\}", "", text)
        text = re.sub(r"^\{" + name + r"\}[ ,;:\-]*", "", text)
    text = text.format(label=label.strip(), description=description.strip())
    return text.strip(_SEPARATORS)


def clean_title(title: str) -> str:
    """A file title as text: no ``File:`` prefix, no extension, underscores as spaces.

    (The filename cleaning of the WIT cascade paper, seed 004 §3.2.)

    :param title: e.g. ``"File:Red_fox_(Vulpes_vulpes)_in_snow.jpg"``.
    """
    name = title.split(":", 1)[1] if title.lower().startswith(("file:", "image:")) else title
    name = name.rsplit("/", 1)[-1]
    name = _EXTENSION.sub("", name)
    return re.sub(r"\s+", " ", name.replace("_", " ")).strip()


def file_text(media: MediaFile, fields: Sequence[str]) -> str:
    """The file's own text for linkers that read it (fusion's Commons encoder).

    :param media: the file.
    :param fields: which parts, in order: ``title``, ``description``, ``categories``.
    :returns: the parts joined with ". "; '' when the file has none of them.
    """
    parts = []
    for name in fields:
        if name == "title":
            parts.append(clean_title(media.title))
        elif name == "description":
            parts.append(re.sub(r"\s+", " ", media.description).strip())
        elif name == "categories":
            cats = [c.split(":", 1)[1] if c.lower().startswith("category:") else c for c in media.categories]
            parts.append("; ".join(c.replace("_", " ").strip() for c in cats if c.strip()))
    return ". ".join(p for p in parts if p)
