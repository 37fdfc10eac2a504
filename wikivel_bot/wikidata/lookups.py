"""Finding items by what they hold: a page on another wiki (sitelink) or a statement value.

Two look-ups Commons' evidence needs (``wikivel_bot.commons.evidence``), on top of
:class:`~wikivel_bot.wikidata.client.WikidataClient`'s transport (its ``api`` session: the
same User-Agent, maxlag, retries and request counter):

* :func:`sitelink_qids` — ``wbgetentities`` with ``sites``/``titles``, 50 titles a request,
  the wiki's redirects followed; a title answered under its redirect target is matched back
  to the title that was asked;
* :func:`statement_search` — ``list=search`` with ``haswbstatement:"P373=Eiffel Tower|…"``
  (CirrusSearch's statement index): the items holding one of several values.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Set, Tuple

from wikivel_bot.types import is_qid

# wbgetentities takes at most 50 titles a request.
BATCH = 50


def _title_key(title: str) -> str:
    """A title as the wiki compares it: underscores are spaces, spaces collapsed; the first
    letter is left alone (not every wiki capitalises it)."""
    return " ".join(title.replace("_", " ").split())


def sitelink_qids(client: Any, site: str, titles: Sequence[str]) -> Dict[str, str]:
    """{title as asked: item id} for the pages of ``site`` (``enwiki``) linked to an item;
    unlinked and missing pages are left out.

    A batch answers entities, plus a "missing" entry per title that names no item. A title
    that is neither missing nor any entity's sitelink was reached through a redirect (or a
    spelling the wiki normalised): with one such title and one unclaimed entity they belong
    together; otherwise each such title is asked alone (it may also share its item with
    another asked title, the redirect's target).

    :param client: a :class:`~wikivel_bot.wikidata.client.WikidataClient`.
    :raises WikiError: the API failed.
    """
    wanted = list(dict.fromkeys(t for t in titles if t.strip()))
    out: Dict[str, str] = {}
    for start in range(0, len(wanted), BATCH):
        batch = wanted[start:start + BATCH]
        entities, missing = _by_titles(client, site, batch)
        keys = {_title_key(t): t for t in batch}
        unclaimed: List[str] = []
        for qid, linked in entities.items():
            asked = keys.pop(_title_key(linked), None)
            if asked is None:
                unclaimed.append(qid)
            else:
                out[asked] = qid
        left = [t for key, t in keys.items() if key not in missing]
        if len(left) == 1 and len(unclaimed) == 1:
            out[left[0]] = unclaimed[0]
            continue
        for title in left:
            alone, _ = _by_titles(client, site, [title])
            if len(alone) == 1:
                out[title] = next(iter(alone))
    return out


def _by_titles(client: Any, site: str, titles: Sequence[str]) -> Tuple[Dict[str, str], Set[str]]:
    """({item id: its sitelink title on ``site``}, {titles answered "missing"}) of one
    ``wbgetentities`` request."""
    data = client.api.get(client.api_url, {
        "action": "wbgetentities", "sites": site, "titles": "|".join(titles),
        "props": "sitelinks", "sitefilter": site, "redirects": "yes"}, f"finding items by {site} pages")
    found: Dict[str, str] = {}
    missing: Set[str] = set()
    entities = data.get("entities")
    for entity in (entities.values() if isinstance(entities, Mapping) else ()):
        if not isinstance(entity, Mapping):
            continue
        if "missing" in entity:
            missing.add(_title_key(str(entity.get("title", ""))))
        elif is_qid(str(entity.get("id", ""))):
            link = (entity.get("sitelinks") or {}).get(site)
            found[str(entity["id"])] = str(link.get("title", "")) if isinstance(link, Mapping) else ""
    return found, missing


def statement_search(client: Any, prop: str, values: Sequence[str]) -> List[str]:
    """The items holding ``prop`` = one of ``values`` (non-deprecated statements), by the
    search index, with as few requests as its limits allow.

    Values are asked together, ``haswbstatement:"P373=A|P373=B|…"``, in queries of at most
    :data:`MAX_QUERY` characters and :data:`GROUP` values; a query whose hits fill
    :data:`LIMIT` may have lost some and is asked again in halves. The hits do not say which
    value each holds: the caller reads that from the items' statements.

    :param prop: a property id such as ``P373``.
    :param values: the values as the statements hold them (strings, or item ids); a value
        longer than a query can hold is skipped (no item found for it).
    :raises WikiError: the API failed.
    """
    hits: List[str] = []
    for group in _groups(prop, list(dict.fromkeys(v for v in values if v))):
        hits.extend(_search(client, prop, group))
    return list(dict.fromkeys(hits))


# CirrusSearch refuses longer queries (cirrussearch-query-too-long).
MAX_QUERY = 300
# Values per query, and hits per query: a value is held by one or two items (a topic and
# its category item), so 10 values stay well below the limit.
GROUP = 10
LIMIT = 50


def _query(prop: str, values: Sequence[str]) -> str:
    escaped = (v.replace("\\", "\\\\").replace('"', '\\"') for v in values)
    return 'haswbstatement:"' + "|".join(f"{prop}={v}" for v in escaped) + '"'


def _groups(prop: str, values: List[str]) -> List[List[str]]:
    groups: List[List[str]] = []
    for value in values:
        if len(_query(prop, [value])) > MAX_QUERY:
            continue
        if groups and len(groups[-1]) < GROUP and len(_query(prop, groups[-1] + [value])) <= MAX_QUERY:
            groups[-1].append(value)
        else:
            groups.append([value])
    return groups


def _search(client: Any, prop: str, values: List[str]) -> List[str]:
    data = client.api.get(client.api_url, {
        "action": "query", "list": "search", "srsearch": _query(prop, values), "srnamespace": "0",
        "srlimit": str(LIMIT), "srinfo": "", "srprop": ""}, f"searching items with {prop}")
    hits = [str(hit["title"]) for hit in (data.get("query") or {}).get("search") or ()
            if isinstance(hit, Mapping) and is_qid(str(hit.get("title", "")))]
    if len(hits) >= LIMIT and len(values) > 1:
        half = len(values) // 2
        return _search(client, prop, values[:half]) + _search(client, prop, values[half:])
    return hits
