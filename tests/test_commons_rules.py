"""The pure parts of the Commons adapters: eligibility rules, wikitext, MediaInfo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commons_support import poll_settings
from wikivel_bot.commons import filters, mediainfo, wikitext
from wikivel_bot.commons.filters import (
    FileFacts,
    refuse_fetched,
    refuse_upload,
    unusable,
)
from wikivel_bot.types import Depiction

FIXTURES = Path(__file__).resolve().parent / "testwiki" / "fixtures" / "files"
PHOTO = FileFacts(mime="image/jpeg", mediatype="BITMAP", width=800, height=600, uploader="Alice Uploader",
                  categories=("Black cats", "CC-BY-SA-4.0"))


def facts(**changes) -> FileFacts:
    import dataclasses

    return dataclasses.replace(PHOTO, **changes)


@pytest.mark.parametrize("changes, settings, expected", [
    ({}, {}, None),
    ({"exists": False}, {}, "deleted: the file was deleted before it was polled"),
    ({"mime": "application/pdf"}, {}, "mime type: application/pdf"),
    ({"width": 199}, {}, "too small: 199x600 px (minimum 200x200)"),
    ({"height": 100}, {"min_height": 50}, None),
    ({"mime": "image/svg+xml", "width": 16, "height": 16}, {}, None),
    ({}, {"skip_uploaders": ("alice_Uploader",)}, "uploader opted out: Alice Uploader"),
    ({}, {"skip_uploaders": ("User:Alice Uploader",)}, "uploader opted out: Alice Uploader"),
    ({}, {"skip_categories": ("Category:Black_cats",)}, "category opted out: Black cats"),
    ({}, {"skip_categories": ("cC-BY-SA-4.0",)}, "category opted out: CC-BY-SA-4.0"),  # hidden ones too
    ({"depicts": 3}, {}, "already depicts: 3 statements (limit 3)"),
    ({"depicts": 2}, {}, None),
    ({"depicts": 9}, {"max_existing_depicts": 0}, None),  # 0 switches the rule off
    # Rules apply in order: the first one that refuses names the reason.
    ({"mime": "image/x-foo", "width": 1, "depicts": 5}, {}, "mime type: image/x-foo"),
])
def test_upload_rules(changes, settings, expected) -> None:
    assert refuse_upload(facts(**changes), poll_settings(**settings)) == expected


def test_rules_after_fetching() -> None:
    rules = poll_settings()
    assert refuse_fetched(PHOTO, rules) is None
    assert refuse_fetched(facts(protection_levels=("autoconfirmed",)), rules) is None
    assert refuse_fetched(facts(protection_levels=("sysop",)), rules) == "protected: edit protection (sysop)"
    assert refuse_fetched(facts(bots_allowed=False), rules).startswith("bots excluded: ")
    assert refuse_fetched(facts(depicts=4), rules).startswith("already depicts")
    assert unusable(facts(mediatype="VIDEO", mime="video/webm")) == "not an image: video/webm (video)"
    assert unusable(facts(width=50000, height=50000), max_pixels=10**8).startswith("decompression bomb: 50000x50000")
    assert unusable(facts(mime="image/svg+xml", mediatype="DRAWING", width=50000, height=50000), 10**8) is None
    assert filters.reason_kind("too small: 1x1 px") == "too small"


def test_descriptions_and_language_fallback() -> None:
    text = (FIXTURES / "Red_bridge_over_river.jpg.wiki").read_text(encoding="utf-8")
    assert wikitext.descriptions_by_language(text) == {
        "en": "A red steel bridge over a wide river.",
        "de": "Eine rote Stahlbrücke über einen breiten Fluss.",
    }
    assert wikitext.description(text, ["de", "en"]).startswith("Eine rote")
    assert wikitext.description(text, ["es"]) == "A red steel bridge over a wide river."
    markup = ("{{Artwork|Description={{LangSwitch|fr=Un ''chat''|nl=Een kat}} painted by "
              "[[w:Someone|Someone]]<ref>x</ref>}}")
    assert wikitext.descriptions_by_language(markup) == {"fr": "Un chat", "nl": "Een kat", "": "painted by Someone"}
    assert wikitext.description(markup, ["de"]) == "painted by Someone"  # untagged before other languages
    assert wikitext.description("{{Information|description=}}\nNo template here.", ["en"]) == ""
    assert wikitext.description("{{information|description={{en|Positional text}}}}", ["en"]) == "Positional text"


@pytest.mark.parametrize("text, allowed", [
    ("plain page", True),
    ("{{nobots}}", False),
    ("{{nobots|WikivelBot}}", False),
    ("{{nobots|OtherBot}}", True),
    ("{{nobots|all}}", False),
    ("{{bots}}", True),
    ("{{bots|allow=none}}", False),
    ("{{bots|allow=WikivelBot,OtherBot}}", True),
    ("{{bots|allow=all}}", True),
    ("{{bots|deny=WikivelBot}}", False),
    ("{{bots|deny=OtherBot}}", True),
    ("{{bots|deny=all}}", False),
    ("{{bots|denyscript=wikivel-bot}}", False),
    ("{{bots|allowscript=archivebot}}", False),
    ("{{Bots|deny=}}", True),  # invalid: ignored, like pywikibot does
    ("{{Information|description={{en|1=x}}}} {{NoBots}}", False),
])
def test_bot_exclusion(text: str, allowed: bool) -> None:
    assert wikitext.bots_allowed(text, "WikivelBot") is allowed


def test_bot_exclusion_without_a_user_name() -> None:
    assert wikitext.bots_allowed("{{bots|deny=WikivelBot}}", None)
    assert not wikitext.bots_allowed("{{bots|deny=all}}", None)


def test_mediainfo_depicts_and_captions() -> None:
    cows = json.loads((FIXTURES / "Cows_grazing.jpg.mediainfo.json").read_text(encoding="utf-8"))
    assert mediainfo.depicts_of(cows) == (Depiction("Q830"), Depiction("Q726", "deprecated"))
    assert mediainfo.depicts_count(cows) == 1
    bird = json.loads((FIXTURES / "Unknown_bird_species.jpg.mediainfo.json").read_text(encoding="utf-8"))
    assert mediainfo.depicts_of(bird) == () and mediainfo.depicts_count(bird) == 1
    cat = json.loads((FIXTURES / "Black_cat_on_sofa.jpg.mediainfo.json").read_text(encoding="utf-8"))
    assert mediainfo.captions(cat) == {"en": "Black cat on a sofa"}
    # Commons serialises empty maps as [] (PHP arrays); no slot at all parses to {}.
    assert mediainfo.depicts_of({"statements": [], "labels": []}) == ()
    assert mediainfo.parse_entity(None) == {} and mediainfo.parse_entity("not json") == {}
    twice = {"statements": {"P180": [
        {"mainsnak": {"snaktype": "value", "datavalue": {"value": {"numeric-id": 146}}}, "rank": "normal"},
        {"mainsnak": {"snaktype": "value", "datavalue": {"value": {"id": "Q146"}}}, "rank": "preferred"}]}}
    assert mediainfo.depicts_of(twice) == (Depiction("Q146", "preferred"),)
