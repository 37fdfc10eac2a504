"""Which revision a file is at, in one light request: the resident service's cache check.

The cache is keyed by (page id, file revision, linker version), so every request must learn
the file's current revision — but not through pywikibot, whose read throttle (``minthrottle``,
0.1 s by default) and full file read (description, categories, references, thumbnail URL)
would cost a cached answer more than the answer itself. One ``prop=info`` query per group
(titles and page ids, with redirects followed) over the bot's plain Action API client
(``wikidata.api.ApiSession``: User-Agent, maxlag, retries) gives page id and revision; only a
file the cache does not hold is then read in full.

Sources it cannot place (a URL, a title the API calls invalid or missing) are left out: the
full read answers them, with its own words for what is wrong.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from wikivel_bot.core.titles import FILE_PREFIXES
from wikivel_bot.types import is_mid, page_id_of

# MediaWiki's limit of titles (and page ids) per query for a client without bot rights.
PER_QUERY = 50


def probe_revisions(api: Any, api_url: str, sources: Sequence[str]) -> Dict[str, Tuple[int, int]]:
    """``{source: (page id, revision id)}`` for the ``File:`` titles and M-ids among ``sources``
    that name an existing page.

    :param api: a ``wikidata.api.ApiSession`` (its ``get(url, params, what)``).
    :raises WikiError: the wiki did not answer.
    """
    found: Dict[str, Tuple[int, int]] = {}
    titles = [s for s in sources if s.strip().lower().startswith(FILE_PREFIXES)]
    mids = [s for s in sources if is_mid(s.strip(), any_case=True)]
    for start in range(0, len(titles), PER_QUERY):
        chunk = titles[start:start + PER_QUERY]
        answer = api.get(api_url, {"action": "query", "prop": "info", "redirects": "1",
                                   "titles": "|".join(t.strip() for t in chunk)}, "reading file revisions")
        query = answer.get("query") or {}
        renamed = {e.get("from"): e.get("to") for e in (query.get("normalized") or [])}
        moved = {e.get("from"): e.get("to") for e in (query.get("redirects") or [])}
        pages = {p.get("title"): p for p in _pages(query)}
        for text in chunk:
            title = renamed.get(text.strip(), text.strip())
            page = pages.get(moved.get(title, title))
            if page is not None:
                found[text] = (int(page["pageid"]), int(page["lastrevid"]))
    ids: List[Tuple[str, int]] = []
    for text in mids:
        try:
            ids.append((text, page_id_of(text.strip().upper())))
        except ValueError:
            continue
    for start in range(0, len(ids), PER_QUERY):
        chunk_ids = ids[start:start + PER_QUERY]
        answer = api.get(api_url, {"action": "query", "prop": "info",
                                   "pageids": "|".join(str(i) for _, i in chunk_ids)}, "reading file revisions")
        by_id = {int(p["pageid"]): p for p in _pages(answer.get("query") or {})}
        for text, page_id in chunk_ids:
            page = by_id.get(page_id)
            if page is not None and int(page.get("ns", -1)) == 6:
                found[text] = (page_id, int(page["lastrevid"]))
    return found


def _pages(query: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The existing pages of a ``formatversion=2`` answer (missing and invalid ones left out)."""
    return [p for p in (query.get("pages") or [])
            if isinstance(p, dict) and "missing" not in p and "invalid" not in p and p.get("pageid")
            and p.get("lastrevid")]
