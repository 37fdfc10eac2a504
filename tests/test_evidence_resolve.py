"""Commons' own evidence against the test wiki over real HTTP: references read by the
fetcher, resolved through Commons' pageprops and the Wikidata API, batched and cached."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from tests.commons_support import CONTACT, one
from tests.commons_support import local_only, pywikibot_dir, queue, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from tests.testwiki.fixture_evidence import EXPECTED, upload_evidence_files
from wikivel_bot.commons.evidence import EvidenceResolver, MemoryEvidenceCache
from wikivel_bot.commons.fetcher import Fetcher, fetch_media_by_ids
from wikivel_bot.config import Settings
from wikivel_bot.core.evidence import Evidence
from wikivel_bot.errors import WikiError
from wikivel_bot.queue.rows import media_from_json
from wikivel_bot.types import FileState, MediaFile, Upload
from wikivel_bot.wikidata import lookups
from wikivel_bot.wikidata.client import WikidataClient
from wikivel_bot.wikidata.retry import RetryPolicy

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
STARTER = Path(__file__).resolve().parents[1] / "wikivel_bot" / "labels" / "starter" / "items.arrow"


@pytest.fixture(scope="module")
def uploaded(wiki) -> Dict[str, int]:  # noqa: F811 - the fixture imported above
    """{file name: page id} of the evidence fixture files, uploaded once for this module."""
    return upload_evidence_files(wiki)


@pytest.fixture(scope="module")
def fetched(site, uploaded) -> Dict[str, MediaFile]:  # noqa: F811
    """{file name: MediaFile} as the fetcher reads them (references included)."""
    media = fetch_media_by_ids(site, list(uploaded.values()))
    by_id = {page_id: name for name, page_id in uploaded.items()}
    return {by_id[page_id]: m for page_id, m in media.items() if isinstance(m, MediaFile)}


def client_for(wiki, attempts: int = 2) -> WikidataClient:  # noqa: F811
    return WikidataClient(wiki.api_url, languages=("en",), contact=CONTACT,
                          policy=RetryPolicy(attempts=attempts, backoff_s=0, sleep=lambda s: None))


@pytest.fixture
def recorded(wiki) -> Iterator[List[Any]]:  # noqa: F811
    """The API requests the test wiki receives during the test."""
    wiki.recorder.clear()
    yield wiki.recorder.api_requests()


def api_requests(wiki, **params: str) -> List[Any]:  # noqa: F811
    return [r for r in wiki.recorder.api_requests()
            if all(r.params.get(k) == v for k, v in params.items())]


def triples(found) -> List[tuple]:
    return sorted((ev.kind, ev.source, ev.qid) for ev in found)


def test_the_fetcher_reads_links_items_and_identifiers_into_the_media_record(fetched):
    assert fetched["Eiffel_Tower_from_the_Champ_de_Mars.jpg"].references == (
        "link:enwiki:Eiffel Tower", "link:enwiki:Paris", "link:dewiki:Eiffelturm")
    assert fetched["Munttoren_tower.jpg"].references == ("id:P359:518452:Rijksmonument",)
    assert fetched["Street_scene_by_Bob.jpg"].references == ("item:Q995653",)
    # categories stay where they were, not repeated as references
    assert fetched["Street_scene_by_Bob.jpg"].categories == (
        "2024 Summer Olympics", "Bob Photographer", "Photographs by Barack Obama")
    # links in the author field name the photographer, not what the file shows
    assert not any("User" in ref for m in fetched.values() for ref in m.references)


def test_evidence_off_reads_no_references(site, uploaded):  # noqa: F811
    off = Fetcher.from_settings(site, Settings().replace("evidence", enabled=False))
    outcome = off.fetch([uploaded["Munttoren_tower.jpg"]])[uploaded["Munttoren_tower.jpg"]]
    assert isinstance(outcome, MediaFile) and outcome.references == ()
    on = Fetcher.from_settings(site, Settings())
    outcome = on.fetch([uploaded["Munttoren_tower.jpg"]])[uploaded["Munttoren_tower.jpg"]]
    assert outcome.references == ("id:P359:518452:Rijksmonument",)


def test_every_pattern_resolves_to_its_item_with_kind_and_source(wiki, site, fetched, recorded):  # noqa: F811
    resolver = EvidenceResolver(site, client_for(wiki))
    evidence, infos = resolver.resolve(list(fetched.values()))
    for name, media in fetched.items():
        assert triples(evidence[media.page_id]) == sorted(EXPECTED[name]), name
    # misleading categories resolve too (the photographer, an event, a location): telling
    # them apart is the image's job, not the resolver's. "Photographs by Barack Obama" names
    # Obama by P301 only, while his own P910 is another category: not followed.
    bob = evidence[fetched["Street_scene_by_Bob.jpg"].page_id]
    assert {ev.qid for ev in bob} == {"Q990003", "Q995653"}
    # ItemInfo for every evidence item, including those outside the starter label set
    named = {ev.qid for found in evidence.values() for ev in found}
    assert set(infos) == named
    assert infos["Q990006"].label == "Munttoren" and infos["Q990006"].instance_of == ("Q12518",)
    assert infos["Q990003"].instance_of == ("Q5",)
    outside = named - starter_qids()
    assert {"Q990003", "Q990006", "Q990007", "Q995653", "Q190804"} <= outside
    # every request the resolver sent is counted
    assert resolver.requests == len(wiki.recorder.api_requests()) > 0
    assert Evidence("category", "Category:Eiffel Tower", "Q243").describe() in {
        ev.describe() for ev in evidence[fetched["Eiffel_Tower_from_the_Champ_de_Mars.jpg"].page_id]}


def test_links_through_redirects_on_the_linked_wiki_find_their_item(wiki, recorded):  # noqa: F811
    client = client_for(wiki)
    # one title left over and one entity unclaimed: they belong together, no extra request
    assert lookups.sitelink_qids(client, "enwiki", ["Paris", "Tour Eiffel"]) == {"Paris": "Q90", "Tour Eiffel": "Q243"}
    assert len(api_requests(wiki, action="wbgetentities")) == 1
    wiki.recorder.clear()
    # two left over (one shares its item with the page it redirects to): each asked alone;
    # a page that names no item is answered "missing" and never asked again
    found = lookups.sitelink_qids(client, "enwiki", ["Tour Eiffel", "Night Watch (painting)", "Eiffel Tower",
                                                     "No such article"])
    assert found == {"Tour Eiffel": "Q243", "Night Watch (painting)": "Q219831", "Eiffel Tower": "Q243"}
    asked = [r.params["titles"] for r in api_requests(wiki, action="wbgetentities")]
    assert asked[1:] == ["Tour Eiffel", "Night Watch (painting)"] and len(asked) == 3


def test_statement_searches_ask_many_values_at_once_within_the_search_limits(wiki, recorded):  # noqa: F811
    client = client_for(wiki)
    names = [f"Nothing here {i}" for i in range(24)] + ["Westerkerk (Amsterdam)", "x" * 290]
    assert lookups.statement_search(client, "P373", names) == ["Q990007"]
    queries = [r.params["srsearch"] for r in api_requests(wiki, list="search")]
    # 10 values a query; the 290-character name cannot fit in any query and is skipped
    assert len(queries) == 3 and all(len(q) <= lookups.MAX_QUERY for q in queries)
    assert queries[0].startswith('haswbstatement:"P373=Nothing here 0|P373=Nothing here 1|')
    wiki.recorder.clear()
    # more hits than one answer holds: the query is asked again in halves, nothing lost
    classes = sorted({c["mainsnak"]["datavalue"]["value"]["id"]
                      for e in (wiki.entity(q) for q in wiki.store.entity_pages)
                      for c in (e or {}).get("claims", {}).get("P31", []) if "datavalue" in c["mainsnak"]
                      and c.get("rank") != "deprecated"})
    holders = {q for q in wiki.store.entity_pages if any(
        c.get("rank") != "deprecated" and c["mainsnak"].get("datavalue", {}).get("value", {}).get("id") in classes
        for c in (wiki.entity(q) or {}).get("claims", {}).get("P31", []))}
    assert len(holders) > lookups.LIMIT
    assert set(lookups.statement_search(client, "P31", classes)) == holders
    assert len(api_requests(wiki, list="search")) > -(-len(classes) // lookups.GROUP)


def test_an_identifier_two_items_hold_names_neither(wiki, site, fetched):  # noqa: F811
    westerkerk = fetched["Westerkerk_from_the_canal.jpg"]
    assert "id:P359:518453:Rijksmonument" in westerkerk.references
    evidence, _ = EvidenceResolver(site, client_for(wiki)).resolve([westerkerk])
    assert [ev.kind for ev in evidence[westerkerk.page_id]] == ["category"]


def linked_categories(wiki, count: int) -> Dict[str, str]:  # noqa: F811
    """{category name: item} of ``count`` categories linked through their topic's sitelink."""
    out: Dict[str, str] = {}
    for eid in sorted(wiki.store.entity_pages, key=lambda e: int(e[1:]) if e[1:].isdigit() else 0):
        data = wiki.entity(eid) or {}
        link = data.get("sitelinks", {}).get("commonswiki")
        p31 = [c["mainsnak"]["datavalue"]["value"]["id"] for c in data.get("claims", {}).get("P31", [])
               if "datavalue" in c["mainsnak"]]
        if data.get("type") == "item" and link and "Q4167836" not in p31:
            out[link["title"].split(":", 1)[1]] = eid
        if len(out) == count:
            return out
    raise AssertionError(f"only {len(out)} linked categories in the fixtures")


