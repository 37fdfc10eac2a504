"""The report as wikitext, for the bot request page on Commons (Commons:Bots/Requests).

Tables become ``{| class="wikitable"`` tables with the same cells as the HTML page; examples
become a ``<gallery>`` of the files themselves (on Commons the gallery shows their
thumbnails), items are links to Wikidata (``[[d:Q146|house cat]]``). Every piece of text that
comes from data — titles, labels, notes — is escaped with character references, so nothing
in it can turn into a template, a link or a signature on the wiki.
"""

from __future__ import annotations

from typing import Iterable, List, Sequence

from wikivel_bot.core.wikitext import wikitext_escape
from wikivel_bot.evaluation import Table


def item_link(qid: str, label: str = "") -> str:
    """``[[d:Q146|house cat]]`` (the QID alone when there is no label)."""
    return f"[[d:{qid}|{wikitext_escape(label) if label else qid}]]"


def wikitable(table: Table) -> str:
    """A ``wikitable`` with a caption, header row, rows and the notes as a list under it."""
    lines = ['{| class="wikitable sortable"', f"|+ {wikitext_escape(table.title)}", "|-",
             "! " + " !! ".join(wikitext_escape(h) for h in table.headers)]
    for row in table.rows:
        lines.append("|-")
        lines.append("| " + " || ".join(wikitext_escape(c) for c in row))
    lines.append("|}")
    lines += [f"* {wikitext_escape(note)}" for note in table.notes]
    return "\n".join(lines) + "\n"


def heading(text: str, level: int = 2) -> str:
    """``== text ==`` (text escaped)."""
    marks = "=" * level
    return f"{marks} {wikitext_escape(text)} {marks}\n"


def paragraph(text: str) -> str:
    """A paragraph of escaped text."""
    return wikitext_escape(text) + "\n"


def gallery(entries: Iterable[tuple]) -> str:
    """A ``<gallery>`` of (``File:`` title, caption wikitext) pairs; the caption must
    already be wikitext (built with :func:`~wikivel_bot.core.wikitext.wikitext_escape` and :func:`item_link`)."""
    lines = ['<gallery mode="packed" heights="160">']
    for title, caption in entries:
        name = title if title.startswith("File:") else f"File:{title}"
        lines.append(f"{name.replace('|', '')}|{caption}")
    lines.append("</gallery>")
    return "\n".join(lines) + "\n"


def document(parts: Sequence[str]) -> str:
    """Join sections with blank lines."""
    return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)


def bullet_list(items: Sequence[str]) -> str:
    """An escaped ``*`` list."""
    lines: List[str] = [f"* {wikitext_escape(item)}" for item in items]
    return "\n".join(lines) + ("\n" if lines else "")
