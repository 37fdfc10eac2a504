"""File titles as MediaWiki accepts them, checked before any request or query.

MediaWiki refuses a title longer than 255 bytes (UTF-8) or containing one of ``#<>[]|{}``
or a control character, and a file name needs an extension (``.jpg``). pywikibot raises
for some of these only deep inside a request; checking here gives one line that names the
title and the rule it breaks.

It is also the one place that capitalises a title's first letter (:func:`first_upper`,
:func:`page_name`): MediaWiki does not use ``str.upper`` there (``ßx`` stays ``ßx``, ``ǆx``
becomes the titlecase ``ǅx``, Georgian stays lower case), and every copy of the rule that
spelled it ``name[:1].upper()`` disagreed with the wiki on such names.
"""

from __future__ import annotations

from typing import Dict, Sequence, Tuple, Union

from wikivel_bot.errors import UsageError

MAX_TITLE_BYTES = 255
ILLEGAL_CHARACTERS = "#<>[]|{}"
FILE_PREFIXES = ("file:", "image:")

# MediaWiki's first-letter exceptions, copied from pywikibot (tools/_unidata.py,
# ``_first_upper_exception_dict``, Phabricator T179115/T200357): the characters whose
# first-letter form on Wikimedia's wikis (PHP's, with their overrides) is not Python's
# ``str.upper``. core/ imports only the standard library, so the
# table is copied rather than imported; tests/test_titles_mediawiki.py checks it against
# pywikibot's ``first_upper`` for every code point. Written as code points and runs (first,
# last[, step]) to stay readable; the two parts together are pywikibot's 801 entries.
# Characters MediaWiki leaves as they are (ß, ŉ, Georgian Mkhedruli, small Roman numerals, ...):
_KEPT: Tuple[Union[int, Tuple[int, ...]], ...] = (
    0x00DF, 0x0149, 0x0180, 0x019A, 0x01C5, 0x01C8, 0x01CB, 0x01F0, 0x01F2, 0x023C,
    (0x023F, 0x0240), 0x0242, (0x0247, 0x024F, 2), (0x0250, 0x0252), 0x025C, 0x0261,
    (0x0265, 0x0266), (0x026A, 0x026C), 0x0271, 0x027D, 0x0287, 0x0289, 0x028C, (0x029D, 0x029E),
    0x0345, 0x0371, 0x0373, 0x0377, (0x037B, 0x037D), 0x0390, 0x03B0, 0x03D7, 0x03F3, 0x03F8,
    0x03FB, 0x04CF, 0x04F7, (0x04FB, 0x04FF, 2), (0x0511, 0x052F, 2), 0x0587, (0x10D0, 0x10FA),
    (0x10FD, 0x10FF), (0x13F8, 0x13FD), (0x1C80, 0x1C88), 0x1D79, 0x1D7D, (0x1E96, 0x1E9A),
    (0x1EFB, 0x1EFF, 2), (0x1F50, 0x1F56, 2), (0x1F88, 0x1F8F), (0x1F98, 0x1F9F), (0x1FA8, 0x1FAF),
    (0x1FB2, 0x1FB6, 2), 0x1FB7, 0x1FBC, (0x1FC2, 0x1FC6, 2), 0x1FC7, 0x1FCC, 0x1FD2,
    (0x1FD6, 0x1FD7), (0x1FE2, 0x1FE6, 2), 0x1FE7, (0x1FF2, 0x1FF6, 2), 0x1FF7, 0x1FFC, 0x214E,
    (0x2170, 0x217F), 0x2184, (0x24D0, 0x24E9), (0x2C30, 0x2C5E), 0x2C61, (0x2C65, 0x2C66),
    (0x2C68, 0x2C6C, 2), 0x2C73, 0x2C76, (0x2C81, 0x2CE3, 2), 0x2CEC, 0x2CEE, 0x2CF3,
    (0x2D00, 0x2D25), 0x2D27, 0x2D2D, (0xA641, 0xA66D, 2), (0xA681, 0xA69B, 2),
    (0xA723, 0xA72F, 2), (0xA733, 0xA76F, 2), 0xA77A, 0xA77C, (0xA77F, 0xA787, 2), 0xA78C, 0xA791,
    0xA793, (0xA797, 0xA7A9, 2), (0xA7B5, 0xA7B9, 2), 0xAB53, (0xAB70, 0xABBF), (0xFB00, 0xFB06),
    (0xFB13, 0xFB17), (0x1044E, 0x1044F), (0x104D8, 0x104FB), (0x10CC0, 0x10CF2),
    (0x118C0, 0x118DF), (0x16E60, 0x16E7F), (0x1E922, 0x1E942),
)
# Characters MediaWiki turns into a single titlecase or precomposed letter where str.upper
# gives another letter or two (ǆ → ǅ, not Ǆ; ᾳ → ᾼ, not ΑΙ):
_MAPPED: Dict[int, int] = {
    0x01C6: 0x01C5, 0x01C9: 0x01C8, 0x01CC: 0x01CB, 0x01F3: 0x01F2, 0x03F2: 0x03A3, 0x1F71: 0x0386,
    0x1F73: 0x0388, 0x1F75: 0x0389, 0x1F77: 0x038A, 0x1F79: 0x038C, 0x1F7B: 0x038E, 0x1F7D: 0x038F,
    0x1F80: 0x1F88, 0x1F81: 0x1F89, 0x1F82: 0x1F8A, 0x1F83: 0x1F8B, 0x1F84: 0x1F8C, 0x1F85: 0x1F8D,
    0x1F86: 0x1F8E, 0x1F87: 0x1F8F, 0x1F90: 0x1F98, 0x1F91: 0x1F99, 0x1F92: 0x1F9A, 0x1F93: 0x1F9B,
    0x1F94: 0x1F9C, 0x1F95: 0x1F9D, 0x1F96: 0x1F9E, 0x1F97: 0x1F9F, 0x1FA0: 0x1FA8, 0x1FA1: 0x1FA9,
    0x1FA2: 0x1FAA, 0x1FA3: 0x1FAB, 0x1FA4: 0x1FAC, 0x1FA5: 0x1FAD, 0x1FA6: 0x1FAE, 0x1FA7: 0x1FAF,
    0x1FB3: 0x1FBC, 0x1FC3: 0x1FCC, 0x1FD3: 0x0390, 0x1FE3: 0x03B0, 0x1FF3: 0x1FFC,
}


