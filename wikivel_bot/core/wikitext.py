"""Plain text made literal in wikitext: the one escaper for every page the bot writes text into
(review exports, the community-trial report).

Characters that mean something to MediaWiki become numeric character references, which it
shows as the characters themselves and never parses as markup. The set is the union of what
can turn text into markup anywhere a label, title or note lands: inside a link label or a
table cell (``|``, ``]]``), a template or tag (``{{``, ``<``), an entity (``&``), bold or
italics (``''``), a signature (``~~~``), a heading (``==``), and at the start of a line (lists
``*`` ``#``, indents ``:`` ``;``, table headers ``!``, a rule ``----``).
"""

from __future__ import annotations

_ESCAPES = {
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "&#91;", "]": "&#93;", "{": "&#123;", "}": "&#125;",
    "|": "&#124;", "'": "&#39;", "~": "&#126;", "=": "&#61;", "*": "&#42;", "#": "&#35;", "!": "&#33;",
}
# Markup only as a line's first character; escaped there so that ordinary "a: b" stays readable.
_AT_START = {":": "&#58;", ";": "&#59;", "-": "&#45;"}


def wikitext_escape(text: str) -> str:
    """``text`` as literal wikitext on one line, safe inside a link label, a table cell, a
    heading, a list item or a paragraph.

    :param text: any plain text (labels, titles, notes); runs of whitespace, newlines
        included, become one space, since a newline would end a cell or list item.
    """
    flat = " ".join(str(text).split())
    escaped = "".join(_ESCAPES.get(ch, ch) for ch in flat)
    if escaped[:1] in _AT_START:
        escaped = _AT_START[escaped[0]] + escaped[1:]
    # Double underscores make behaviour switches (__NOTOC__) out of plain words.
    return escaped.replace("__", "_&#95;")
