"""Commons inputs of ``wikivel-bot suggest``: titles, URLs and generator arguments → images.

Each source becomes (MediaFile, thumbnail bytes), fetched with the same code as the queue's
fetch stage. A file named explicitly that cannot be used is an error (the user asked for
it); files from a generator that cannot be used are skipped with a log line.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.commons.fetcher import fetch_media
from wikivel_bot.commons.generators import file_pages, resolve_file
from wikivel_bot.commons.site import open_site
from wikivel_bot.commons.thumbnails import ThumbnailClient
from wikivel_bot.config import Settings
from wikivel_bot.errors import FileUnavailable, UsageError, WikiError
from wikivel_bot.types import MediaFile

log = logging.getLogger(__name__)


def suggest_sources(
    sources: Sequence[str], settings: Settings, site: Any = None,
    thumbnails: Optional[ThumbnailClient] = None,
) -> List[Tuple[MediaFile, bytes]]:
    """(MediaFile, image bytes) for ``File:X.jpg``, Commons URLs and ``-cat:``-style arguments.

    :param sources: titles and URLs (each one file) and generator arguments (all given
        generator arguments are combined, as in a pywikibot script).
    :param settings: site, fetch and language settings.
    :param site: an open site (default: :func:`open_site` of ``settings.site``).
    :raises UsageError: a source that is not a file, or a named file that is unavailable.
    :raises WikiError: the wiki failed.
    """
    site = site or open_site(settings.site)
    named = [s for s in sources if not s.startswith("-")]
    generator_args = [s for s in sources if s.startswith("-")]
    titles: Dict[str, bool] = {}  # title -> named explicitly
    for text in named:
        titles[resolve_file(site, text).title()] = True
    if generator_args:
        for page in file_pages(site, generator_args):
            titles.setdefault(page.title(), False)
    if not titles:
        return []
    found = fetch_media(
        site, list(titles), thumb_width=settings.fetch.thumb_width,
        languages=settings.site.languages, batch_size=settings.fetch.batch_size,
    )
    client = thumbnails or ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    out: List[Tuple[MediaFile, bytes]] = []
    try:
        for title, explicit in titles.items():
            media = found.get(title, "not found")
            try:
                if isinstance(media, str):
                    raise FileUnavailable(media)
                out.append((media, client.get(media.thumb_url)))
            except (FileUnavailable, WikiError) as exc:
                if explicit:
                    raise UsageError(f"{title}: {exc}") from None
                log.warning("%s skipped: %s", title, exc)
    finally:
        if thumbnails is None:
            client.close()
    return out
