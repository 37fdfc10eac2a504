"""File titles as MediaWiki accepts them, checked before any request or query.

MediaWiki refuses a title longer than 255 bytes (UTF-8) or containing one of ``#<>[]|{}``
or a control character, and a file name needs an extension (``.jpg``). pywikibot raises
for some of these only deep inside a request; checking here gives one line that names the
title and the rule it breaks.
"""

from __future__ import annotations

from wikivel_bot.errors import UsageError

MAX_TITLE_BYTES = 255
ILLEGAL_CHARACTERS = "#<>[]|{}"
FILE_PREFIXES = ("file:", "image:")


def check_file_title(text: str) -> str:
    """``File:Name.ext`` with spaces for underscores, or UsageError naming the problem.

    :param text: a title as a user typed it (``File:`` or ``Image:`` prefix, any case).
    :raises UsageError: no ``File:`` prefix, empty name, too long, a character MediaWiki
        titles cannot contain, or no file extension.
    """
    raw = text.strip()
    shown = _shorten(raw)
    prefix = next((p for p in FILE_PREFIXES if raw.lower().startswith(p)), None)
    if prefix is None:
        raise UsageError(f"{shown} is not a file title (expected File:Name.jpg)")
    name = " ".join(raw[len(prefix):].replace("_", " ").split())
    if not name:
        raise UsageError(f"{shown}: the file name is empty (expected File:Name.jpg)")
    title = "File:" + name[:1].upper() + name[1:]
    size = len(name.encode("utf-8"))
    if size > MAX_TITLE_BYTES:
        raise UsageError(
            f"{shown} is not a valid file title: the name is {size} bytes long, "
            f"MediaWiki allows at most {MAX_TITLE_BYTES}"
        )
    bad = sorted({ch for ch in name if ch in ILLEGAL_CHARACTERS or ord(ch) < 32 or ord(ch) == 127})
    if bad:
        listed = " ".join(repr(ch) for ch in bad)
        raise UsageError(f"{shown} is not a valid file title: MediaWiki titles cannot contain {listed}")
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem.strip() or not extension.strip():
        raise UsageError(f"{shown} is not a valid file title: a file name needs an extension (like .jpg)")
    return title


def _shorten(text: str, limit: int = 80) -> str:
    """The title as shown in an error: quoted, and cut in the middle when very long."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit // 2] + "…" + text[-limit // 4:]) + f" ({len(text)} characters)"
