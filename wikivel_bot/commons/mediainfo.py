"""Reading a MediaInfo entity (the JSON of a file's ``mediainfo`` slot or ``wbgetentities``).

MediaInfo keeps statements under ``statements`` (items use ``claims``); a file without
structured data has no slot, or serialises empty maps as ``[]`` (PHP's empty array).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple

from wikivel_bot.types import Depiction, is_qid

DEPICTS = "P180"
RANKS = ("preferred", "normal", "deprecated")


def parse_entity(text: Optional[str]) -> Dict[str, Any]:
    """The entity from slot content; ``{}`` for a missing slot or content that is not JSON."""
    if not text:
        return {}
    try:
        entity = json.loads(text)
    except ValueError:
        return {}
    return entity if isinstance(entity, dict) else {}


def _statements(entity: Mapping[str, Any], prop: str) -> list:
    statements = entity.get("statements")
    if not isinstance(statements, dict):
        return []
    found = statements.get(prop)
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def depicts_of(entity: Mapping[str, Any]) -> Tuple[Depiction, ...]:
    """The item-valued P180 statements, in the entity's order, each item once (best rank).

    Deprecated statements are kept: an item someone marked as wrong must not be proposed
    again. ``somevalue``/``novalue`` statements name no item and are left out.
    """
    best: Dict[str, str] = {}
    for statement in _statements(entity, DEPICTS):
        snak = statement.get("mainsnak") or {}
        if snak.get("snaktype", "value") != "value":
            continue
        value = (snak.get("datavalue") or {}).get("value")
        qid = _qid(value)
        if not qid:
            continue
        rank = statement.get("rank", "normal")
        rank = rank if rank in RANKS else "normal"
        if qid not in best or RANKS.index(rank) < RANKS.index(best[qid]):
            best[qid] = rank
    return tuple(Depiction(qid, rank) for qid, rank in best.items())


def depicts_count(entity: Mapping[str, Any]) -> int:
    """How many P180 statements count as "already depicts": every rank but deprecated,
    ``somevalue`` included (someone said *something* is depicted)."""
    return sum(1 for s in _statements(entity, DEPICTS) if s.get("rank", "normal") != "deprecated")


def captions(entity: Mapping[str, Any]) -> Dict[str, str]:
    """{language: caption} (MediaInfo labels)."""
    labels = entity.get("labels")
    if not isinstance(labels, dict):
        return {}
    return {
        lang: entry["value"]
        for lang, entry in labels.items()
        if isinstance(entry, dict) and isinstance(entry.get("value"), str) and entry["value"]
    }


def _qid(value: Any) -> str:
    if not isinstance(value, dict) or value.get("entity-type", "item") != "item":
        return ""
    text = value.get("id")
    if isinstance(text, str) and is_qid(text):
        return text
    number = value.get("numeric-id")
    return f"Q{number}" if isinstance(number, int) and number > 0 else ""


def load_mediainfo(site: Any, page_id: int) -> Any:
    """The file's MediaInfo (pywikibot), freshly loaded from the latest revision; None when the
    page is gone. By page id, not title: a file renamed since is still the same page."""
    import pywikibot

    pages = list(site.load_pages_from_pageids([page_id]))
    if not pages or not pages[0].exists():
        return None
    mediainfo = pywikibot.FilePage(pages[0]).data_item()
    mediainfo.get(force=True)
    return mediainfo
