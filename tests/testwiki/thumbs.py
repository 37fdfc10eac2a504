"""Media URLs, thumbnail rendering and the upload-server rules.

URLs follow upload.wikimedia.org: originals at ``/images/a/ab/Name.jpg``,
thumbnails at ``/thumb/a/ab/Name.jpg/330px-Name.jpg`` (SVG → ``.png``,
TIFF → ``lossy-page1-…jpg``, PDF → ``page1-…jpg``, video → ``330px--….jpg``).
Only the standard thumbnail steps are served; any other width gets HTTP 429
"Use thumbnail steps", as Wikimedia does for unidentified clients.  The number
of media requests in flight is tracked so tests can assert a client stays at
or below 2 concurrent connections.
"""
from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from PIL import Image

from .model import FileInfo, hash_path

THUMB_STEPS = (20, 40, 60, 120, 250, 330, 500, 960, 1280, 1920, 3840)
_WIDTH_RE = re.compile(r'^(?:lossy-)?(?:page\d+-)?(\d+)px-')


def original_url(base: str, info: FileInfo) -> str:
    """URL of the original file bytes."""
    return f'{base}/images/{hash_path(info.name)}/{info.url_name}'


def thumb_name(info: FileInfo, width: int) -> str:
    """Last path segment of a thumbnail, following Wikimedia's conventions."""
    name = info.url_name
    ext = name.rsplit('.', 1)[-1].lower()
    if ext == 'svg':
        return f'{width}px-{name}.png'
    if ext in ('tif', 'tiff'):
        return f'lossy-page1-{width}px-{name}.jpg'
    if ext == 'pdf':
        return f'page1-{width}px-{name}.jpg'
    if ext in ('webm', 'ogv', 'mp4'):
        return f'{width}px--{name}.jpg'
    if ext == 'webp':
        return f'{width}px-{name}.png'
    return f'{width}px-{name}'


def must_render(info: FileInfo) -> bool:
    """Formats browsers cannot show are always rendered (MediaHandler::mustRender)."""
    return info.mediatype in ('DRAWING', 'OFFICE', 'VIDEO') or \
        info.mime == 'image/tiff'


def thumb_dims(info: FileInfo, width: int | None, height: int | None
               ) -> tuple[int, int, bool]:
    """(thumbwidth, thumbheight, is_original) for ``iiurlwidth/iiurlheight``.

    Bitmaps are never scaled up: asking for more than the original gives the
    original URL.  SVG scales freely.  Must-render formats (TIFF, PDF, video)
    are rendered at most at their own size.
    """
    src_w, src_h = max(info.width, 1), max(info.height, 1)
    scale = 1e9
    if width and width > 0:
        scale = min(scale, width / src_w)
    if height and height > 0:
        scale = min(scale, height / src_h)
    if scale >= 1 and info.mediatype != 'DRAWING':
        return info.width, info.height, not must_render(info)
    tw = max(1, round(src_w * scale))
    th = max(1, round(src_h * scale))
    return tw, th, False


def thumb_url(base: str, info: FileInfo, width: int) -> str:
    """URL of a thumbnail of *info* at *width* pixels."""
    return (f'{base}/thumb/{hash_path(info.name)}/{info.url_name}/'
            f'{thumb_name(info, width)}')


def requested_width(segment: str) -> int | None:
    """Width encoded in a thumbnail file name, or None."""
    match = _WIDTH_RE.match(segment)
    return int(match.group(1)) if match else None


class ThumbnailError(Exception):
    """The file cannot be rendered (truncated, too large, …)."""


def render(info: FileInfo, width: int) -> tuple[bytes, str]:
    """Render a thumbnail; return (bytes, content type).

    Bitmaps that are not wider than *width* are returned unchanged, like
    the original; SVG/PDF/video use their pre-rendered PNG.  Pillow's own
    decompression-bomb guard stays on, so a bomb fails here as it would on
    a careful thumbnailer.
    """
    source = info.render if info.render is not None else info.data
    try:
        with Image.open(io.BytesIO(source)) as img:
            if not must_render(info) and img.width <= width:
                return info.data, info.mime
            img.load()
            if info.mediatype != 'DRAWING':
                width = min(width, img.width)   # never upscale bitmaps
            ratio = width / img.width
            size = (width, max(1, round(img.height * ratio)))
            frame = img.convert('RGBA' if img.mode in ('RGBA', 'LA', 'P')
                                else 'RGB')
            frame = frame.resize(size, Image.Resampling.LANCZOS)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError
            ) as exc:
        raise ThumbnailError(str(exc)) from exc
    out = io.BytesIO()
    target = thumb_name(info, width).rsplit('.', 1)[-1].lower()
    if target in ('jpg', 'jpeg'):
        frame.convert('RGB').save(out, 'JPEG', quality=80)
        return out.getvalue(), 'image/jpeg'
    if target == 'gif':
        frame.convert('P').save(out, 'GIF')
        return out.getvalue(), 'image/gif'
    frame.save(out, 'PNG')
    return out.getvalue(), 'image/png'


class MediaStats:
    """Concurrency bookkeeping for media (thumbnail/original) requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current = 0
        self.max_concurrent = 0
        self.total = 0
        self.rejected_steps = 0
        self.rejected_concurrency = 0

    @contextmanager
    def connection(self) -> Iterator[int]:
        """Count one in-flight media request; yield the concurrency level."""
        with self._lock:
            self.current += 1
            self.total += 1
            self.max_concurrent = max(self.max_concurrent, self.current)
            level = self.current
        try:
            yield level
        finally:
            with self._lock:
                self.current -= 1

    def reset(self) -> None:
        """Forget the counters (not the in-flight count)."""
        with self._lock:
            self.max_concurrent = self.current
            self.total = 0
            self.rejected_steps = 0
            self.rejected_concurrency = 0

    def to_json(self) -> dict[str, int]:
        """Counters as JSON."""
        with self._lock:
            return {'current': self.current, 'max_concurrent': self.max_concurrent,
                    'total': self.total, 'rejected_steps': self.rejected_steps,
                    'rejected_concurrency': self.rejected_concurrency}