def test_120_categories_cost_three_pageprops_requests(wiki, site, recorded):  # noqa: F811
    categories = linked_categories(wiki, 120)
    names = list(categories)
    files = [MediaFile(page_id=900 + i, title=f"File:Batch {i}.jpg", categories=tuple(names[i * 10:i * 10 + 10]))
             for i in range(12)]
    resolver = EvidenceResolver(site, client_for(wiki))
    evidence, infos = resolver.resolve(files)
    pageprops = api_requests(wiki, prop="pageprops")
    assert len(pageprops) == 3
    assert sorted(len(r.params["titles"].split("|")) for r in pageprops) == [20, 50, 50]
    assert all(r.params["ppprop"] == "wikibase_item" for r in pageprops)
    for media in files:
        assert {(ev.source, ev.qid) for ev in evidence[media.page_id]} == {
            (f"Category:{name}", categories[name]) for name in media.categories}
    # the items' statements and texts are read 50 at a time too; no search was needed
    assert not api_requests(wiki, list="search")
    entity_batches = api_requests(wiki, action="wbgetentities")
    assert len(entity_batches) == 6 and all(len(r.params["ids"].split("|")) <= 50 for r in entity_batches)
    assert resolver.requests == 9 and set(infos) == set(categories.values())


def test_the_cache_answers_a_second_resolution_until_the_entries_expire(wiki, site, fetched):  # noqa: F811
    now = [T0]
    client = client_for(wiki)
    resolver = EvidenceResolver(site, client, MemoryEvidenceCache(), cache_days=30, clock=lambda: now[0])
    files = list(fetched.values())
    first, _ = resolver.resolve(files)
    wiki.recorder.clear()
    now[0] = T0 + timedelta(days=29)
    again, _ = resolver.resolve(files)
    assert again == first
    assert wiki.recorder.api_requests() == []  # the items' texts come from the client's cache too
    now[0] = T0 + timedelta(days=31)
    expired, _ = resolver.resolve(files)
    assert expired == first
    assert len(api_requests(wiki, prop="pageprops")) == 1
    assert api_requests(wiki, list="search")


