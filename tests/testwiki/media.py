"""Serving originals (``/images/…``) and thumbnails (``/thumb/…``).

Rules enforced here mirror upload.wikimedia.org: non-standard thumbnail
widths get 429 "Use thumbnail steps"; optional per-server delay and
concurrency limit make client-side connection limits observable.
"""
from __future__ import annotations

import time
import urllib.parse
from typing import TYPE_CHECKING

from .model import FileInfo, Page
from .thumbs import THUMB_STEPS, ThumbnailError, render, requested_width

if TYPE_CHECKING:
    from .server import TestWiki

Response = tuple[int, dict[str, str], bytes]
_TEXT = {'Content-Type': 'text/plain; charset=utf-8'}


def _find(wiki: TestWiki, url_name: str) -> Page | None:
    with wiki.store.lock:
        for page in wiki.store.files():
            if page.file is not None and page.file.url_name == url_name:
                return page
    return None


def _thumb(wiki: TestWiki, info: FileInfo, segment: str) -> Response:
    width = requested_width(segment)
    if width is None or info.url_name not in segment:
        return 404, _TEXT, b'Not Found'
    if width not in THUMB_STEPS:
        with wiki.media._lock:
            wiki.media.rejected_steps += 1
        return 429, {**_TEXT, 'Retry-After': '1'}, b'Use thumbnail steps'
    cache = wiki.thumb_cache
    key = (info.sha1, width)
    if key not in cache:
        try:
            cache[key] = render(info, width)
        except ThumbnailError as exc:
            return 500, _TEXT, (f'Error generating thumbnail: {exc}').encode()
    body, ctype = cache[key]
    return 200, {'Content-Type': ctype, 'Cache-Control': 'public, max-age=86400',
                 'X-Cache': 'testwiki'}, body


def _fault(wiki: TestWiki, parts: list[str]) -> Response | None:
    """An injected ``thumb``/``original`` fault for this file (``title`` = ``File:Name``)."""
    if len(parts) < 4 or parts[0] not in ('thumb', 'images'):
        return None
    kind = 'thumb' if parts[0] == 'thumb' else 'original'
    title = 'File:' + parts[3].replace('_', ' ')
    fault = wiki.faults.take({kind}, {}, {title})
    if fault is None:
        return None
    if fault.error == 'timeout':
        fault.stall(wiki.stopping)  # released at server stop, like API stalls
        return None
    status = {'http500': 500, 'http503': 503, 'http429': 429}.get(fault.error, 500)
    headers = dict(_TEXT)
    if status in (429, 503):
        headers['Retry-After'] = str(fault.retry_after or 1)
    return status, headers, f'{fault.error} (injected)'.encode()


def serve_media(wiki: TestWiki, path: str) -> Response:
    """Answer a media request, counting it as one in-flight connection."""
    with wiki.media.connection() as level:
        if wiki.thumb_concurrency_limit and level > wiki.thumb_concurrency_limit:
            with wiki.media._lock:
                wiki.media.rejected_concurrency += 1
            return 429, {**_TEXT, 'Retry-After': '1'}, \
                b'Too many concurrent requests from your client'
        if wiki.thumb_delay:
            time.sleep(wiki.thumb_delay)
        parts = [urllib.parse.unquote(p) for p in path.split('/') if p]
        failed = _fault(wiki, parts)
        if failed is not None:
            return failed
        # /images/a/ab/Name  or  /thumb/a/ab/Name/330px-Name
        if parts[0] == 'images' and len(parts) == 4:
            page = _find(wiki, parts[3])
            if page is None or page.file is None:
                return 404, _TEXT, b'Not Found'
            return 200, {'Content-Type': page.file.mime}, page.file.data
        if parts[0] == 'thumb' and len(parts) == 5:
            page = _find(wiki, parts[3])
            if page is None or page.file is None:
                return 404, _TEXT, b'Not Found'
            return _thumb(wiki, page.file, parts[4])
        return 404, _TEXT, b'Not Found'
