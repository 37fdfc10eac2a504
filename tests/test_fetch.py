"""The fetch stage against the test wiki: every fixture ends fetched, unavailable or
ineligible with the expected reason; one API request per 50 files."""

from __future__ import annotations

import io
from datetime import datetime, timezone
from typing import Any, Dict

import pytest
from PIL import Image

from tests.commons_support import CONTACT, file_rows, fixture_titles, media_requests, poll_settings
from tests.commons_support import local_only, pywikibot_dir, queue, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot import pipeline
from wikivel_bot.commons.fetcher import Fetcher, fetch_media, fetch_media_by_ids
from wikivel_bot.commons.outcomes import Ineligible, Unavailable
from wikivel_bot.commons.poller import UploadPoller
from wikivel_bot.commons.thumbnails import THUMB_STEPS, ThumbnailClient, thumb_width
from wikivel_bot.config import FetchSettings, Settings, SiteSettings
from wikivel_bot.errors import ConfigError, UsageError
from wikivel_bot.types import Depiction, MediaFile

EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)
# Fixture → (state after fetch, reason kind) for every file the default poll rules let in
# that does not end plainly "fetched".
NOT_FETCHED = {
    "File:Truncated upload.jpg": ("unavailable", "corrupt"),
    "File:Decompression bomb.png": ("unavailable", "decompression bomb"),
    "File:Protected logo.png": ("ineligible", "protected"),
    "File:Nobots example.jpg": ("ineligible", "bots excluded"),
    "File:Bots deny wikivel.jpg": ("ineligible", "bots excluded"),
}


@pytest.fixture(scope="module")
def thumbnails() -> Any:
    with ThumbnailClient(contact=CONTACT, backoff_s=0.01, timeout_s=10) as client:
        yield client


@pytest.fixture(scope="module")
def media(site) -> Dict[str, Any]:
    """fetch_media over every fixture title (one module-wide call)."""
    return fetch_media(site, fixture_titles() + ["File:Black cat.jpg", "File:No such file.jpg"])


def test_every_polled_fixture_gets_its_state(wiki, site, queue, thumbnails) -> None:
    pipeline.poll_once(queue, UploadPoller(site, poll_settings()), since=EPOCH)
    before = len(wiki.recorder.api_requests("query"))
    counters = pipeline.fetch_pending(queue, Fetcher(site, thumbnails=thumbnails), limit=100, worker="test")

    rows = file_rows(queue)
    discovered_before = 46 - 9
    assert counters.claimed == discovered_before
    for title, (state, kind) in NOT_FETCHED.items():
        assert (rows[title]["state"], rows[title]["reason"].split(":")[0]) == (state, kind), title
    fetched = [t for t, r in rows.items() if r["state"] == "fetched"]
    assert len(fetched) == counters.fetched == discovered_before - len(NOT_FETCHED)
    assert not [t for t, r in rows.items() if r["state"] == "discovered"]
    # All 37 files' data came in one query (50 titles per request); thumbnails at 330 px.
    queries = wiki.recorder.api_requests("query")[before:]
    assert len([q for q in queries if "imageinfo" in q.params.get("prop", "")]) == 1
    widths = {thumb_width("http://x" + r.path) for r in media_requests(wiki)}
    assert widths - {None} <= set(THUMB_STEPS)


def test_svg_is_linked_through_its_png_rendering(media, thumbnails) -> None:
    svg = media["File:Wikivel logo.svg"]
    assert isinstance(svg, MediaFile)
    assert svg.thumb_url.endswith("/330px-Wikivel_logo.svg.png")
    with Image.open(io.BytesIO(thumbnails.get(svg.thumb_url))) as img:
        assert img.format == "PNG" and img.width == 330


def test_pdf_and_video_are_not_images(media) -> None:
    assert media["File:Annual report 2023.pdf"].startswith("not an image: application/pdf")
    assert media["File:Bird in flight.webm"].startswith("not an image: video/webm")


