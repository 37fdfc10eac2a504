"""Resolving a file's own evidence to Wikidata items, batched and cached.

:class:`EvidenceResolver` takes fetched files (:class:`~wikivel_bot.types.MediaFile`: the
direct categories and the references the fetcher read, see ``commons.evidence_refs``) and
answers, per page id, the :class:`~wikivel_bot.core.evidence.Evidence` that names an item,
plus the :class:`~wikivel_bot.wikidata.entities.ItemInfo` of every such item (so the linker
can encode items outside its label set). How each reference is resolved:

* ``category:`` — Commons ``prop=pageprops&ppprop=wikibase_item`` (50 titles a request):
  the item the category page is linked to; when that item is a Wikimedia category
  (Q4167836), its P301 "category's main topic" (:func:`~wikivel_bot.core.evidence.category_target`).
  An unlinked category → the items whose P373 "Commons category" names it
  (``haswbstatement``), kept only when they come down to one topic;
* ``link:`` — ``wbgetentities`` by sitelink, 50 titles per wiki a request, redirects followed;
* ``item:`` — checked to exist (a redirect answers with its target);
* ``id:`` — ``haswbstatement:"Pnnn=value"``: kept only when exactly one item holds it.

Each answer, an item or "no item", is kept in a cache (the queue database's
``evidence_cache`` table through the ``Store``, or :class:`MemoryEvidenceCache`) until it
expires, so a category shared by thousands of uploads costs one look-up.
:attr:`EvidenceResolver.requests` counts what was sent, for "requests per 100 files".
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

from wikivel_bot.commons import api
from wikivel_bot.config import EvidenceSettings
from wikivel_bot.core.evidence import (
    KIND_CATEGORY,
    KIND_ID,
    KIND_LINK,
    REF_CATEGORY,
    REF_ID,
    REF_ITEM,
    REF_LINK,
    Evidence,
    Ref,
    category_target,
    parse_ref,
    ref_category,
    ref_item,
    ref_link,
)
from wikivel_bot.core.titles import page_name
from wikivel_bot.types import MediaFile, is_qid
from wikivel_bot.wikidata import lookups
from wikivel_bot.wikidata.entities import ItemInfo

# Titles per pageprops request (the API's limit for bots and others alike without apihighlimits).
BATCH = 50
# The properties read from a linked item: P31 (is it a Wikimedia category?), P301 (its topic).
_CLAIMS = ("claims",)


class EvidenceCache(Protocol):
    """Where resolved references are kept: the ``Store``'s evidence cache, or in memory."""

    def get_cached(self, keys: Iterable[str], now: datetime) -> Dict[str, Optional[str]]: ...

    def put_cached(self, rows: Mapping[str, Optional[str]], expires_at: datetime) -> int: ...


class MemoryEvidenceCache:
    """:class:`EvidenceCache` in a dict, for runs without a queue database (``suggest``)."""

    def __init__(self) -> None:
        self.rows: Dict[str, Tuple[Optional[str], datetime]] = {}

    def get_cached(self, keys: Iterable[str], now: datetime) -> Dict[str, Optional[str]]:
        return {k: self.rows[k][0] for k in keys if k in self.rows and self.rows[k][1] > _aware(now)}

    def put_cached(self, rows: Mapping[str, Optional[str]], expires_at: datetime) -> int:
        self.rows.update((k, (q, _aware(expires_at))) for k, q in rows.items())
        return len(rows)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def cache_key(ref: Ref) -> str:
    """The cache key of a reference: its text, without the template of an identifier (the
    same number read from two templates is one look-up)."""
    return f"{REF_ID}:{ref.prop}:{ref.value}" if ref.kind == REF_ID else ref.text


