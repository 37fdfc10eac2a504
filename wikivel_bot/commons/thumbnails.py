"""Downloading thumbnails politely and checking that they are images we can decode.

upload.wikimedia.org's rules for tools: only the standard thumbnail steps (other widths are
answered 429 "Use thumbnail steps"), at most 2 concurrent connections, a User-Agent with a
contact, back off on 429 and honour ``Retry-After``. Enforced here for every download:

* a width outside :data:`THUMB_STEPS` in a ``/thumb/`` URL is refused before sending;
* a semaphore *and* a blocking connection pool of ``max_connections`` (one alone is not
  enough: the pool bounds sockets, the semaphore bounds requests in flight);
* timeouts; retries with exponential backoff for timeouts, connection errors, 5xx and 429
  (``Retry-After`` wins over the backoff, capped at ``max_wait_s``: the bot's one
  :class:`~wikivel_bot.wikidata.retry.RetryPolicy` and ``Retry-After`` parser);
* a byte limit (``Content-Length`` checked first, the stream cut off past the limit);
* a decompression-bomb guard: the header's pixel count is checked before anything is
  decoded, then the whole image is decoded once, so a truncated or corrupt file fails here
  and not in the linker.

Outcomes: the bytes; :class:`FileUnavailable` when the file itself is the problem (404,
corrupt, too large, a bomb); :class:`WikiError` when the server is (still 5xx/429/timeouts
after all retries) — worth trying again later.
"""

from __future__ import annotations

import io
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Optional, Sequence, Union
from urllib.parse import unquote, urlsplit

import requests
from requests.adapters import HTTPAdapter

from wikivel_bot.commons import filters
from wikivel_bot.config import FetchSettings
from wikivel_bot.errors import FileUnavailable, UsageError, WikiError
from wikivel_bot.wikidata.agent import user_agent
from wikivel_bot.wikidata.retry import RetryPolicy, retry_after_seconds

THUMB_STEPS = (20, 40, 60, 120, 250, 330, 500, 960, 1280, 1920, 3840)
# The width in a thumbnail's file name: 330px-X.jpg, lossy-page1-330px-X.tif.jpg, 330px--X.webm.jpg
_WIDTH = re.compile(r"^(?:lossy-)?(?:page\d+-)?(\d+)px-")
# Bodies of Wikimedia's thumbnail errors: the file cannot be rendered, retrying will not help.
_RENDER_ERROR = re.compile(r"error (?:generating|creating) thumbnail", re.IGNORECASE)
DEFAULT_MAX_PIXELS = 50_000_000


def thumb_width(url: str) -> Optional[int]:
    """The width requested by a ``/thumb/`` URL, or None for an original file's URL."""
    parts = [unquote(p) for p in urlsplit(url).path.split("/") if p]
    if "thumb" not in parts:
        return None
    match = _WIDTH.match(parts[-1])
    return int(match.group(1)) if match else None


def check_step(width: int) -> int:
    """``width`` when it is a standard thumbnail step; UsageError otherwise."""
    if width not in THUMB_STEPS:
        raise UsageError(
            f"thumbnail width {width} px is not a standard step "
            f"({', '.join(map(str, THUMB_STEPS))}); the media servers refuse other widths"
        )
    return width


