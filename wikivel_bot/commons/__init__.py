"""The Commons side: pywikibot and HTTP adapters (the only package that imports pywikibot).

Modules, one concept each::

    site.py        open_site(settings.site) -> DataSite; open_repo(...) and open_items(...) for items
    api.py         raw Action API requests, continuation, error translation
    poller.py      UploadPoller: new uploads from the upload log in cursor-ended batches
    filters.py     the eligibility rules (pure): refuse_upload, refuse_fetched, unusable
    files.py       one query for 50 files: imageinfo, categories, wikitext, MediaInfo
    fetcher.py     fetch_media(site, titles) -> {title: MediaFile | reason}; Fetcher stage
    thumbnails.py  ThumbnailClient.get(url) -> bytes (standard steps, 2 connections, 429)
    wikitext.py    description with language fallback; {{bots}}/{{nobots}} (pure)
    mediainfo.py   depicts and captions of a MediaInfo entity (pure)
    generators.py  file_pages(site, ["-cat:…"]), uploads_of(...), resolve_file(site, text)
    sources.py     suggest_sources(...) for ``wikivel-bot suggest``
    outcomes.py    Unavailable / Ineligible / Deferred (pure)
    item_images.py P18 thumbnails of items, cached on disk (fusion, cascade, verifier)
    evidence_refs.py  links and identifier templates in a description (pure)
    evidence.py    EvidenceResolver: categories, links, identifiers -> items (cached)
    providers.py   item_image_source / evidence_source: what a ready linker calls when it
                   first needs the wiki (imports no pywikibot until then)
    writer/        the writer's room: one edit per file, follow-ups, revert, the kill switch

Wikidata items are read by ``wikivel_bot.wikidata`` (a floor below, over plain HTTP).
Importing this package is cheap; pywikibot is loaded by the modules that need it.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple


def suggest_sources(sources: Sequence[str], settings: Any) -> List[Tuple[Any, bytes]]:
    """(MediaFile, bytes) for Commons sources; see :func:`wikivel_bot.commons.sources.suggest_sources`."""
    from wikivel_bot.commons.sources import suggest_sources as _suggest_sources

    return _suggest_sources(sources, settings)
