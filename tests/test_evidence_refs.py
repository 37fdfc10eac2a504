"""Reading evidence references from description wikitext (commons/evidence_refs.py)."""

from __future__ import annotations

import pytest

from wikivel_bot.commons.evidence_refs import link_ref, references, site_of
from wikivel_bot.core.evidence import DEFAULT_IDENTIFIER_RULES, IdentifierRule

PAGE = """=={{int:filedesc}}==
{{Information
|description={{en|1=The [[w:Eiffel Tower]] from the [[:en:Champ de Mars|Champ]], near {{w|Trocadéro|the square|fr}},
[[d:q243]], [[wikidata:Q90]], [[:Category:Paris]], [[doi:10.1/x]], [[wikt:tower]], [[Local page]]}}
{{de|1=Der [[w:de:Eiffelturm]] und [[wikipedia:de:Paris#Geschichte]], {{W|Seine|lang=de}}}}
|author=[[w:en:Some Photographer]] ([[User:Bob|Bob]])
|source={{own}}
}}
{{Rijksmonument|518452}}
{{NRHP| 12345678 }}
{{Mérimée|}}
[[Category:Eiffel Tower]]
"""


def test_description_links_items_and_identifiers_in_page_order():
    assert references(PAGE) == (
        "link:enwiki:Eiffel Tower", "link:enwiki:Champ de Mars", "link:frwiki:Trocadéro",
        "item:Q243", "item:Q90", "link:dewiki:Eiffelturm", "link:dewiki:Paris", "link:dewiki:Seine",
        "id:P359:518452:Rijksmonument", "id:P649:12345678:NRHP")


def test_the_author_field_and_categories_give_no_reference():
    refs = references(PAGE)
    assert not any("Photographer" in r or "Bob" in r or "Category" in r for r in refs)


def test_a_page_without_a_description_template_uses_its_own_text():
    text = "A picture of a [[w:Mallard]] {{en|a [[:de:Stockente]]}} {{Other|[[w:Not me]]}}\n{{Rijksmonument|1}}"
    assert references(text) == ("link:enwiki:Mallard", "link:dewiki:Stockente", "id:P359:1:Rijksmonument")


def test_artwork_wikidata_names_the_work():
    text = "{{Artwork|artist={{Creator:Leonardo da Vinci}}|description={{en|Mona Lisa}}|wikidata=Q12418}}"
    assert references(text) == ("item:Q12418",)


def test_identifier_table_rows_from_settings_and_named_parameters():
    rules = DEFAULT_IDENTIFIER_RULES + (IdentifierRule("Kulturdenkmal", "id", "P1234"),)
    assert references("{{kulturdenkmal|foo|id=ABC 1}} {{Rijksmonument|2}}", rules) == (
        "id:P1234:ABC 1:Kulturdenkmal", "id:P359:2:Rijksmonument")
    assert references("{{Rijksmonument|2}}", ()) == ()


@pytest.mark.parametrize("target, ref", [
    ("w:Eiffel Tower", "link:enwiki:Eiffel Tower"),
    ("w:Pluto: the planet", "link:enwiki:Pluto: the planet"),
    (":nb:Oslo", "link:nowiki:Oslo"),
    ("be-tarask:Менск", "link:be_x_oldwiki:Менск"),
    ("zh-yue:香港", "link:zh_yuewiki:香港"),
    ("d:Property:P31", None),
    ("wikt:tower", None),
    ("Category:Paris", None),
    ("w:", None),
])
def test_link_targets(target, ref):
    assert link_ref(target) == ref


def test_only_wikipedia_languages_are_sites():
    assert site_of("en") == "enwiki" and site_of("simple") == "simplewiki"
    assert site_of("doi") is None and site_of("commons") is None
