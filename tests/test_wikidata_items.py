"""Wikidata items through the one client, against the test wiki's wbgetentities: language
fallback, image, P31/P279, batches of 50, the bounded cache; extraction from dump JSON.

(Formerly ``test_commons_items.py``, when the items came through pywikibot.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commons_support import wiki  # noqa: F401 - pytest fixture
from wikivel_bot.wikidata.client import WikidataClient
from wikivel_bot.wikidata.entities import ItemInfo, item_info

ITEMS = Path(__file__).resolve().parent / "testwiki" / "fixtures" / "items.jsonl"


@pytest.fixture
def client(wiki):  # type: ignore[no-untyped-def]
    # The test wiki is its own Wikibase repository, as a custom wiki given by URL is.
    return WikidataClient(wiki.api_url, contact="User:Tester")


def all_qids() -> list:
    ids = [json.loads(line)["id"] for line in ITEMS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [i for i in ids if i.startswith("Q")]


def test_item_texts_image_and_classes(wiki) -> None:
    cat = WikidataClient(wiki.api_url, languages=("fr", "en")).one("Q146")
    assert cat == ItemInfo(
        qid="Q146", label="chat domestique", label_language="fr",
        description="domesticated feline", description_language="en",  # no French description
        aliases=("cat", "domestic cat", "Felis catus"),
        image="Black cat on sofa.jpg", instance_of=("Q55983715",),
        subclass_of=("Q39201", "Q57814795", "Q7377"), resolved="Q146",
    )


def test_deprecated_statements_are_skipped(client) -> None:
    pluto = client.one("Q339")
    assert pluto.instance_of == ("Q6999",)  # "planet" is deprecated since 2006


def test_batches_of_50_and_the_cache(wiki) -> None:
    qids = all_qids()[:120]
    client = WikidataClient(wiki.api_url, languages=("de",))
    before = len(wiki.recorder.api_requests("wbgetentities"))
    found = client.get(qids + ["Q999999999", "not-a-qid"])
    sent = wiki.recorder.api_requests("wbgetentities")[before:]
    assert [len(r.params["ids"].split("|")) for r in sent] == [50, 50, 21]
    # Only the languages the fallback can use, and maxlag on every request.
    assert {(r.params["languages"], r.params["maxlag"]) for r in sent} == {("de|mul|en", "5")}
    assert set(found) == set(qids)  # missing and malformed ids left out
    assert found["Q146"].label == "Hauskatze"
    assert client.get(qids[:10]) == {q: found[q] for q in qids[:10]}
    assert client.get(["Q999999999"]) == {}  # "missing" is remembered too
    assert client.requests == 3  # all from the cache


def test_texts_are_cached_per_language_chain(client) -> None:
    assert client.one("Q146", languages=("de",)).label == "Hauskatze"
    assert client.one("Q146", languages=("fr",)).label == "chat domestique"
    assert client.one("Q146").label == "house cat"
    assert client.requests == 3
    assert client.one("Q146", languages=("de",)).label == "Hauskatze"
    assert client.requests == 3


def test_least_recently_used_items_are_dropped(wiki) -> None:
    client = WikidataClient(wiki.api_url, cache_size=2)
    client.get(["Q146"])
    client.get(["Q144"])
    client.get(["Q146"])  # Q146 used again: Q144 is now the oldest
    client.get(["Q5"])
    assert client.requests == 3
    client.get(["Q146"])
    assert client.requests == 3
    client.get(["Q144"])
    assert client.requests == 4


def test_item_info_from_dump_json() -> None:
    entity = {"type": "item", "id": "Q1", "labels": {"mul": {"language": "mul", "value": "universe"}},
              "descriptions": [], "aliases": [], "claims": {"P18": [
                  {"mainsnak": {"snaktype": "value", "datavalue": {"value": "A.jpg"}}, "rank": "normal"},
                  {"mainsnak": {"snaktype": "value", "datavalue": {"value": "B.jpg"}}, "rank": "preferred"}],
                  "P31": [{"mainsnak": {"snaktype": "somevalue"}, "rank": "normal"}]}}
    info = item_info(entity, ("de",))
    assert (info.label, info.label_language, info.image, info.instance_of) == ("universe", "mul", "B.jpg", ())
    assert item_info({"type": "property", "id": "P31"}, ("en",)) is None
