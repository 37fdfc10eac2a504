"""Files named by the user: pywikibot page-generator arguments, titles and Commons URLs.

``file_pages(site, ["-cat:Black cats", "-newimages:20"])`` works like the arguments of any
pywikibot script (``pagegenerators.GeneratorFactory``: ``-cat:``, ``-file:``, ``-search:``,
``-newimages:``, ``-page:``, ``-ns:``, ``-limit:`` …); pages that are not files are passed
over. ``uploads_of`` turns file pages into :class:`Upload` values for the queue (backfill),
50 files per API request. ``resolve_file`` reads one ``File:X.jpg`` or Commons URL.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Iterator, List, Optional, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

import pywikibot
from pywikibot import pagegenerators

from wikivel_bot.commons import api
from wikivel_bot.commons.files import FileEntry, query_files
from wikivel_bot.core.timestamps import parse_timestamp
from wikivel_bot.errors import UsageError
from wikivel_bot.types import Upload

log = logging.getLogger(__name__)

FILE_NAMESPACE = 6
# Generator arguments that would stop and ask on the terminal when given without a value
# (pywikibot prompts with input()); a bot run must fail instead.
NEEDS_VALUE = frozenset({
    "-cat", "-catr", "-subcats", "-subcatsr", "-catfilter", "-file", "-search", "-page",
    "-pageid", "-filelinks", "-imagesused", "-links", "-ref", "-transcludes", "-prefixindex",
    "-start", "-titleregex", "-grep", "-usercontribs", "-weblink", "-searchitem", "-linter",
})


def file_pages(site: Any, args: Sequence[str]) -> Iterator[Any]:
    """The ``FilePage``s that pywikibot generator arguments select, pages of other
    namespaces left out.

    :param site: a pywikibot site.
    :param args: e.g. ``["-cat:Black cats", "-limit:10"]``.
    :raises UsageError: an argument pywikibot does not know, or one missing its value.
    :raises WikiError: the wiki failed while generating.
    """
    factory = pagegenerators.GeneratorFactory(site=site)
    for arg in args:
        name, _, value = arg.partition(":")
        if not arg.startswith("-"):
            raise UsageError(f"{arg!r} is not a generator argument (like -cat:Name or -newimages:20)")
        if name in NEEDS_VALUE and not value.strip():
            raise UsageError(f"{arg}: a value is needed, e.g. {name}:something")
        with api.translated_errors(site, f"reading {arg}"):
            known = factory.handle_arg(arg)
        if not known:
            raise UsageError(f"{arg}: not a pywikibot page generator argument (see pywikibot's pagegenerators)")
    with api.translated_errors(site, "combining the generator arguments"):
        generator = factory.getCombinedGenerator()
    if generator is None:
        raise UsageError(f"no page generator among {' '.join(args)} (use -cat:, -file:, -search:, -newimages:, -page:)")
    pages = iter(generator)
    while True:
        with api.translated_errors(site, f"running {' '.join(args)}"):
            page = next(pages, None)
        if page is None:
            return
        if page.namespace() != FILE_NAMESPACE:
            log.debug("not a file, skipped: %s", page.title())
            continue
        yield pywikibot.FilePage(page)


def uploads_of(site: Any, pages: Iterable[Any], batch_size: int = 50) -> Iterator[Upload]:
    """:class:`Upload` values (current version's time, uploader, size, type) for file pages;
    files that do not exist are skipped.

    :param pages: ``FilePage``s or ``File:`` titles.
    """
    batch: List[str] = []
    for page in pages:
        batch.append(page if isinstance(page, str) else page.title())
        if len(batch) >= batch_size:
            yield from _uploads(site, batch, batch_size)
            batch = []
    if batch:
        yield from _uploads(site, batch, batch_size)


def _uploads(site: Any, titles: Sequence[str], batch_size: int) -> Iterator[Upload]:
    for entry in query_files(site, titles=titles, batch_size=batch_size):
        upload = upload_of(entry)
        if upload is None:
            log.info("no such file, skipped: %s", entry.key)
            continue
        yield upload


def upload_of(entry: FileEntry) -> Optional[Upload]:
    """The :class:`Upload` (current version) of a file entry; None when the file does not exist."""
    info = entry.info
    if not entry.exists or not info:
        return None
    return Upload(
        page_id=entry.page_id,
        title=entry.title,
        timestamp=parse_timestamp(info["timestamp"]),
        uploader=info.get("user", ""),
        sha1=info.get("sha1", ""),
        mime=info.get("mime", ""),
        size=int(info.get("size") or 0),
        width=int(info.get("width") or 0),
        height=int(info.get("height") or 0),
    )


def resolve_file(site: Any, text: str) -> Any:
    """The ``FilePage`` for ``File:X.jpg`` or a URL of the site: ``…/wiki/File:X.jpg``,
    ``…/w/index.php?title=File:X.jpg``, ``…/w/index.php?curid=123``.

    The page is not required to exist (the fetcher reports a missing file as unavailable).

    :raises UsageError: anything else: another wiki's URL, a page that is not a file, a
        page id that does not exist.
    """
    text = text.strip()
    if text.lower().startswith(("http://", "https://")):
        title = _title_from_url(site, text)
    else:
        title = text
    if not title:
        raise UsageError(f"{text!r}: no file named (expected File:Name.jpg or a Commons file URL)")
    try:
        page = pywikibot.Page(site, title)
    except (pywikibot.exceptions.InvalidTitleError, ValueError) as exc:
        raise UsageError(f"{text!r} is not a valid title: {exc}") from None
    if page.namespace() != FILE_NAMESPACE:
        raise UsageError(f"{text!r} is not a file (expected File:Name.jpg or a Commons file URL)")
    return pywikibot.FilePage(page)


def _title_from_url(site: Any, url: str) -> str:
    parts = urlsplit(url)
    hosts = {site.hostname(), site.hostname().replace("commons.", "commons.m.", 1)}
    if parts.netloc.lower() not in {h.lower() for h in hosts}:
        raise UsageError(f"{url} is not on {site.hostname()} (the wiki this bot works on)")
    query = parse_qs(parts.query)
    if "curid" in query:
        raw = query["curid"][0]
        if not raw.isdigit():
            raise UsageError(f"{url}: curid must be a page id (a number)")
        with api.translated_errors(site, f"looking up page id {raw}"):
            found = next(iter(site.load_pages_from_pageids([int(raw)])), None)
        if found is None:
            raise UsageError(f"{url}: there is no page with id {raw}")
        return found.title()
    if "title" in query:
        return query["title"][0]
    with api.translated_errors(site, "reading the site's article path"):
        article = site.articlepath  # "/wiki/{}" on Wikimedia wikis
    prefix = article.split("{}")[0] if "{}" in article else article.replace("$1", "")
    if prefix and parts.path.startswith(prefix):
        return unquote(parts.path[len(prefix):])
    raise UsageError(f"{url}: not a link to a file page (…/wiki/File:Name.jpg or …?title=File:Name.jpg)")
