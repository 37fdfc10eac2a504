"""ThumbnailClient against the test wiki's media server: steps, connections, 429, guards."""

from __future__ import annotations

import time
from typing import Any, Iterator, List

import pytest

from tests.commons_support import CONTACT, media_requests, original_url, thumb_url
from tests.commons_support import local_only, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot.commons.thumbnails import ThumbnailClient, thumb_width
from wikivel_bot.errors import FileUnavailable, UsageError, WikiError

PHOTOS = ["File:Black cat on sofa.jpg", "File:Dog in the park.jpg", "File:Red bridge over river.jpg",
          "File:Mallard on pond.jpg", "File:Sunflower field.jpg", "File:Snowy mountain peak.jpg"]


class Sleeps:
    """Records the waits asked for; sleeps for real only when told to."""

    def __init__(self, real: bool = False) -> None:
        self.calls: List[float] = []
        self.real = real

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if self.real:
            time.sleep(seconds)


@pytest.fixture
def media_server(wiki, local_only) -> Iterator[Any]:
    """The wiki with media counters reset, and its media settings restored afterwards."""
    wiki.media.reset()
    yield wiki
    wiki.thumb_delay = 0.0
    wiki.thumb_concurrency_limit = None
    wiki.faults.clear()


def client(**kwargs: Any) -> ThumbnailClient:
    return ThumbnailClient(contact=CONTACT, timeout_s=10, backoff_s=0.01, **kwargs)


def test_only_standard_steps_are_requested(media_server) -> None:
    url = thumb_url(media_server, PHOTOS[0], 330).replace("/330px-", "/331px-")
    before = len(media_requests(media_server))
    with client() as c, pytest.raises(UsageError, match="331 px is not a standard step"):
        c.get(url)
    assert len(media_requests(media_server)) == before
    assert media_server.media.rejected_steps == 0
    assert thumb_width("http://h/thumb/a/ab/X.tif/lossy-page1-500px-X.tif.jpg") == 500
    assert thumb_width("http://h/thumb/a/ab/X.webm/330px--X.webm.jpg") == 330
    assert thumb_width("http://h/images/a/ab/X.jpg") is None


@pytest.mark.parametrize("connections", [2, 3])
def test_concurrent_connections_stay_within_the_limit(media_server, connections: int) -> None:
    urls = [thumb_url(media_server, t, 120) for t in PHOTOS]
    media_server.thumb_delay = 0.15
    with client(max_connections=connections) as c:
        results = c.get_many(urls)
    assert all(isinstance(v, bytes) for v in results.values())
    assert media_server.media.total == len(urls)
    # The server saw exactly as many requests in flight as allowed, never more.
    assert media_server.media.max_concurrent == connections


def test_429_waits_for_retry_after(media_server) -> None:
    urls = [thumb_url(media_server, t, 60) for t in PHOTOS[:2]]
    media_server.thumb_delay = 0.3
    media_server.thumb_concurrency_limit = 1  # the second parallel request gets 429, Retry-After: 1
    sleeps = Sleeps(real=True)
    with client(max_connections=2, sleep=sleeps) as c:
        results = c.get_many(urls)
    assert all(isinstance(v, bytes) for v in results.values())
    assert media_server.media.rejected_concurrency >= 1
    assert 1.0 in sleeps.calls  # Retry-After, not the 0.01 s backoff


def test_transient_server_errors_are_retried_then_reported(media_server) -> None:
    # The API endpoint stands in for a failing media server: the fault answers 503 with
    # Retry-After, and the JSON that finally comes is not an image.
    url = media_server.api_url + "?action=query&meta=siteinfo&format=json"
    media_server.faults.add("api", "http503", times=2, retry_after=2)
    sleeps = Sleeps()
    with client(sleep=sleeps) as c, pytest.raises(FileUnavailable, match="^corrupt"):
        c.get(url)
    assert sleeps.calls == [2.0, 2.0]
    media_server.faults.add("api", "http500", times=None)
    sleeps = Sleeps()
    with client(retries=2, sleep=sleeps) as c, pytest.raises(WikiError, match="after 3 attempts: HTTP 500"):
        c.get(url)
    assert sleeps.calls == [0.01, 0.02]  # exponential backoff without a Retry-After


def test_decompression_bomb_and_corrupt_files(media_server) -> None:
    with client() as c:
        with pytest.raises(FileUnavailable, match="^decompression bomb: .*2500000000 pixels"):
            c.get(original_url(media_server, "File:Decompression bomb.png"))
        with pytest.raises(FileUnavailable, match="^corrupt: .*truncated"):
            c.get(original_url(media_server, "File:Truncated upload.jpg"))
        with pytest.raises(FileUnavailable, match="^corrupt: the server cannot render it"):
            c.get(thumb_url(media_server, "File:Truncated upload.jpg"))
        with pytest.raises(FileUnavailable, match="^no thumbnail: HTTP 404"):
            c.get(f"{media_server.server}/thumb/0/00/Nope.jpg/330px-Nope.jpg")


def test_pixel_limit_is_checked_before_decoding(media_server) -> None:
    with client(max_pixels=10_000) as c, pytest.raises(
        FileUnavailable, match=r"^decompression bomb: the image claims 330x248 px \(limit 10,000 px\)"
    ):
        c.get(thumb_url(media_server, PHOTOS[0]))


def test_size_limit(media_server) -> None:
    with client(max_bytes=2_000) as c, pytest.raises(FileUnavailable, match="^too large"):
        c.get(thumb_url(media_server, PHOTOS[0]))


def test_media_requests_carry_the_contact(media_server) -> None:
    before = len(media_requests(media_server))
    with client() as c:
        c.get(thumb_url(media_server, PHOTOS[1], 250))
    agents = {r.user_agent for r in media_requests(media_server)[before:]}
    assert agents and all(a.startswith("wikivel-bot/") and CONTACT in a for a in agents)


def test_a_long_retry_after_is_capped(media_server) -> None:
    # The header's forms are tested with the one parser (tests/test_one_wikidata_client.py);
    # here: the thumbnails use it, and a 10-minute Retry-After waits only max_wait_s.
    url = media_server.api_url + "?action=query&meta=siteinfo&format=json"
    media_server.faults.add("api", "http503", times=1, retry_after=600)
    sleeps = Sleeps()
    with client(sleep=sleeps, max_wait_s=0.5) as c, pytest.raises(FileUnavailable, match="^corrupt"):
        c.get(url)
    assert sleeps.calls == [0.5]
