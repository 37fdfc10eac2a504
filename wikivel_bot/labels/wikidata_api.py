"""Small label sets through the Wikidata API, for users without dumps (``--from-qids``).

``wbgetentities`` returns entities in the dumps' JSON format, so the same extraction applies.
The listed items are fetched with texts and claims, then their parents for two more levels
(ancestors within 3 hops need the claims of items 0, 1 and 2 hops up), and the third level's
labels only, for display. Requests go through ``requests`` with a User-Agent that names the
operator (Wikimedia policy), ``maxlag`` and retries; the base URL is a parameter so tests can
point it at a local server.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np
import requests

from wikivel_bot import __version__
from wikivel_bot.errors import WikiError
from wikivel_bot.labels.assemble import Collected, assemble, edges_of, instance_edges_of, texts_table
from wikivel_bot.labels.artifact import write_artifact
from wikivel_bot.labels.entities import ItemFields, extract_item, language_chain, qid_text
from wikivel_bot.labels.hierarchy import MAX_HOPS
from wikivel_bot.labels.labelset import LabelSet
from wikivel_bot.labels.lists import default_p31_blocklist

WIKIDATA_API = "https://www.wikidata.org/w/api.php"
# wbgetentities accepts at most 50 ids per request (for bots and users alike).
BATCH = 50


def user_agent(contact: str = "") -> str:
    """The User-Agent of every request: tool, version and how to reach the operator."""
    return f"wikivel-bot/{__version__} ({contact or 'operator contact not configured'}) requests/{requests.__version__}"


class WikidataClient:
    """Fetch entities with ``wbgetentities``.

    :param api_url: the API endpoint (``https://www.wikidata.org/w/api.php``).
    :param contact: operator contact for the User-Agent.
    :param timeout_s: per request. :param retries: attempts for transient failures.
    :param maxlag: sent with every request; the API answers "maxlag" when lagged.
    """

    def __init__(self, api_url: str = WIKIDATA_API, contact: str = "", timeout_s: float = 30.0,
                 retries: int = 3, maxlag: int = 5, session: Optional[requests.Session] = None) -> None:
        self.api_url = api_url
        self.timeout_s = timeout_s
        self.retries = retries
        self.maxlag = maxlag
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = user_agent(contact)

    def get_entities(self, qids: Sequence[str], props: str, languages: Sequence[str]) -> Dict[str, Dict[str, Any]]:
        """{id: entity} for the items that exist; missing ones are left out, redirects followed.

        :param props: ``wbgetentities`` props, e.g. ``labels|descriptions|claims``.
        :param languages: languages of the texts to return.
        """
        out: Dict[str, Dict[str, Any]] = {}
        unique = list(dict.fromkeys(qids))
        for start in range(0, len(unique), BATCH):
            params = {
                "action": "wbgetentities",
                "ids": "|".join(unique[start : start + BATCH]),
                "props": props,
                "languages": "|".join(languages),
                "format": "json",
                "maxlag": str(self.maxlag),
            }
            for requested, entity in self._request(params).get("entities", {}).items():
                if isinstance(entity, dict) and "missing" not in entity and entity.get("id"):
                    out[requested] = entity
        return out

    def _request(self, params: Dict[str, str]) -> Dict[str, Any]:
        delay = 1.0
        for attempt in range(1, self.retries + 1):
            try:
                response = self.session.get(self.api_url, params=params, timeout=self.timeout_s)
            except requests.RequestException as exc:
                if attempt == self.retries:
                    raise WikiError(f"Wikidata API {self.api_url} unreachable: {exc}") from None
                time.sleep(delay)
                delay *= 2
                continue
            retry_after = response.headers.get("Retry-After")
            if response.status_code in (429, 503) or (response.ok and _is_maxlag(response)):
                if attempt == self.retries:
                    raise WikiError(f"Wikidata API {self.api_url} busy (HTTP {response.status_code}); try later")
                time.sleep(float(retry_after) if retry_after and retry_after.isdigit() else delay)
                delay *= 2
                continue
            if not response.ok:
                raise WikiError(f"Wikidata API {self.api_url} answered HTTP {response.status_code}")
            try:
                data = response.json()
            except ValueError:
                raise WikiError(f"Wikidata API {self.api_url} did not answer JSON") from None
            if "error" in data:
                error = data["error"]
                raise WikiError(f"Wikidata API error {error.get('code')}: {error.get('info')}")
            return data
        raise WikiError(f"Wikidata API {self.api_url}: no answer")  # pragma: no cover


def _is_maxlag(response: requests.Response) -> bool:
    try:
        return response.json().get("error", {}).get("code") == "maxlag"
    except ValueError:
        return False


def build_from_api(
    out_dir: Optional[Path],
    qids: Iterable[int],
    *,
    api_url: str = WIKIDATA_API,
    contact: str = "",
    languages: Sequence[str] = ("en",),
    display_languages: Sequence[str] = ("en",),
    with_aliases: bool = False,
    p31_blocklist: Iterable[int] = (),
    blocklist: Iterable[int] = (),
    allowlist: Iterable[int] = (),
    overwrite: bool = False,
    client: Optional[WikidataClient] = None,
) -> LabelSet:
    """A label set of the listed items (all kept unless removed), built from the API.

    :param out_dir: where to write it (None: keep it in memory only).
    :param qids: numeric QIDs to keep.
    :param languages: the linker's text fallback; :param display_languages: also kept as they
        are, for the review page (``labels.languages``).
    :param api_url: the Wikibase API; :param contact: for the User-Agent.
    :raises WikiError: the API cannot be reached or answers with an error.
    """
    client = client or WikidataClient(api_url, contact=contact)
    chain = language_chain(languages)
    display = tuple(dict.fromkeys(display_languages))
    asked = tuple(dict.fromkeys(chain + display))
    blocked = default_p31_blocklist() | frozenset(p31_blocklist)
    inputs = sorted(set(int(q) for q in qids))
    full = "labels|descriptions|aliases|claims" if with_aliases else "labels|descriptions|claims"
    fields: List[ItemFields] = []
    with_claims: List[ItemFields] = []
    seen = set(inputs)
    level_qids = inputs
    for level in range(MAX_HOPS + 1):
        props = full if level < MAX_HOPS else "labels|descriptions"
        entities = client.get_entities([qid_text(q) for q in level_qids], props, asked)
        next_level: List[int] = []
        for entity in entities.values():
            item = extract_item(entity, chain, with_aliases, blocked, display)
            if item is None:
                continue
            fields.append(item)
            if level < MAX_HOPS:
                with_claims.append(item)
                next_level += [p for p in item.p31 + item.p279 if p not in seen]
        level_qids = sorted(set(next_level))
        seen.update(level_qids)
        if not level_qids:
            break
    collected = Collected(
        texts=texts_table(fields), edges=edges_of(with_claims),
        inputs=np.asarray(inputs, dtype=np.int64), direct=np.zeros(len(inputs), dtype=np.int64),
        instance_edges=instance_edges_of(with_claims),
    )
    label_set = assemble(
        collected, min_freq=0, languages=languages, display_languages=display, with_aliases=with_aliases,
        p31_blocklist=blocked,
        blocklist=blocklist, allowlist=allowlist,
        sources=[{"kind": "wikidata-api", "name": api_url, "date": time.strftime("%Y-%m-%d", time.gmtime()),
                  "items": len(inputs)}],
    )
    if out_dir is not None:
        label_set.path = write_artifact(label_set.data, Path(out_dir), overwrite=overwrite)
    return label_set
