"""Files worth a suggestion: each eligibility rule passes over a file with its recorded reason.

The pure rules on :class:`FileFacts` first (one case per rule), then the opt-out template
rule end to end: a file on the local test wiki whose page uses ``{{Personality rights}}``
is recorded ineligible with its reason by the real fetch stage.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import pytest

from tests.commons_support import CONTACT, file_rows, poll_settings
from tests.commons_support import local_only, pywikibot_dir, queue, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot import pipeline
from wikivel_bot.commons.fetcher import Fetcher
from wikivel_bot.commons.filters import FileFacts, reason_kind, refuse_fetched, refuse_upload
from wikivel_bot.commons.outcomes import Ineligible
from wikivel_bot.commons.poller import UploadPoller
from wikivel_bot.commons.thumbnails import ThumbnailClient
from wikivel_bot.commons.wikitext import templates_used
from wikivel_bot.config import SafetySettings, Settings

PHOTO = FileFacts(mime="image/jpeg", mediatype="BITMAP", width=800, height=600, uploader="Alice",
                  categories=("Cats",), depicts=0, templates=("information", "self"))
RULES = poll_settings(min_width=200, min_height=200, max_existing_depicts=1,
                      skip_categories=("Personality rights warnings",))


@pytest.mark.parametrize("change, expected", [
    ({"width": 199}, "too small: 199x600 px (minimum 200x200)"),
    ({"depicts": 1}, "already depicts: 1 statements (limit 1)"),
    ({"categories": ("Cats", "Personality rights warnings")}, "category opted out: Personality rights warnings"),
    ({"mime": "video/webm"}, "mime type: video/webm"),
    ({"templates": ("information", "personality rights")}, "template opted out: {{Personality rights}}"),
    ({"templates": ("No_AI",)}, "template opted out: {{No AI}}"),
])
def test_each_file_rule_passes_over_a_file_with_its_reason(change, expected):
    assert refuse_fetched(PHOTO, RULES, ("Personality rights", "Template:No AI")) is None
    found = refuse_fetched(dataclasses.replace(PHOTO, **change), RULES, ("Personality rights", "Template:No AI"))
    assert found == expected
    assert reason_kind(found) == expected.split(":")[0]


def test_the_template_rule_applies_where_the_wikitext_is_known():
    # The poller reads no wikitext: templates are checked at the fetch stage only.
    assert refuse_upload(dataclasses.replace(PHOTO, templates=("personality rights",)), RULES) is None
    assert refuse_fetched(dataclasses.replace(PHOTO, templates=("personality rights",)), RULES) is None
    assert SafetySettings().skip_templates == ("Personality rights",)
    assert templates_used("{{Information|description={{en|1=x}}}}\n{{Personality_rights}}") == (
        "information", "en", "personality rights")


@pytest.fixture(scope="module")
def thumbnails() -> Any:
    with ThumbnailClient(contact=CONTACT, backoff_s=0.01, timeout_s=10) as client:
        yield client


def test_fetch_stage_records_a_personality_rights_file_as_ineligible(wiki, site, queue, thumbnails) -> None:
    text = ("=={{int:filedesc}}==\n{{Information|description={{en|1=A portrait at a street market.}}"
            "|source={{own}}|author=[[User:Alice Uploader]]}}\n{{Personality rights}}\n")
    upload = wiki.add_upload("Safety portrait at a market.jpg", wikitext=text)
    plain = wiki.add_upload("Safety market stall.jpg")
    pipeline.poll_once(queue, UploadPoller(site, poll_settings()),
                       since=datetime.fromisoformat(upload.timestamp.replace("Z", "+00:00")))
    fetcher = Fetcher.from_settings(site, Settings(), thumbnails=thumbnails)
    assert fetcher.skip_templates == ("Personality rights",)
    assert fetcher.fetch([upload.pageid])[upload.pageid] == Ineligible("template opted out: {{Personality rights}}")
    counters = pipeline.fetch_pending(queue, fetcher, limit=100, worker="test")
    rows = file_rows(queue)
    assert (rows[upload.title]["state"], rows[upload.title]["reason"]) == (
        "ineligible", "template opted out: {{Personality rights}}")
    assert rows[plain.title]["state"] == "fetched"
    assert counters.ineligible["template opted out"] == 1
    # An operator who empties the list links the file.
    off = Fetcher(site, thumbnails=thumbnails, skip_templates=())
    assert not isinstance(off.fetch([upload.pageid])[upload.pageid], Ineligible)
