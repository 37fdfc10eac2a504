"""Wikidata items for display and ranking: label, description, aliases, image, P31/P279.

``wbgetentities`` with 50 ids per request (the API's limit) against the site's Wikibase
repository, through pywikibot (User-Agent, maxlag, retries). Results are kept in an
in-memory LRU cache, so a review session that shows the same items again asks only once.

Extraction follows the dump reader's rules (``wikivel_bot.labels.entities``): texts by
language fallback then ``mul`` (for display, then English, then any language); P18 = the
first preferred statement, else the first normal one; P31/P279 targets without deprecated
statements and somevalue/novalue snaks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.commons import api
from wikivel_bot.types import is_qid

BATCH = 50
MUL = "mul"  # Wikidata's language-neutral label, the last fallback


@dataclass(frozen=True)
class ItemInfo:
    """What is shown and ranked of one Wikidata item.

    :param qid: the id asked for.
    :param resolved: the item's own id: differs from ``qid`` when that is a redirect.
    :param label_language: the language the label came from ("" when none).
    """

    qid: str
    label: str = ""
    label_language: str = ""
    description: str = ""
    description_language: str = ""
    aliases: Tuple[str, ...] = ()
    image: str = ""
    instance_of: Tuple[str, ...] = ()
    subclass_of: Tuple[str, ...] = ()
    resolved: str = ""


def language_chain(languages: Sequence[str]) -> Tuple[str, ...]:
    """The configured languages in order, then ``mul``; duplicates dropped."""
    chain = [lang for lang in languages if lang] + [MUL]
    return tuple(dict.fromkeys(chain))


def item_info(entity: Mapping[str, Any], languages: Sequence[str], asked: str = "") -> Optional[ItemInfo]:
    """An :class:`ItemInfo` from ``wbgetentities`` (or dump) JSON; None for non-items."""
    qid = entity.get("id")
    if entity.get("type", "item") != "item" or not isinstance(qid, str) or not is_qid(qid):
        return None
    chain = language_chain(languages)
    claims = entity.get("claims")
    claims = claims if isinstance(claims, dict) else {}
    label, label_lang = _pick(entity.get("labels"), chain)
    description, description_lang = _pick(entity.get("descriptions"), chain)
    return ItemInfo(
        qid=asked or qid,
        label=label,
        label_language=label_lang,
        description=description,
        description_language=description_lang,
        aliases=_aliases(entity.get("aliases"), chain),
        image=_first_image(claims.get("P18")),
        instance_of=_targets(claims.get("P31")),
        subclass_of=_targets(claims.get("P279")),
        resolved=qid,
    )


class ItemClient:
    """Items from one Wikibase repository, cached.

    :param repo: the pywikibot ``DataSite`` (from :func:`wikivel_bot.commons.site.open_repo`).
    :param languages: label/description fallback order (``Settings.site.languages``).
    :param cache_size: items kept in memory (least recently used dropped first).
    """

    def __init__(self, repo: Any, languages: Sequence[str] = ("en",), cache_size: int = 10_000) -> None:
        self.repo = repo
        self.languages = tuple(languages)
        self.cache_size = max(0, cache_size)
        self._cache: "OrderedDict[str, Optional[ItemInfo]]" = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0  # API requests sent (for tests and statistics)

    def get(self, qids: Iterable[str]) -> Dict[str, ItemInfo]:
        """{qid: ItemInfo} for the items that exist (missing and invalid ids left out).

        :raises WikiError: the API failed.
        """
        wanted = [q for q in dict.fromkeys(qids) if is_qid(q)]
        found: Dict[str, Optional[ItemInfo]] = {}
        with self._lock:
            for qid in wanted:
                if qid in self._cache:
                    self._cache.move_to_end(qid)
                    found[qid] = self._cache[qid]
        missing = [q for q in wanted if q not in found]
        for batch in api.chunks(missing, BATCH):
            fetched = self._fetch(batch)
            with self._lock:
                for qid in batch:
                    found[qid] = fetched.get(qid)
                    self._remember(qid, found[qid])
        return {q: info for q, info in found.items() if info is not None}

    def one(self, qid: str) -> Optional[ItemInfo]:
        """One item, or None when it does not exist."""
        return self.get([qid]).get(qid)

    def _fetch(self, qids: Sequence[str]) -> Dict[str, ItemInfo]:
        self.requests += 1
        data = api.request(
            self.repo, "reading Wikidata items", action="wbgetentities", ids=list(qids),
            props=["labels", "descriptions", "aliases", "claims"],
            # Only the languages the fallback can use: an item has labels in hundreds.
            languages=list(dict.fromkeys([*language_chain(self.languages), "en"])),
        )
        out: Dict[str, ItemInfo] = {}
        entities = data.get("entities") or {}
        # wbgetentities answers under the id asked even when it followed a redirect.
        for asked, entity in entities.items():
            if not isinstance(entity, dict) or "missing" in entity:
                continue
            info = item_info(entity, self.languages, asked=asked)
            if info is not None:
                out[asked] = info
        return out

    def _remember(self, qid: str, info: Optional[ItemInfo]) -> None:
        if not self.cache_size:
            return
        self._cache[qid] = info
        self._cache.move_to_end(qid)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def _pick(texts: Any, chain: Sequence[str]) -> Tuple[str, str]:
    """(text, language): the chain first, then English, then any language at all (a label
    in another language beats showing a bare QID to a reviewer)."""
    # An entity without texts serialises them as [] (PHP's empty array), not {}.
    if not isinstance(texts, dict):
        return "", ""
    for lang in [*chain, "en", *sorted(texts)]:
        entry = texts.get(lang)
        if isinstance(entry, dict) and entry.get("value"):
            return str(entry["value"]), lang
    return "", ""


def _aliases(aliases: Any, chain: Sequence[str]) -> Tuple[str, ...]:
    if not isinstance(aliases, dict):
        return ()
    out: List[str] = []
    for lang in chain:
        for entry in aliases.get(lang) or ():
            value = entry.get("value") if isinstance(entry, dict) else None
            if value and value not in out:
                out.append(value)
    return tuple(out)


def _values(statements: Any) -> Iterable[Tuple[Any, str]]:
    for statement in statements or ():
        if not isinstance(statement, dict) or statement.get("rank") == "deprecated":
            continue
        snak = statement.get("mainsnak") or {}
        if snak.get("snaktype", "value") != "value":
            continue
        datavalue = snak.get("datavalue") or {}
        if "value" in datavalue:
            yield datavalue["value"], statement.get("rank", "normal")


def _targets(statements: Any) -> Tuple[str, ...]:
    out: List[str] = []
    for value, _rank in _values(statements):
        qid = value.get("id") if isinstance(value, dict) else None
        if not qid and isinstance(value, dict) and isinstance(value.get("numeric-id"), int):
            qid = f"Q{value['numeric-id']}"
        if isinstance(qid, str) and is_qid(qid) and qid not in out:
            out.append(qid)
    return tuple(out)


def _first_image(statements: Any) -> str:
    best = ""
    for value, rank in _values(statements):
        if not isinstance(value, str) or not value:
            continue
        if rank == "preferred":
            return value
        best = best or value
    return best