def test_what_the_fetcher_reads(media) -> None:
    cat = media["File:Black cat on sofa.jpg"]
    assert cat.page_id == 10001 and cat.mid == "M10001"
    assert cat.description == "A black cat resting on a grey sofa."
    assert cat.categories == ("Black cats", "Cats on sofas")  # hidden licence categories left out
    assert cat.depicts == (Depiction("Q146", "normal"),)
    assert cat.revid > 0 and cat.thumb_url.endswith("/330px-Black_cat_on_sofa.jpg")
    assert cat.bots_allowed and not cat.protected
    assert media["File:Dog in the park.jpg"].depicts == (Depiction("Q144", "preferred"), Depiction("Q22698"))
    assert media["File:Cows grazing.jpg"].depicts == (Depiction("Q830"), Depiction("Q726", "deprecated"))
    assert media["File:Unknown bird species.jpg"].depicts == ()  # somevalue names no item
    assert media["File:Protected logo.png"].protected
    assert not media["File:Nobots example.jpg"].bots_allowed
    assert not media["File:Bots deny wikivel.jpg"].bots_allowed  # names this bot (WikivelBot)
    # A redirect is followed and answered under the title asked; a missing file has a reason.
    assert media["File:Black cat.jpg"].page_id == 10001
    assert media["File:No such file.jpg"].startswith("deleted")
    assert media["File:Deleted after upload.jpg"].startswith("deleted")


def test_description_language_fallback(site) -> None:
    title = "File:Red bridge over river.jpg"
    assert fetch_media(site, [title], languages=("de", "en"))[title].description == (
        "Eine rote Stahlbrücke über einen breiten Fluss.")
    assert fetch_media(site, [title], languages=("fr",))[title].description == (
        "A red steel bridge over a wide river.")


def test_file_deleted_between_poll_and_fetch(wiki, site, queue, thumbnails) -> None:
    upload = wiki.add_upload("Fetch test soon deleted.jpg")
    pipeline.poll_once(queue, UploadPoller(site, poll_settings()), since=datetime.fromisoformat(
        upload.timestamp.replace("Z", "+00:00")))
    assert file_rows(queue)[upload.title]["state"] == "discovered"
    wiki.delete_file(upload.title)
    counters = pipeline.fetch_pending(queue, Fetcher(site, thumbnails=thumbnails), limit=10, worker="test")
    row = file_rows(queue)[upload.title]
    assert (row["state"], row["reason"]) == ("unavailable", "deleted: the file no longer exists")
    assert counters.unavailable == {"deleted": 1}


def test_a_file_that_became_ineligible_after_the_poll(site, thumbnails) -> None:
    fetcher = Fetcher(site, poll_settings=poll_settings(skip_categories=("Dogs in parks",)), thumbnails=thumbnails)
    outcome = fetcher.fetch([10002, 10021, 10024])
    assert outcome[10002] == Ineligible("category opted out: Dogs in parks")
    assert isinstance(outcome[10021], Unavailable) and outcome[10021].reason.startswith("corrupt")
    assert isinstance(outcome[10024], Unavailable) and outcome[10024].reason.startswith("not an image")


def test_fetch_by_page_id_and_thumbnail_width(site) -> None:
    found = fetch_media_by_ids(site, [10005, 999999], thumb_width=120)
    assert found[10005].thumb_url.endswith("/120px-Mallard_on_pond.jpg")
    assert found[999999].startswith("deleted")
    with pytest.raises(ConfigError, match="thumb_width"):
        Fetcher(site, FetchSettings(thumb_width=331))


def test_suggest_sources_reads_titles_urls_and_generators(wiki, site) -> None:
    from wikivel_bot.commons import suggest_sources

    settings = Settings(site=SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT))
    found = suggest_sources(
        ["File:Red apple.png", f"{wiki.server}/wiki/File:Dog_in_the_park.jpg", "-cat:Cats"], settings)
    # From -cat:Cats the truncated upload is skipped (corrupt); the others come with bytes.
    assert [m.title for m, _ in found] == [
        "File:Red apple.png", "File:Dog in the park.jpg", "File:Nobots example.jpg", "File:Overwritten photo.jpg"]
    for _media, data in found:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
    with pytest.raises(UsageError, match="Truncated upload.jpg: corrupt"):
        suggest_sources(["File:Truncated upload.jpg"], settings)
    with pytest.raises(UsageError, match="Annual report 2023.pdf: not an image"):
        suggest_sources(["File:Annual report 2023.pdf"], settings)