def test_the_queue_database_keeps_answers_for_another_process(wiki, site, fetched, queue):  # noqa: F811
    files = list(fetched.values())
    first, _ = EvidenceResolver(site, client_for(wiki), queue, clock=lambda: T0).resolve(files)
    wiki.recorder.clear()
    # a new resolver with a new client (another worker): only the items' texts are read
    second, infos = EvidenceResolver(site, client_for(wiki), queue, clock=lambda: T0).resolve(files)
    assert second == first
    assert not api_requests(wiki, prop="pageprops") and not api_requests(wiki, list="search")
    (texts,) = api_requests(wiki, action="wbgetentities")
    assert "sites" not in texts.params and set(texts.params["ids"].split("|")) == set(infos)
    cached = queue.get_cached(["category:Dogs sleeping in baskets", "category:Rijksmuseum",
                               "id:P359:518452", "id:P359:518453", "link:enwiki:No such article here"], T0)
    assert cached == {"category:Dogs sleeping in baskets": None, "category:Rijksmuseum": "Q190804",
                      "id:P359:518452": "Q990006", "id:P359:518453": None,
                      "link:enwiki:No such article here": None}


def test_a_failed_look_up_caches_nothing(wiki, site, fetched):  # noqa: F811
    cache = MemoryEvidenceCache()
    wiki.faults.add("wbgetentities", "http500", times=2)
    try:
        with pytest.raises(WikiError, match="HTTP 500"):
            EvidenceResolver(site, client_for(wiki, attempts=1), cache, clock=lambda: T0).resolve(
                list(fetched.values()))
    finally:
        wiki.faults.clear()
    assert cache.rows == {}