class ThumbnailClient:
    """A requests session for the media host with Wikimedia's rules built in.

    :param contact: operator contact for the User-Agent.
    :param timeout_s: connect and read timeout per attempt.
    :param retries: attempts after the first for transient failures.
    :param max_connections: concurrent requests and pooled connections (Wikimedia: 2).
    :param max_bytes: largest download accepted.
    :param max_pixels: largest decoded image accepted (decompression-bomb guard).
    :param backoff_s: first wait between attempts, doubled each time.
    :param max_wait_s: longest single wait, also for a large ``Retry-After``.
    :param sleep: ``time.sleep``; tests pass a recorder.
    """

    def __init__(
        self,
        *,
        contact: str = "",
        timeout_s: float = 30.0,
        retries: int = 3,
        max_connections: int = 2,
        max_bytes: int = 20_000_000,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        backoff_s: float = 1.0,
        max_wait_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.timeout_s = timeout_s
        self.retries = max(0, retries)
        self.max_connections = max(1, max_connections)
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.policy = RetryPolicy(attempts=self.retries + 1, backoff_s=backoff_s, max_wait_s=max_wait_s, sleep=sleep)
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent(contact)
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=self.max_connections, pool_block=True, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    @classmethod
    def from_settings(cls, settings: FetchSettings, contact: str = "", **kwargs: object) -> "ThumbnailClient":
        """A client configured from ``Settings.fetch`` (``kwargs`` override, e.g. in tests)."""
        options: Dict[str, object] = dict(
            contact=contact, timeout_s=settings.timeout_s, retries=settings.retries,
            max_connections=settings.max_connections, max_bytes=settings.max_bytes,
        )
        options.update(kwargs)
        return cls(**options)  # type: ignore[arg-type]

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "ThumbnailClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, url: str) -> bytes:
        """The image at ``url``, downloaded and checked.

        :raises UsageError: a thumbnail width that is not a standard step.
        :raises FileUnavailable: 404, too large, corrupt or a decompression bomb.
        :raises WikiError: the server kept failing (5xx, 429, timeouts) through all retries.
        """
        width = thumb_width(url)
        if width is not None:
            check_step(width)
        data = self._download(url)
        self.check_image(data)
        return data

    def get_many(self, urls: Sequence[str]) -> Dict[str, Union[bytes, WikiError]]:
        """``get`` for many URLs, ``max_connections`` at a time; failures as values.

        :return: {url: bytes, FileUnavailable or WikiError}.
        """
        unique = list(dict.fromkeys(urls))

        def one(url: str) -> Union[bytes, WikiError]:
            try:
                return self.get(url)
            except WikiError as exc:
                return exc
            except UsageError as exc:
                return WikiError(str(exc))

        with ThreadPoolExecutor(max_workers=self.max_connections, thread_name_prefix="thumb") as pool:
            return dict(zip(unique, pool.map(one, unique)))

    def check_image(self, data: bytes) -> None:
        """Decode ``data`` once; FileUnavailable for a bomb or a corrupt/truncated image."""
        from PIL import Image

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as img:
                    width, height = img.size
                    if width * height > self.max_pixels:
                        raise FileUnavailable(filters.reason(
                            filters.BOMB, f"the image claims {width}x{height} px (limit {self.max_pixels:,} px)"))
                    img.load()
        except FileUnavailable:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise FileUnavailable(filters.reason(filters.BOMB, str(exc))) from None
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            # Pillow's UnidentifiedImageError is an OSError; truncation is an OSError too.
            raise FileUnavailable(filters.reason(filters.CORRUPT, str(exc) or type(exc).__name__)) from None

    # -- HTTP --------------------------------------------------------------------------

    def _download(self, url: str) -> bytes:
        attempt = 0
        while True:
            # Our own loop, not pywikibot's or urllib3's retries: those wait inside the request,
            # holding one of the media host's two slots; here the slot is freed before sleeping.
            try:
                with self._slots:
                    outcome = self._attempt(url)
            except (requests.Timeout, requests.ConnectionError) as exc:
                outcome = _Transient(f"{type(exc).__name__}", None)
            if isinstance(outcome, bytes):
                return outcome
            if attempt >= self.retries:
                raise WikiError(f"{url}: still failing after {attempt + 1} attempts: {outcome.why}")
            self.policy.pause(attempt, outcome.retry_after)
            attempt += 1

    def _attempt(self, url: str) -> Union[bytes, "_Transient"]:
        timeout = (min(self.timeout_s, 10.0), self.timeout_s)
        with self.session.get(url, stream=True, timeout=timeout) as response:
            status = response.status_code
            if status == 429:
                return _Transient("HTTP 429 (rate limited)",
                                  retry_after_seconds(response.headers.get("Retry-After"), self.max_wait_s))
            if status in (404, 410):
                raise FileUnavailable(filters.reason(filters.NO_THUMBNAIL, f"HTTP {status} for {url}"))
            if status >= 500:
                text = response.text[:300]
                if _RENDER_ERROR.search(text):
                    first = " ".join(text.split())[:200]
                    raise FileUnavailable(filters.reason(filters.CORRUPT, f"the server cannot render it: {first}"))
                return _Transient(f"HTTP {status}",
                                  retry_after_seconds(response.headers.get("Retry-After"), self.max_wait_s))
            if status != 200:
                raise FileUnavailable(filters.reason(filters.NO_THUMBNAIL, f"HTTP {status} for {url}"))
            declared = int(response.headers.get("Content-Length") or 0)
            if declared > self.max_bytes:
                raise FileUnavailable(filters.reason(
                    filters.TOO_LARGE, f"{declared:,} bytes (limit {self.max_bytes:,})"))
            body = bytearray()
            for chunk in response.iter_content(64 * 1024):
                body += chunk
                if len(body) > self.max_bytes:
                    raise FileUnavailable(filters.reason(
                        filters.TOO_LARGE, f"more than {self.max_bytes:,} bytes"))
            return bytes(body)


class _Transient:
    """A failure worth retrying, with the server's Retry-After in seconds if it sent one."""

    def __init__(self, why: str, retry_after: Optional[float]) -> None:
        self.why = why
        self.retry_after = retry_after