def _exceptions() -> Dict[str, str]:
    """The table above as character → first-letter form."""
    table: Dict[str, str] = {}
    for entry in _KEPT:
        first, last, *step = (entry, entry) if isinstance(entry, int) else entry
        table.update((chr(c), chr(c)) for c in range(first, last + 1, step[0] if step else 1))
    table.update((chr(k), chr(v)) for k, v in _MAPPED.items())
    return table


FIRST_UPPER_EXCEPTIONS: Dict[str, str] = _exceptions()


def first_upper(text: str) -> str:
    """``text`` with its first character as MediaWiki capitalises a title's first letter
    (``$wgCapitalLinks``, on for every namespace on Commons): ``str.upper`` except
    for the characters in :data:`FIRST_UPPER_EXCEPTIONS` (``ßx`` → ``ßx``, ``ǆx`` → ``ǅx``,
    ``ıx`` → ``Ix``, ``აx`` → ``აx``). The rest of the text is unchanged; ``""`` gives ``""``.
    """
    first = text[:1]
    return FIRST_UPPER_EXCEPTIONS.get(first, first.upper()) + text[1:]


def page_name(text: str, prefixes: Sequence[str] = ()) -> str:
    """A page, category, user or file name as MediaWiki spells it: underscores as spaces, runs
    of white space as one space, trimmed, the first of ``prefixes`` it starts with (any case)
    dropped, first letter by :func:`first_upper`. ``Category:black_cats`` → ``Black cats``.

    :param text: the name as written (a title, a P18 value, a line a user typed).
    :param prefixes: namespace prefixes with their colon, e.g. ``("File:", "Image:")``.
    """
    name = " ".join(text.replace("_", " ").split())
    for prefix in prefixes:
        if prefix and name[:len(prefix)].lower() == prefix.lower():
            name = name[len(prefix):].strip()
            break
    return first_upper(name)


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
    title = "File:" + first_upper(name)
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
