"""Partial blocks: which decisions a reviewer's block on the wiki takes from them.

A reviewer's approval makes the bot edit the file's structured data (the MediaInfo of a
``File:`` page, namespace 6), so a reviewer must not get through the bot what the wiki would
refuse them. MediaWiki's partial blocks (``list=users``' ``blockpartial``; the restrictions
from ``list=blocks`` with ``bkprop=restrictions``: ``{"pages": [{"id", "ns", "title"}],
"namespaces": [6], "actions": ["upload"]}``) restrict pages, namespaces or actions. Here:

* the File namespace, or an action restriction that may cover editing (``edit``, and any
  action not known to be unrelated: an unknown one counts against the reviewer) → as a
  sitewide block: no decisions at all;
* pages in the File namespace → no decisions on those files, decisions on the others;
* anything else (other namespaces and pages; ``upload``, ``move``, ``create``, ``thanks``,
  ``sendemail``) → reviewing goes on; the page mentions the block quietly.

Pure rules over the API's answer, tested without a wiki; the read itself is in
:mod:`wikivel_bot.web.sessions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

from wikivel_bot.core.titles import page_name

FILE_NAMESPACE = 6
# Actions a partial block may restrict that have nothing to do with editing a file's
# structured data (MediaWiki core's upload/move/create, the Thanks extension's thanks, and
# e-mail). Any other action (``edit``, or one an extension adds) is taken as covering edits.
UNRELATED_ACTIONS = frozenset({"upload", "move", "create", "thanks", "sendemail"})


def _title_key(title: str) -> str:
    """A File: page's name compared as MediaWiki compares titles (core.titles' one rule):
    underscores are spaces, the namespace prefix dropped, the first letter upper case."""
    return page_name(title, ("File:", "Image:"))


@dataclass(frozen=True)
class PartialBlock:
    """The union of a reviewer's partial blocks (a user may have several), as read from
    ``list=blocks``: what they restrict, and which blocks these are."""

    block_ids: Tuple[int, ...] = ()
    # (page id, namespace, prefixed title) of each page a block names, any namespace.
    pages: Tuple[Tuple[int, int, str], ...] = ()
    namespaces: Tuple[int, ...] = ()
    actions: Tuple[str, ...] = ()

    def covers_files(self) -> str:
        """What keeps the reviewer from editing every file ("the File namespace", "the action
        edit"); "" when nothing does."""
        if FILE_NAMESPACE in self.namespaces:
            return "the File namespace"
        editing = [a for a in self.actions if a not in UNRELATED_ACTIONS]
        return f"the action {', '.join(editing)}" if editing else ""

    def file_pages(self) -> Tuple[Tuple[int, int, str], ...]:
        """The File: pages the blocks name."""
        return tuple(p for p in self.pages if p[1] == FILE_NAMESPACE)

    def covers(self, page_id: int, title: str) -> bool:
        """True when the blocks keep the reviewer from editing this file (by page id, or by
        its title as the queue stores it, ``File:Name.jpg``)."""
        if self.covers_files():
            return True
        key = _title_key(title) if title else ""
        return any(p[0] == page_id or (key and _title_key(p[2]) == key) for p in self.file_pages())

    def named(self) -> str:
        """The blocks by id, for messages: "partial block #5" / "partial blocks #5, #6"."""
        ids = ", ".join(f"#{i}" for i in self.block_ids)
        return f"partial block{'s' if len(self.block_ids) > 1 else ''}" + (f" {ids}" if ids else "")

    def note(self) -> str:
        """The quiet line for a reviewer this block leaves reviewing (most or all files)."""
        files = [p[2] for p in self.file_pages()]
        if files:
            shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            return (f"A {self.named()} on the wiki keeps you from editing {shown}: decisions on "
                    "those files are refused; the others are yours to review.")
        what = [f"namespace {n}" for n in self.namespaces] + [f"action {a}" for a in self.actions] \
            + [p[2] for p in self.pages]
        return f"A {self.named()} on the wiki ({', '.join(what) or 'no restrictions'}) does not touch files."

    def to_json(self) -> Dict[str, Any]:
        """What the session's row keeps (``web_sessions.block_restrictions``)."""
        return {"ids": list(self.block_ids),
                "pages": [{"id": i, "ns": ns, "title": t} for i, ns, t in self.pages],
                "namespaces": list(self.namespaces), "actions": list(self.actions)}

    @classmethod
    def from_json(cls, raw: Any) -> Optional["PartialBlock"]:
        """The block :meth:`to_json` wrote; None for NULL (no partial block).

        :raises ValueError: not such a value (a damaged row)."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise ValueError("block restrictions must be an object")
        return cls(block_ids=tuple(int(i) for i in raw.get("ids") or ()), **_restrictions(raw))


def _restrictions(raw: Any) -> Dict[str, Any]:
    """pages, namespaces and actions of one ``restrictions`` object in MediaWiki's format.

    :raises ValueError: not in that format."""
    if isinstance(raw, list) and not raw:  # PHP's empty array: a partial block restricting nothing
        return {"pages": (), "namespaces": (), "actions": ()}
    if not isinstance(raw, dict):
        raise ValueError("restrictions must be an object")
    pages = []
    for page in raw.get("pages") or ():
        if not isinstance(page, dict):
            raise ValueError("a restricted page must be an object")
        pages.append((int(page.get("id") or 0), int(page["ns"]), str(page["title"])))
    return {"pages": tuple(pages), "namespaces": tuple(int(n) for n in raw.get("namespaces") or ()),
            "actions": tuple(str(a) for a in raw.get("actions") or ())}


def from_blocks(blocks: Sequence[Any]) -> Optional[PartialBlock]:
    """The union of the partial blocks ``list=blocks`` listed for one user
    (``bkprop=id|flags|restrictions``); None when any of them is sitewide (``partial``
    false or absent), which no restriction narrows.

    :raises ValueError: the answer is not in MediaWiki's format, or lists no block.
    """
    if not blocks:
        raise ValueError("list=blocks lists no block")
    ids, pages, namespaces, actions = [], [], [], []
    for block in blocks:
        if not isinstance(block, dict):
            raise ValueError("a block must be an object")
        if not block.get("partial"):
            return None
        found = _restrictions(block.get("restrictions"))
        ids.append(int(block["id"]))
        pages += [p for p in found["pages"] if p not in pages]
        namespaces += [n for n in found["namespaces"] if n not in namespaces]
        actions += [a for a in found["actions"] if a not in actions]
    return PartialBlock(tuple(ids), tuple(pages), tuple(namespaces), tuple(actions))
