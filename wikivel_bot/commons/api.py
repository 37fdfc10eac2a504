"""Raw Action API calls through pywikibot, with errors translated in one place.

pywikibot's page objects make one request per page and property; the poller and the fetcher
instead ask for many pages and properties in one ``action=query`` and follow the API's
``continue`` object themselves, so that they know where a page of results ends (the poller
commits its cursor there). pywikibot still does the HTTP part: User-Agent, cookies, maxlag,
retries with backoff, throttling.

Every pywikibot or requests failure leaves this module as :class:`WikiError` with the site
and the API's own error code, so callers handle one exception type.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Mapping, Sequence, TypeVar

from pywikibot import exceptions as pwb_exceptions

from wikivel_bot.errors import WikiError

T = TypeVar("T")

# Keys of a page entry whose values are lists that continue across requests
# (``prop=categories`` continues with ``clcontinue``, revisions with ``rvcontinue``).
_LIST_PROPS = ("categories", "revisions", "imageinfo", "templates")


@contextmanager
def translated_errors(site: Any, what: str) -> Iterator[None]:
    """Turn pywikibot/requests failures inside the block into one-line :class:`WikiError`.

    :param site: the site the request went to (named in the message).
    :param what: what was being done, e.g. ``"reading the upload log"``.
    """
    try:
        yield
    except WikiError:
        raise
    except pwb_exceptions.APIError as exc:
        raise WikiError(f"{site}: {what} failed: API error {exc.code}: {exc.info}") from exc
    except pwb_exceptions.Error as exc:
        # ServerError, ApiTimeoutError (retries used up), SiteDefinitionError, ...
        raise WikiError(f"{site}: {what} failed: {type(exc).__name__}: {exc}") from exc
    except OSError as exc:
        # requests' ConnectionError and friends are OSErrors.
        raise WikiError(f"{site}: {what} failed: {exc}") from exc


def request(site: Any, what: str, **params: Any) -> Dict[str, Any]:
    """One API request; returns the decoded JSON (``formatversion=2`` unless given).

    :param site: a pywikibot ``APISite``.
    :param what: for error messages.
    :param params: API parameters; lists are joined with ``|``.
    :raises WikiError: on any failure after pywikibot's own retries.
    """
    params.setdefault("formatversion", 2)
    clean = {k: ("|".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in params.items()}
    with translated_errors(site, what):
        return site.simple_request(**clean).submit()


def query_pages(site: Any, what: str, **params: Any) -> Dict[str, Any]:
    """An ``action=query`` over a page set, following continuation, pages merged.

    Props that continue (categories, revisions) arrive in several answers for the same page;
    they are concatenated here so the caller sees one entry per page.

    :return: ``{"pages": [page entry, ...], "normalized": [...], "redirects": [...]}``; pages
        keep the API's order of the first answer.
    """
    # Not pywikibot's PropertyGenerator: it drops ``normalized`` and ``redirects``, which map
    # each answer back to the title asked (a moved file must stay under its queued title).
    params = dict(params, action="query")
    pages: Dict[Any, Dict[str, Any]] = {}
    normalized: List[Dict[str, Any]] = []
    redirects: List[Dict[str, Any]] = []
    cont: Mapping[str, Any] = {}
    while True:
        data = request(site, what, **params, **cont)
        query = data.get("query", {})
        if not cont:
            normalized = list(query.get("normalized", ()))
            redirects = list(query.get("redirects", ()))
        for entry in query.get("pages", ()):
            key = entry.get("pageid") or ("missing", entry.get("title"))
            merged = pages.setdefault(key, {})
            for name, value in entry.items():
                if name in _LIST_PROPS and name in merged:
                    merged[name] = list(merged[name]) + list(value)
                else:
                    merged[name] = value
        if "continue" not in data:
            break
        cont = data["continue"]
    return {"pages": list(pages.values()), "normalized": normalized, "redirects": redirects}


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``size`` (API limits: 50 titles or ids per request)."""
    size = max(1, int(size))
    for start in range(0, len(items), size):
        yield items[start:start + size]


def resolved_titles(result: Mapping[str, Any], asked: Sequence[str]) -> Dict[str, str]:
    """{title as asked: title of the page answered}, through ``normalized`` and ``redirects``.

    Two titles asked may end at one page (a redirect and its target); each keeps its own
    entry here.

    :param result: from :func:`query_pages`.
    :param asked: the titles that were sent.
    """
    forward = {t: t for t in asked}
    for hop in ("normalized", "redirects"):
        steps = {item["from"]: item["to"] for item in result.get(hop, ())}
        forward = {asked_as: steps.get(now, now) for asked_as, now in forward.items()}
    return forward


def site_key(site: Any) -> str:
    """A stable, readable name of the wiki: host and script path (``commons.wikimedia.org/w``)."""
    return f"{site.hostname()}{site.scriptpath()}"
