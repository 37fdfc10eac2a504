"""The poller against the test wiki: continuation, equal timestamps, resume, rules."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict

import pytest
import requests

from tests.commons_support import file_rows, log_events, poll_settings
from tests.commons_support import local_only, pywikibot_dir, queue, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot import pipeline
from wikivel_bot.commons.poller import UploadPoller
from wikivel_bot.errors import WikiError
from wikivel_bot.types import Cursor

EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)
# Fixture uploads the default rules refuse, with the kind of reason.
REFUSED_BY_DEFAULT = {
    "File:Bicycle icon.png": "too small",
    "File:Small red circle.png": "too small",
    "File:Tiny blue square.png": "too small",
    "File:Sunset thumbnail sized.jpg": "too small",
    "File:Animated traffic light.gif": "too small",
    "File:Annual report 2023.pdf": "mime type",
    "File:Bird in flight.webm": "mime type",
    "File:Deleted after upload.jpg": "deleted",
    "File:Cat and dog together.jpg": "already depicts",
}
FIXTURE_UPLOADS = 46


def kind(reason: Any) -> Any:
    return reason.split(":")[0] if reason else None


def logevents_requests(wiki: Any) -> list:
    return [r for r in wiki.recorder.api_requests("query") if r.params.get("list") == "logevents"]


def test_poll_reads_every_upload_once_across_pages(wiki, site, queue) -> None:
    poller = UploadPoller(site, poll_settings(batch_size=7))
    before = len(logevents_requests(wiki))
    counters = pipeline.poll_once(queue, poller, since=EPOCH)

    rows = file_rows(queue)
    assert len(rows) == FIXTURE_UPLOADS
    assert counters.read == FIXTURE_UPLOADS
    assert counters.enqueued == FIXTURE_UPLOADS - len(REFUSED_BY_DEFAULT)
    assert sum(counters.ineligible.values()) == len(REFUSED_BY_DEFAULT)
    assert counters.known == 0
    refused = {title: kind(row["reason"]) for title, row in rows.items() if row["state"] == "ineligible"}
    assert refused == REFUSED_BY_DEFAULT
    assert all(row["state"] == "discovered" for t, row in rows.items() if t not in REFUSED_BY_DEFAULT)
    # 46 entries at 7 a page: the API's continuation was followed page by page.
    assert len(logevents_requests(wiki)) - before == 7
    # The deleted file is recorded under the page id its log entry names.
    assert rows["File:Deleted after upload.jpg"]["page_id"] == 10029
    cat = rows["File:Black cat on sofa.jpg"]
    assert (cat["page_id"], cat["uploader"], cat["mime"], cat["width"], cat["height"]) == (
        10001, "Alice Uploader", "image/jpeg", 800, 600)
    assert queue.get_cursor(poller.source) == Cursor(datetime(2024, 5, 1, 13, 23), 50046)

    again = pipeline.poll_once(queue, poller)
    assert (again.read, again.enqueued, sum(again.ineligible.values())) == (0, 0, 0)
    assert len(file_rows(queue)) == FIXTURE_UPLOADS


def test_equal_timestamps_are_neither_skipped_nor_repeated(wiki, site, queue) -> None:
    # The cursor sits inside the five-file UploadWizard batch that shares 12:00:00.
    poller = UploadPoller(site, poll_settings(batch_size=2))
    queue.set_cursor(poller.source, Cursor(datetime(2024, 5, 1, 12, 0), 50031))
    counters = pipeline.poll_once(queue, poller)

    rows = file_rows(queue)
    ids = sorted(row["log_id"] for row in rows.values())
    assert ids[:3] == [50032, 50033, 50034]
    assert min(ids) == 50032 and max(ids) == 50046
    assert counters.read == len(rows) == 15


def test_a_poll_that_fails_half_way_resumes_after_the_last_committed_page(wiki, site, queue) -> None:
    poller = UploadPoller(site, poll_settings(batch_size=10))
    # Where the API's second page starts: the fault fires only for that request (and for
    # all of pywikibot's retries of it), the way a server failing mid-poll looks.
    first_page = requests.get(wiki.api_url, timeout=10, params={
        "action": "query", "list": "logevents", "leaction": "upload/upload", "ledir": "newer",
        "lestart": "2024-01-01T00:00:00Z", "lelimit": 10, "format": "json"}).json()
    second = first_page["continue"]["lecontinue"]
    fault = wiki.faults.add("logevents", "http500", times=None, params={"lecontinue": second})
    try:
        with pytest.raises(WikiError, match="upload log"):
            pipeline.poll_once(queue, poller, since=EPOCH)
        assert fault.fired >= 2  # pywikibot retried before giving up
    finally:
        wiki.faults.remove(fault)

    first_ten = log_events(wiki, lestart="2024-01-01T00:00:00Z")[:10]
    assert len(file_rows(queue)) == 10
    assert queue.get_cursor(poller.source) == Cursor(datetime(2024, 5, 1, 9, 3), first_ten[-1]["logid"])

    rest = pipeline.poll_once(queue, poller)
    assert rest.read == FIXTURE_UPLOADS - 10
    assert rest.enqueued + sum(rest.ineligible.values()) == FIXTURE_UPLOADS - 10
    assert rest.known == 0
    assert len(file_rows(queue)) == FIXTURE_UPLOADS


def test_first_poll_of_a_new_queue_starts_with_the_newest_batch(wiki, site, queue) -> None:
    poller = UploadPoller(site, poll_settings(batch_size=5))
    counters = pipeline.poll_once(queue, poller)
    assert counters.read == 5
    assert sorted(r["log_id"] for r in file_rows(queue).values()) == [50042, 50043, 50044, 50045, 50046]


def test_every_rule_records_its_reason(wiki, site, queue) -> None:
    settings = poll_settings(
        mime_types=("image/jpeg", "image/svg+xml"), min_width=300, min_height=300,
        max_existing_depicts=1, skip_uploaders=("User:Carla_Archiv",), skip_categories=("Category:cats",),
        include_overwrites=True, batch_size=10,
    )
    counters = pipeline.poll_once(queue, UploadPoller(site, settings), since=EPOCH)
    reasons: Dict[str, Any] = {t: r["reason"] for t, r in file_rows(queue).items()}
    expected = {
        "File:Red apple.png": "mime type: image/png",
        "File:Sunset thumbnail sized.jpg": "too small: 150x100 px (minimum 300x300)",
        "File:Castle on a hill.jpg": "uploader opted out: Carla Archiv",
        "File:Truncated upload.jpg": "category opted out: Cats",
        "File:Nobots example.jpg": "category opted out: Cats",
        "File:Black cat on sofa.jpg": "already depicts: 1 statements (limit 1)",
        "File:Unknown bird species.jpg": "already depicts: 1 statements (limit 1)",  # somevalue counts
        "File:Cows grazing.jpg": "already depicts: 1 statements (limit 1)",  # deprecated does not
        "File:Deleted after upload.jpg": "deleted: the file was deleted before it was polled",
        "File:Wikivel logo.svg": None,  # SVG scales: its nominal 200x200 is no reason
        "File:Lighthouse at dusk.jpg": None,
        "File:Annual report 2023.pdf": "mime type: application/pdf",
    }
    assert {t: reasons[t] for t in expected} == expected
    # With overwrites, the overwrite (a later log page) of a queued file is read, not queued again.
    assert counters.read == FIXTURE_UPLOADS + 1
    assert counters.known == 1
    assert len(reasons) == FIXTURE_UPLOADS


def test_new_uploads_at_the_same_second_are_all_queued(wiki, site, queue) -> None:
    poller = UploadPoller(site, poll_settings(batch_size=3))
    pipeline.poll_once(queue, poller, since=EPOCH)
    first = wiki.add_upload("Poll test tie one.jpg", width=640, height=480)
    pipeline.poll_once(queue, poller)
    second = wiki.add_upload("Poll test tie two.jpg", width=640, height=480, timestamp=first.timestamp)
    small = wiki.add_upload("Poll test tiny.png", width=50, height=50, timestamp=first.timestamp)
    counters = pipeline.poll_once(queue, poller)
    rows = file_rows(queue)
    assert rows[first.title]["state"] == rows[second.title]["state"] == "discovered"
    assert rows[small.title]["reason"].startswith("too small")
    assert (counters.read, counters.enqueued, sum(counters.ineligible.values())) == (2, 1, 1)


def test_requests_name_the_operator(wiki, site, queue) -> None:
    before = len(wiki.requests)
    pipeline.poll_once(queue, UploadPoller(site, poll_settings(batch_size=50)), since=EPOCH)
    agents = {r.user_agent for r in wiki.requests[before:]}
    assert agents and all("wikivel-bot/" in a and "User:Wikivel_operator" in a for a in agents)