class EvidenceResolver:
    """Resolves files' categories and references to items (see the module docstring).

    :param site: the pywikibot site of Commons (for ``pageprops``).
    :param wikidata: a :class:`~wikivel_bot.wikidata.client.WikidataClient`.
    :param cache: an :class:`EvidenceCache` (a ``Store``); None keeps answers in memory.
    :param cache_days: how long an answer is kept (``Settings.evidence.cache_days``).
    :param clock: now, aware UTC (tests pass a fixed one).
    """

    def __init__(self, site: Any, wikidata: Any, cache: Optional[EvidenceCache] = None, *,
                 cache_days: int = 30, clock: Callable[[], datetime] = _utcnow) -> None:
        self.site = site
        self.wikidata = wikidata
        self.cache: EvidenceCache = cache if cache is not None else MemoryEvidenceCache()
        self.ttl = timedelta(days=cache_days)
        self.clock = clock
        self.commons_requests = 0
        self._wikidata_start = wikidata.requests

    @classmethod
    def from_settings(cls, site: Any, wikidata: Any, settings: EvidenceSettings, cache: Optional[EvidenceCache] = None
                      ) -> "EvidenceResolver":
        """A resolver with ``settings`` (``Settings.evidence``: the cache's lifetime).

        :param cache: the ``Store`` (its ``evidence_cache`` table); None keeps answers in memory.
        """
        return cls(site, wikidata, cache, cache_days=settings.cache_days)

    @property
    def requests(self) -> int:
        """Requests sent so far: Commons' pageprops and Wikidata's look-ups, retries included."""
        return self.commons_requests + self.wikidata.requests - self._wikidata_start

    def resolve(self, files: Sequence[MediaFile]) -> Tuple[Dict[int, Tuple[Evidence, ...]], Dict[str, ItemInfo]]:
        """({page id: evidence}, {item: ItemInfo}) for ``files``.

        Every file gets an entry (an empty tuple: image only). ItemInfo covers every item the
        evidence names that exists.

        :raises WikiError: Commons or Wikidata failed (nothing is cached from the failed step).
        """
        refs = {media.page_id: _refs_of(media) for media in files}
        by_key = {cache_key(ref): ref for found in refs.values() for ref in found}
        now = self.clock()
        answers = self.cache.get_cached(sorted(by_key), now)
        fresh = self._look_up([ref for key, ref in sorted(by_key.items()) if key not in answers])
        if fresh:
            self.cache.put_cached(fresh, now + self.ttl)
        answers.update(fresh)
        evidence = {page_id: _evidence(found, answers) for page_id, found in refs.items()}
        qids = sorted({ev.qid for found in evidence.values() for ev in found})
        infos = self.wikidata.get(qids) if qids else {}
        return evidence, infos

    # -- look-ups by kind ------------------------------------------------------------------

    def _look_up(self, refs: Sequence[Ref]) -> Dict[str, Optional[str]]:
        """{cache key: item or None} for references not in the cache.

        First what names an item (category pages, sitelinks, item links) and the searches
        for statement values (P373 of unlinked categories, identifiers), then one batch of
        statements for all those items together: to follow category items to their topics,
        redirects to their targets, and to tell which value each search hit holds.
        """
        by_kind: Dict[str, List[Ref]] = {}
        for ref in refs:
            by_kind.setdefault(ref.kind, []).append(ref)
        names = [r.name for r in by_kind.get(REF_CATEGORY, ())]
        linked: Dict[str, str] = {}
        for batch in api.chunks(names, BATCH):
            linked.update(self._pageprops(batch))
        # Unlinked pages are found by the P373 "Commons category" of their items.
        wanted: Dict[str, List[str]] = {"P373": [n for n in names if n not in linked]}
        for ref in by_kind.get(REF_ID, ()):
            wanted.setdefault(ref.prop, []).append(ref.value)
        hits = {prop: lookups.statement_search(self.wikidata, prop, values)
                for prop, values in sorted(wanted.items()) if values}
        sites: Dict[str, List[str]] = {}
        for ref in by_kind.get(REF_LINK, ()):
            sites.setdefault(ref.site, []).append(ref.name)
        named: Dict[str, Optional[str]] = {}  # cache key → the item it names, before following
        for site, titles in sorted(sites.items()):
            by_title = lookups.sitelink_qids(self.wikidata, site, titles)
            named.update((ref_link(site, t), by_title.get(t)) for t in titles)
        named.update((ref_item(r.name), r.name) for r in by_kind.get(REF_ITEM, ()))
        named.update((ref_category(n), linked.get(n)) for n in names)
        entities = self._entities({q for q in named.values() if q} | {q for qs in hits.values() for q in qs})
        topics = {qid: _stands_for(qid, entity) for qid, entity in entities.items()}
        # A category item's P301 is followed only when the topic agrees (see _agrees):
        # "Photographs by Barack Obama" may name Obama as its topic, but his own category
        # is "Barack Obama", and a photo *by* someone does not show them.
        followed = {qid: topic for qid, topic in topics.items() if topic and topic != str(entities[qid].get("id") or qid)}
        if followed:
            topic_entities = self._entities(set(followed.values()) - set(entities))
            topic_entities = {**{q: e for q, e in entities.items() if q in set(followed.values())}, **topic_entities}
            for qid, topic in followed.items():
                if not _agrees(qid, topic_entities.get(topic)):
                    topics[qid] = None
        out = {key: topics.get(qid) if qid else None for key, qid in named.items()}
        for name in wanted["P373"]:
            holders = _holders(hits.get("P373", ()), entities, "P373", page_name(name))
            # A topic item and its category item may both carry P373: they agree when the
            # category item's P301 is the topic.
            agreed = {topics[q] for q in holders if topics.get(q)}
            out[ref_category(name)] = agreed.pop() if len(agreed) == 1 else None
        for ref in by_kind.get(REF_ID, ()):
            holders = _holders(hits.get(ref.prop, ()), entities, ref.prop, ref.value)
            out[cache_key(ref)] = holders[0] if len(holders) == 1 else None
        return out

    def _pageprops(self, names: Sequence[str]) -> Dict[str, str]:
        """{name: item} of the category pages (of ``names``) that are linked to an item."""
        asked = [f"Category:{n}" for n in names]
        params: Dict[str, Any] = {"action": "query", "prop": "pageprops", "ppprop": "wikibase_item",
                                  "titles": asked}
        pages: Dict[str, str] = {}
        normalized: List[Mapping[str, Any]] = []
        redirects: List[Mapping[str, Any]] = []
        cont: Mapping[str, Any] = {}
        while True:
            self.commons_requests += 1
            data = api.request(self.site, "reading category pages' items", **params, **cont)
            query = data.get("query") or {}
            normalized += list(query.get("normalized") or ())
            redirects += list(query.get("redirects") or ())
            for page in query.get("pages") or ():
                item = (page.get("pageprops") or {}).get("wikibase_item")
                if isinstance(item, str) and is_qid(item):
                    pages[page.get("title", "")] = item
            if "continue" not in data:
                break
            cont = data["continue"]
        answered = api.resolved_titles({"normalized": normalized, "redirects": redirects}, asked)
        return {name: pages[answered[title]] for name, title in zip(names, asked) if answered[title] in pages}

    def _entities(self, qids: Iterable[str]) -> Dict[str, Mapping[str, Any]]:
        """{item: its entity JSON (statements only)} for the items that exist, 50 a request."""
        wanted = sorted({q for q in qids if is_qid(q)})
        return self.wikidata.get_entities(wanted, props=_CLAIMS) if wanted else {}


