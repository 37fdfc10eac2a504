"""Commons inputs of ``wikivel-bot suggest``: titles, M-ids, URLs and generator arguments.

Each source becomes (MediaFile, thumbnail bytes), fetched with the same code as the queue's
fetch stage. :func:`iter_sources` answers every source on its own: a file named explicitly
that cannot be used gives that source's reason (the others still come), files from a
generator that cannot be used are skipped with a log line. Thumbnails are downloaded as the
caller asks for the next file, so a long list never sits in memory at once.

A title that does not exist is told apart from a deleted file by the deletion log: "no
such file" for a typo, "deleted" for a file that was there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

from wikivel_bot.commons import api
from wikivel_bot.commons.fetcher import fetch_media, fetch_media_by_ids
from wikivel_bot.commons.generators import file_pages, resolve_file
from wikivel_bot.commons.site import open_site
from wikivel_bot.commons.thumbnails import ThumbnailClient
from wikivel_bot.config import Settings
from wikivel_bot.core.titles import FILE_PREFIXES, check_file_title
from wikivel_bot.errors import FileUnavailable, UsageError, WikiError, WikivelError
from wikivel_bot.types import MediaFile, is_mid, page_id_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceFailed:
    """An explicitly named source that gives no image, and why (one line)."""

    source: str
    reason: str
    usage: bool = False  # the source itself is malformed (not a file the wiki lacks)


SourceResult = Union[Tuple[MediaFile, bytes], SourceFailed]


def iter_sources(
    sources: Sequence[str], settings: Settings, site: Any = None,
    thumbnails: Optional[ThumbnailClient] = None,
) -> Iterator[Tuple[str, SourceResult]]:
    """(source, (MediaFile, bytes) or SourceFailed) for each Commons source, in order.

    :param sources: ``File:`` titles, ``M123`` ids and URLs (each one file), and generator
        arguments (all given generator arguments are combined, as in a pywikibot script;
        their files come after the named ones, each under its title).
    :param settings: site, fetch and language settings.
    :param site: an open site (default: :func:`open_site` of ``settings.site``).
    :raises UsageError: bad generator arguments. :raises WikiError: the wiki failed.
    """
    site = site or open_site(settings.site)
    named: List[Tuple[str, Union[str, int, SourceFailed]]] = []
    for text in sources:
        if text.startswith("-"):
            continue
        named.append((text, _key_of(site, text)))
    generator_args = [s for s in sources if s.startswith("-")]
    titles = [key for _, key in named if isinstance(key, str)]
    extra: List[str] = []
    if generator_args:
        seen = set(titles)
        for page in file_pages(site, generator_args):
            if page.title() not in seen:
                seen.add(page.title())
                extra.append(page.title())
    width, languages, size = settings.fetch.thumb_width, settings.site.languages, settings.fetch.batch_size
    by_title = fetch_media(site, titles + extra, thumb_width=width, languages=languages,
                           batch_size=size) if titles or extra else {}
    ids = [key for _, key in named if isinstance(key, int)]
    by_id = fetch_media_by_ids(site, ids, thumb_width=width, languages=languages, batch_size=size) if ids else {}
    client = thumbnails or ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    try:
        for text, key in named:
            if isinstance(key, SourceFailed):
                yield text, key
                continue
            found = by_title.get(key, "not found") if isinstance(key, str) else by_id.get(key, "not found")
            yield text, _with_bytes(site, client, text, key, found)
        for title in extra:
            result = _with_bytes(site, client, title, title, by_title.get(title, "not found"))
            if isinstance(result, SourceFailed):
                log.warning("%s skipped: %s", title, result.reason)
                continue
            yield title, result
    finally:
        if thumbnails is None:
            client.close()


def suggest_sources(
    sources: Sequence[str], settings: Settings, site: Any = None,
    thumbnails: Optional[ThumbnailClient] = None,
) -> List[Tuple[MediaFile, bytes]]:
    """(MediaFile, image bytes) for every source; the first named one that fails raises.

    :raises UsageError: a source that is not a file, or a named file that is unavailable.
    :raises WikiError: the wiki failed.
    """
    out: List[Tuple[MediaFile, bytes]] = []
    for _source, result in iter_sources(sources, settings, site, thumbnails):
        if isinstance(result, SourceFailed):
            raise UsageError(result.reason)
        out.append(result)
    return out


def read_named(sources: Sequence[str], settings: Settings,
               site: Any) -> List[Tuple[str, Union[MediaFile, SourceFailed]]]:
    """Each named source's file as the fetcher reads it (revision, categories, references:
    no image bytes yet), or why it gives none, in the words :func:`iter_sources` uses.

    For a caller that decides per file whether the image is needed at all (the resident
    suggestion service answers a file it has seen at the same revision from its cache).
    Generator arguments are not sources here.
    """
    named = [(text, _key_of(site, text)) for text in sources]
    width, languages, size = settings.fetch.thumb_width, settings.site.languages, settings.fetch.batch_size
    titles = [key for _, key in named if isinstance(key, str)]
    ids = [key for _, key in named if isinstance(key, int)]
    by_title = fetch_media(site, titles, thumb_width=width, languages=languages, batch_size=size) if titles else {}
    by_id = fetch_media_by_ids(site, ids, thumb_width=width, languages=languages, batch_size=size) if ids else {}
    out: List[Tuple[str, Union[MediaFile, SourceFailed]]] = []
    for text, key in named:
        if isinstance(key, SourceFailed):
            out.append((text, key))
            continue
        found = by_title.get(key, "not found") if isinstance(key, str) else by_id.get(key, "not found")
        if isinstance(found, MediaFile):
            out.append((text, found))
            continue
        failed = _with_bytes(site, _NO_DOWNLOADS, text, key, found)
        out.append((text, failed if isinstance(failed, SourceFailed) else SourceFailed(text, str(found))))
    return out


def image_of(client: ThumbnailClient, text: str, media: MediaFile) -> Union[bytes, SourceFailed]:
    """The thumbnail bytes of a file :func:`read_named` read, or why they could not be had."""
    try:
        return client.get(media.thumb_url)
    except (FileUnavailable, WikiError) as exc:
        return SourceFailed(text, f"{media.title}: {exc}")


# read_named hands _with_bytes only the reasons of files that were not found: nothing to download.
_NO_DOWNLOADS: Any = None


def _key_of(site: Any, text: str) -> Union[str, int, SourceFailed]:
    """The title or page id a named source stands for, or why it names none."""
    try:
        if is_mid(text.strip(), any_case=True):
            try:
                return page_id_of(text.strip().upper())
            except ValueError as exc:
                return SourceFailed(text, str(exc), usage=True)
        if text.strip().lower().startswith(FILE_PREFIXES):
            check_file_title(text)
        return str(resolve_file(site, text).title())
    except UsageError as exc:
        return SourceFailed(text, str(exc), usage=True)
    except WikivelError as exc:
        return SourceFailed(text, str(exc))


def _with_bytes(site: Any, client: ThumbnailClient, text: str, key: Union[str, int],
                media: Union[MediaFile, str]) -> SourceResult:
    name = key if isinstance(key, str) else f"M{key}"
    try:
        if isinstance(media, str):
            if media.startswith("deleted"):
                media = _missing_reason(site, key)
            raise FileUnavailable(media)
        return media, client.get(media.thumb_url)
    except (FileUnavailable, WikiError) as exc:
        return SourceFailed(text, f"{name}: {exc}")


def _missing_reason(site: Any, key: Union[str, int]) -> str:
    """"deleted …" when the deletion log knows the title, else "no such file"."""
    if isinstance(key, int):
        return f"no such file: no file page has the id {key} on {site.hostname()} (never existed, or deleted)"
    with api.translated_errors(site, f"reading the deletion log of {key}"):
        entries = list(site.logevents(logtype="delete", page=key, total=1))
    if not entries:
        return f"no such file: {key} does not exist on {site.hostname()}"
    entry = entries[0]
    when = entry.timestamp().isoformat() if hasattr(entry, "timestamp") else ""
    comment = f": {entry.comment()}" if entry.comment() else ""
    return f"deleted: the file no longer exists (deleted {when}{comment})"
