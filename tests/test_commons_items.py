"""Wikidata items through wbgetentities: fallback, image, P31/P279, batches of 50, LRU cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commons_support import local_only, pywikibot_dir, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot.commons.items import ItemClient, ItemInfo, item_info
from wikivel_bot.commons.site import open_repo

ITEMS = Path(__file__).resolve().parent / "testwiki" / "fixtures" / "items.jsonl"


@pytest.fixture(scope="module")
def repo(site, site_settings):
    # The test wiki is its own Wikibase repository, as a custom wiki given by URL is.
    found = open_repo(site_settings, site)
    assert found == site
    return found


def all_qids() -> list:
    ids = [json.loads(line)["id"] for line in ITEMS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [i for i in ids if i.startswith("Q")]


def test_item_texts_image_and_classes(repo) -> None:
    cat = ItemClient(repo, languages=("fr", "en")).one("Q146")
    assert cat == ItemInfo(
        qid="Q146", label="chat domestique", label_language="fr",
        description="domesticated feline", description_language="en",  # no French description
        aliases=("cat", "domestic cat", "Felis catus"),
        image="Black cat on sofa.jpg", instance_of=("Q55983715",),
        subclass_of=("Q39201", "Q57814795", "Q7377"), resolved="Q146",
    )


def test_deprecated_statements_are_skipped(repo) -> None:
    pluto = ItemClient(repo).one("Q339")
    assert pluto.instance_of == ("Q6999",)  # "planet" is deprecated since 2006


def test_batches_of_50_and_the_cache(wiki, repo) -> None:
    qids = all_qids()[:120]
    client = ItemClient(repo, languages=("de",))
    before = len(wiki.recorder.api_requests("wbgetentities"))
    found = client.get(qids + ["Q999999999", "not-a-qid"])
    sent = wiki.recorder.api_requests("wbgetentities")[before:]
    assert [len(r.params["ids"].split("|")) for r in sent] == [50, 50, 21]
    assert set(found) == set(qids)  # missing and malformed ids left out
    assert found["Q146"].label == "Hauskatze"
    assert client.get(qids[:10]) == {q: found[q] for q in qids[:10]}
    assert client.requests == 3  # all from the cache


def test_least_recently_used_items_are_dropped(repo) -> None:
    client = ItemClient(repo, cache_size=2)
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