def _stands_for(qid: str, entity: Mapping[str, Any]) -> Optional[str]:
    """What an item stands for: a Wikimedia category item its P301 topic (None without
    exactly one), a redirect its target, any other item itself."""
    own = str(entity.get("id") or qid)
    return category_target(own, _item_values(entity, "P31"), _item_values(entity, "P301"))


def _agrees(category_item: str, topic: Optional[Mapping[str, Any]]) -> bool:
    """Whether a topic accepts a category item whose P301 names it: the topic's P910
    "topic's main category" is that item, or the topic names no main category at all.

    P301 and P910 are each other's inverse on Wikidata; a category *about something else*
    ("Photographs by X", "Works by X") whose P301 names X anyway is not X's category, and a
    file in it is not thereby a picture of X (least of all of a person).
    """
    if topic is None:
        return False
    main = _item_values(topic, "P910")
    return not main or category_item in main


def _holders(hits: Iterable[str], entities: Mapping[str, Mapping[str, Any]], prop: str, value: str) -> List[str]:
    """The search hits whose statements of ``prop`` hold ``value`` (a P373 category name is
    compared as a page name: ``_`` as space, first letter case-insensitive)."""
    norm = page_name if prop == "P373" else str.strip
    return [q for q in hits if q in entities and value in {norm(v) for v in _item_values(entities[q], prop)}]


def _refs_of(media: MediaFile) -> List[Ref]:
    """The file's categories and stored references, parsed; unreadable ones are skipped (a
    record written by a newer version must not stop the linking of the rest)."""
    out = [parse_ref(ref_category(c)) for c in media.categories if c.strip()]
    for text in media.references:
        try:
            out.append(parse_ref(text))
        except ValueError:
            continue
    return out


def _evidence(refs: Sequence[Ref], answers: Mapping[str, Optional[str]]) -> Tuple[Evidence, ...]:
    kinds = {REF_CATEGORY: KIND_CATEGORY, REF_LINK: KIND_LINK, REF_ITEM: KIND_LINK, REF_ID: KIND_ID}
    out = []
    for ref in refs:
        qid = answers.get(cache_key(ref))
        if qid:
            out.append(Evidence(kinds[ref.kind], ref.source, qid))
    return tuple(dict.fromkeys(out))


def _item_values(entity: Mapping[str, Any], prop: str) -> Tuple[str, ...]:
    """Values of ``prop``'s statements (an item's id, a string's text), deprecated ones and
    unknown values left out."""
    out = []
    for statement in ((entity.get("claims") or {}).get(prop) or ()):
        if not isinstance(statement, Mapping) or statement.get("rank") == "deprecated":
            continue
        value = ((statement.get("mainsnak") or {}).get("datavalue") or {}).get("value")
        if isinstance(value, Mapping) and is_qid(str(value.get("id", ""))):
            out.append(str(value["id"]))
        elif isinstance(value, str):
            out.append(value)
    return tuple(out)
