"""The one Wikidata client: entities by id, items as :class:`ItemInfo`, and
thumbnail URLs of their images.

Every user of Wikidata items goes through :class:`WikidataClient`: the writer's hierarchy for
items outside the label set, ``labels build --from-qids``, the review page, and Commons'
evidence (whose look-ups by sitelink and by statement, :mod:`wikivel_bot.wikidata.lookups`,
use this client's session). It asks ``wbgetentities`` (50 ids a request, the API's limit) through
:class:`~wikivel_bot.wikidata.api.ApiSession` (maxlag, retries, ``Retry-After``, a capped
wait), keeps :class:`ItemInfo` answers in a :class:`~wikivel_bot.wikidata.cache.BoundedCache`,
and reads the items with the rules of :mod:`wikivel_bot.wikidata.entities`. A redirect is
answered under the id that was asked (``ItemInfo.resolved`` names the target).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, TypeVar

import requests

from wikivel_bot.errors import UsageError
from wikivel_bot.types import is_qid
from wikivel_bot.wikidata.agent import user_agent as build_user_agent
from wikivel_bot.wikidata.api import DEFAULT_MAXLAG, ApiSession
from wikivel_bot.wikidata.cache import BoundedCache
from wikivel_bot.wikidata.entities import ItemInfo, item_info, request_languages
from wikivel_bot.wikidata.retry import RetryPolicy

T = TypeVar("T")

WIKIDATA_API = "https://www.wikidata.org/w/api.php"
# wbgetentities and action=query take at most 50 ids or titles per request (bots included).
BATCH = 50
ITEM_PROPS = ("labels", "descriptions", "aliases", "claims")
# A standard thumbnail step: Wikimedia answers other widths with 429 "use thumbnail steps".
THUMB_WIDTH = 250


def chunks(items: Sequence[T], size: int = BATCH) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``size``."""
    for start in range(0, len(items), max(1, size)):
        yield items[start:start + size]


