"""Item labels, descriptions and P18 images in the reviewer's language.

A candidate's evidence carries the label and description the linker saw (one language); the
review page shows each item in the reviewer's language (``uselang``, falling back to English
and then to the evidence) with the item's own image (P18) beside the file. :func:`items_in`
takes the texts and the P18 file of the items the label set keeps from the set itself (in
``labels.languages``), and asks the Wikibase API only for the others (e.g. depicts already
on the file) and for thumbnail URLs. Answers are cached for ``ttl_s``: a reviewer's session
asks for the same items over and over, and Wikidata's API etiquette asks tools not to.

A wiki that does not answer leaves the page usable: the lookup logs one line and the page
falls back to the evidence.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple

import requests

if TYPE_CHECKING:
    from wikivel_bot.labels.labelset import LabelSet

log = logging.getLogger(__name__)

# wbgetentities and query take at most 50 ids/titles per request.
BATCH = 50
# A standard thumbnail step: Wikimedia answers other widths with 429 "use thumbnail steps".
THUMB_WIDTH = 250


@dataclass(frozen=True)
class ItemInfo:
    """An item as the page shows it; empty strings where the wiki had nothing."""

    qid: str
    label: str = ""
    description: str = ""
    # The language the label is in ("" when none was found).
    lang: str = ""
    # The P18 file's title (``File:…``) and a thumbnail URL of it.
    image_title: str = ""
    image_thumb: str = ""
    # The language the description is in (it may differ from the label's).
    description_lang: str = ""


class ItemLookup:
    """Batched, cached ``wbgetentities`` + ``imageinfo`` look-ups.

    :param wikibase_api: the item repository's api.php (Wikidata).
    :param media_api: the api.php of the wiki holding P18 files (Commons).
    :param user_agent: sent with every request (Wikimedia's User-Agent policy).
    """

    def __init__(self, wikibase_api: str, media_api: str, user_agent: str, ttl_s: float = 3600.0,
                 timeout_s: float = 10.0) -> None:
        self.wikibase_api = wikibase_api
        self.media_api = media_api
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self._http = requests.Session()
        self._http.headers["User-Agent"] = user_agent
        self._lock = threading.Lock()
        self._cache: Dict[Tuple[str, str], Tuple[float, ItemInfo]] = {}
        self._thumb_cache: Dict[str, Tuple[float, str]] = {}

    def get(self, qids: Iterable[str], lang: str) -> Dict[str, ItemInfo]:
        """The items in ``lang`` (else English); items the wiki could not give are left out."""
        wanted = list(dict.fromkeys(q for q in qids if q))
        now = time.monotonic()
        out: Dict[str, ItemInfo] = {}
        missing: List[str] = []
        with self._lock:
            for qid in wanted:
                hit = self._cache.get((qid, lang))
                if hit and hit[0] > now:
                    out[qid] = hit[1]
                else:
                    missing.append(qid)
        if missing:
            try:
                fetched = self._fetch(missing, lang)
            except (requests.RequestException, ValueError) as exc:
                log.warning("item look-up failed (%s): showing the linker's labels", type(exc).__name__)
                return out
            with self._lock:
                for qid, info in fetched.items():
                    self._cache[(qid, lang)] = (now + self.ttl_s, info)
            out.update(fetched)
        return out

    def images(self, titles: Iterable[str]) -> Dict[str, str]:
        """Thumbnail URLs of files (``File:…`` → URL); files without one are left out."""
        wanted = sorted(set(t for t in titles if t))
        now = time.monotonic()
        with self._lock:
            out = {t: hit[1] for t in wanted if (hit := self._thumb_cache.get(t)) and hit[0] > now}
        missing = [t for t in wanted if t not in out]
        if missing:
            try:
                fetched = self._thumbs(missing)
            except (requests.RequestException, ValueError) as exc:
                log.warning("image look-up failed (%s): items shown without images", type(exc).__name__)
                return out
            with self._lock:
                for title in missing:
                    self._thumb_cache[title] = (now + self.ttl_s, fetched.get(title, ""))
            out.update({t: fetched[t] for t in missing if fetched.get(t)})
        return {t: url for t, url in out.items() if url}

    def _fetch(self, qids: List[str], lang: str) -> Dict[str, ItemInfo]:
        langs = list(dict.fromkeys([lang, "en"]))
        infos: Dict[str, ItemInfo] = {}
        images: Dict[str, str] = {}
        for start in range(0, len(qids), BATCH):
            data = self._call(self.wikibase_api, {
                "action": "wbgetentities", "ids": "|".join(qids[start:start + BATCH]),
                "props": "labels|descriptions|claims", "languages": "|".join(langs),
            })
            for qid, entity in (data.get("entities") or {}).items():
                if "missing" in entity:
                    continue
                label, label_lang = _pick(entity.get("labels"), langs)
                description, description_lang = _pick(entity.get("descriptions"), langs)
                image = _p18(entity.get("claims") or entity.get("statements") or {})
                if image:
                    images[qid] = "File:" + image
                infos[qid] = ItemInfo(qid, label, description, label_lang, images.get(qid, ""),
                                      description_lang=description_lang)
        thumbs = self._thumbs(sorted(set(images.values())))
        return {q: (replace(i, image_thumb=thumbs.get(i.image_title, "")) if i.image_title else i)
                for q, i in infos.items()}

    def _thumbs(self, titles: List[str]) -> Dict[str, str]:
        out: Dict[str, str] = {}
        for start in range(0, len(titles), BATCH):
            data = self._call(self.media_api, {
                "action": "query", "titles": "|".join(titles[start:start + BATCH]), "prop": "imageinfo",
                "iiprop": "url", "iiurlwidth": str(THUMB_WIDTH),
            })
            query = data.get("query") or {}
            names = {n.get("to"): n.get("from") for n in query.get("normalized") or ()}
            pages = query.get("pages") or {}
            for page in (pages.values() if isinstance(pages, Mapping) else pages):
                info = (page.get("imageinfo") or [{}])[0]
                url = info.get("thumburl") or info.get("url") or ""
                if url:
                    out[names.get(page.get("title"), page.get("title"))] = url
                    out[page.get("title")] = url
        return out

    def _call(self, api: str, params: Dict[str, str]) -> Dict[str, Any]:
        answer = self._http.get(api, params={**params, "format": "json", "formatversion": "2"},
                                timeout=self.timeout_s)
        answer.raise_for_status()
        data = answer.json()
        if not isinstance(data, dict) or "error" in data:
            raise ValueError("the API answered with an error")
        return data


def items_in(qids: Iterable[str], lang: str, labels: Optional["LabelSet"],
             lookup: Optional[ItemLookup]) -> Dict[str, ItemInfo]:
    """The items in ``lang`` (else English): the label set's texts and P18 for the items it
    keeps, the look-up for the others; items neither knows are left out."""
    wanted = sorted(set(q for q in qids if q))
    texts = labels.texts_in(wanted, lang) if labels is not None else {}
    out: Dict[str, ItemInfo] = {}
    others = [q for q in wanted if q not in texts]
    if lookup is not None and others:
        out.update(lookup.get(others, lang))
    titles = {q: "File:" + t.image for q, t in texts.items() if t.image}
    thumbs = lookup.images(titles.values()) if lookup is not None and titles else {}
    for qid, text in texts.items():
        title = titles.get(qid, "")
        out[qid] = ItemInfo(qid, text.label, text.description, text.label_lang, title, thumbs.get(title, ""),
                            description_lang=text.description_lang)
    return out


def _pick(values: Optional[Mapping[str, Any]], langs: List[str]) -> Tuple[str, str]:
    for lang in langs:
        entry = (values or {}).get(lang)
        if isinstance(entry, Mapping) and entry.get("value"):
            return str(entry["value"]), lang
    return "", ""


def _p18(claims: Mapping[str, Any]) -> str:
    for statement in claims.get("P18") or ():
        if statement.get("rank") == "deprecated":
            continue
        value = ((statement.get("mainsnak") or {}).get("datavalue") or {}).get("value")
        if isinstance(value, str) and value:
            return value
    return ""