def test_references_travel_with_the_media_record_through_the_queue(queue):  # noqa: F811
    queue.enqueue([Upload(page_id=7, title="File:X.jpg", timestamp=T0, uploader="A", log_id=1, sha1="a" * 40,
                          mime="image/jpeg", size=1, width=800, height=600)])
    (work,) = queue.claim_files(FileState.DISCOVERED, 1, "w")
    media = MediaFile(page_id=7, title="File:X.jpg", categories=("Eiffel Tower",),
                      references=("link:enwiki:Eiffel Tower", "id:P359:518452:Rijksmonument"))
    queue.mark_fetched(work.id, media)
    (claimed,) = queue.claim_files(FileState.FETCHED, 1, "w")
    assert claimed.media.references == media.references
    # a record written before references existed still loads
    assert media_from_json(7, "File:X.jpg", {"thumb_url": "u", "categories": ["A"]}).references == ()


def test_a_bad_identifier_row_stops_the_cli_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "wikivel.toml"
    config.write_text('[evidence]\nidentifier_templates = [{template = "Rijksmonument", property = "359"}]\n')
    result = subprocess.run([sys.executable, "-m", "wikivel_bot", "--config", str(config), "status"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 2
    line = one(result.stderr.strip().splitlines())
    assert line == (f"error: {config}: evidence.identifier_templates: row 1: '359' is not a Wikidata "
                    "property id (like P359)")


def starter_qids() -> set:
    import pyarrow.ipc as ipc

    table = ipc.open_file(str(STARTER)).read_all()
    return {f"Q{q}" for q in table.column("qid").to_pylist()}


def test_a_category_item_is_followed_only_to_a_topic_that_agrees(wiki, site):  # noqa: F811
    # Both pages are category items whose P301 is Obama (Q76); his P910 names only the first.
    resolver = EvidenceResolver(site, client_for(wiki))
    media = MediaFile(page_id=1, title="File:X.jpg", categories=("Barack Obama", "Photographs by Barack Obama"))
    evidence, _ = resolver.resolve([media])
    assert triples(evidence[1]) == [("category", "Category:Barack Obama", "Q76")]