class WikidataClient:
    """Items from one Wikibase repository over HTTP, cached. ``api`` (its
    :class:`~wikivel_bot.wikidata.api.ApiSession`) and ``api_url`` are public: further
    look-ups of the same repository go through them (:mod:`wikivel_bot.wikidata.lookups`).

    :param api_url: the repository's api.php (Wikidata's by default).
    :param languages: the default text fallback order (``Settings.site.languages``).
    :param contact: operator contact for the User-Agent; :param user_agent: the whole header
        instead (the web app's names its own tool).
    :param media_api_url: api.php of the wiki holding the P18 files (Commons), for
        :meth:`thumbnails`; "" when not needed.
    :param cache_size: items (per language chain) and thumbnail URLs kept.
    :param cache_ttl_s: how long a cached answer is trusted.
    :param policy: attempts, backoff, the cap on every wait (``max_wait_s``), the sleep.
    :param maxlag: sent with every request. :param timeout_s: per request.
    :param clock: the cache's clock (tests).
    """

    def __init__(self, api_url: str = WIKIDATA_API, *, languages: Sequence[str] = ("en",), contact: str = "",
                 user_agent: str = "", media_api_url: str = "", cache_size: int = 10_000,
                 cache_ttl_s: float = 3600.0, policy: Optional[RetryPolicy] = None, maxlag: int = DEFAULT_MAXLAG,
                 timeout_s: float = 30.0, session: Optional[requests.Session] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api_url = api_url
        self.media_api_url = media_api_url
        self.languages = tuple(languages)
        self.api = ApiSession(user_agent or build_user_agent(contact), policy, maxlag, timeout_s, session)
        self._items: BoundedCache[Optional[ItemInfo]] = BoundedCache(cache_size, cache_ttl_s, clock)
        self._thumbs: BoundedCache[str] = BoundedCache(cache_size, cache_ttl_s, clock)

    @property
    def requests(self) -> int:
        """Requests sent so far, retries included."""
        return self.api.sent

    # -- entities as the API gives them ------------------------------------------------

    def get_entities(self, ids: Iterable[str], props: Sequence[str] = ITEM_PROPS,
                     languages: Optional[Sequence[str]] = None) -> Dict[str, Dict[str, Any]]:
        """{id as asked: entity JSON} for the entities that exist (items, properties, M-ids);
        missing ones are left out, a redirect is answered under the asked id. Not cached.

        :param props: ``wbgetentities`` props.
        :param languages: the languages of the texts (default: the client's, ``mul`` and English).
        :raises WikiError: the API failed.
        """
        wanted = list(dict.fromkeys(i for i in ids if i))
        out: Dict[str, Dict[str, Any]] = {}
        for batch in chunks(wanted):
            out.update(self._wbgetentities({"ids": "|".join(batch)}, props, languages))
        return out

    def _wbgetentities(self, select: Mapping[str, str], props: Sequence[str],
                       languages: Optional[Sequence[str]]) -> Dict[str, Dict[str, Any]]:
        chosen = request_languages(self.languages) if languages is None else tuple(languages)
        data = self.api.get(self.api_url, {"action": "wbgetentities", **select, "props": "|".join(props),
                                           "languages": "|".join(chosen)}, "reading Wikidata entities")
        entities = data.get("entities")
        out: Dict[str, Dict[str, Any]] = {}
        for asked, entity in (entities.items() if isinstance(entities, dict) else ()):
            if isinstance(entity, dict) and "missing" not in entity and entity.get("id"):
                out[asked] = entity
        return out

    # -- items as the bot reads them ---------------------------------------------------

    def get(self, qids: Iterable[str], languages: Optional[Sequence[str]] = None) -> Dict[str, ItemInfo]:
        """{qid: ItemInfo} for the items that exist (missing and malformed ids left out).

        :param languages: the text fallback (default: the client's); cached per chain.
        :raises WikiError: the API failed.
        """
        chain = self.languages if languages is None else tuple(languages)
        wanted = [q for q in dict.fromkeys(qids) if isinstance(q, str) and is_qid(q)]
        found: Dict[str, Optional[ItemInfo]] = {}
        for qid in wanted:
            hit, info = self._items.lookup((qid, chain))
            if hit:
                found[qid] = info
        missing = [q for q in wanted if q not in found]
        for batch in chunks(missing):
            entities = self._wbgetentities({"ids": "|".join(batch)}, ITEM_PROPS, request_languages(chain))
            for qid in batch:
                entity = entities.get(qid)
                found[qid] = item_info(entity, chain, asked=qid) if entity is not None else None
                self._items.put((qid, chain), found[qid])
        return {q: info for q, info in found.items() if info is not None}

    def one(self, qid: str, languages: Optional[Sequence[str]] = None) -> Optional[ItemInfo]:
        """One item, or None when it does not exist."""
        return self.get([qid], languages).get(qid)

    # -- images ------------------------------------------------------------------------

    def thumbnails(self, titles: Iterable[str], width: int = THUMB_WIDTH) -> Dict[str, str]:
        """{``File:…`` title as given: thumbnail URL} from the media wiki's ``imageinfo``;
        files without one are left out.

        :raises UsageError: the client has no ``media_api_url``. :raises WikiError: the API failed.
        """
        if not self.media_api_url:
            raise UsageError("this Wikidata client was built without a media_api_url: no thumbnails")
        wanted = sorted(set(t for t in titles if t))
        out: Dict[str, str] = {}
        missing: List[str] = []
        for title in wanted:
            hit, url = self._thumbs.lookup((title, width))
            if hit:
                out[title] = url or ""
            else:
                missing.append(title)
        for batch in chunks(missing):
            fetched = self._imageinfo(list(batch), width)
            for title in batch:
                out[title] = fetched.get(title, "")
                self._thumbs.put((title, width), out[title])
        return {t: url for t, url in out.items() if url}

    def _imageinfo(self, titles: List[str], width: int) -> Dict[str, str]:
        data = self.api.get(self.media_api_url, {
            "action": "query", "titles": "|".join(titles), "prop": "imageinfo", "iiprop": "url",
            "iiurlwidth": str(width)}, "reading image URLs")
        query = data.get("query") or {}
        # The API answers under its own spelling of a title (File:A_b.jpg -> File:A b.jpg).
        asked_as: Dict[str, List[str]] = {}
        for title in titles:
            asked_as.setdefault(title, []).append(title)
        for step in query.get("normalized") or ():
            asked_as.setdefault(step.get("to"), []).extend(asked_as.get(step.get("from"), []))
        out: Dict[str, str] = {}
        pages = query.get("pages") or []
        for page in (pages.values() if isinstance(pages, Mapping) else pages):
            info = (page.get("imageinfo") or [{}])[0]
            url = info.get("thumburl") or info.get("url") or ""
            for title in asked_as.get(page.get("title"), ()) if url else ():
                out[title] = url
        return out

    def close(self) -> None:
        self.api.close()

