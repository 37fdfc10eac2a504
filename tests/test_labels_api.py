"""``labels build --from-qids`` through the Wikidata API, against a local wbgetentities server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import CliRunner

from tests.fixtures.dumps import make_fixtures
from wikivel_bot.cli import main
from wikivel_bot.errors import WikiError
from wikivel_bot.labels import load_label_set
from wikivel_bot.labels.wikidata_api import build_from_api
from wikivel_bot.wikidata.client import WikidataClient

ENTITIES = {e["id"]: e for e in make_fixtures.wikidata_entities() if isinstance(e, dict)}


class FakeWikidata:
    """Answers wbgetentities from the fixture entities and records every request."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.fail_with: Dict[str, Any] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                outer.requests.append({"query": query, "user_agent": self.headers.get("User-Agent", "")})
                body = outer.fail_with or outer.answer(query)
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/w/api.php"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, query: Dict[str, str]) -> Dict[str, Any]:
        props = query["props"].split("|")
        entities: Dict[str, Any] = {}
        for qid in query["ids"].split("|"):
            entity = ENTITIES.get(qid)
            if entity is None:
                entities[qid] = {"id": qid, "missing": ""}
                continue
            entities[qid] = {k: v for k, v in entity.items() if k in ("type", "id") or k in props}
        return {"entities": entities, "success": 1}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def wikidata() -> Iterator[FakeWikidata]:
    fake = FakeWikidata()
    yield fake
    fake.close()


def test_listed_items_with_their_ancestors(wikidata: FakeWikidata, tmp_path: Path) -> None:
    labels = build_from_api(tmp_path / "set", [53662, 2981, 1], api_url=wikidata.url, contact="User:Example")
    assert labels.qids == ["Q2981", "Q53662"]  # Q1 does not exist on this wiki
    assert labels.status("Q1") == "dropped" and "not in the Wikidata dump" in labels.reason("Q1")
    assert labels.ancestors("Q53662") == {"Q144": 1, "Q39201": 2, "Q622852": 3}
    assert labels.label_of("Q622852") == "domesticated animal"  # third level: labels only
    assert "Q729" not in labels.ancestors("Q53662")
    first = wikidata.requests[0]
    assert first["query"]["action"] == "wbgetentities" and first["query"]["maxlag"] == "5"
    assert first["query"]["ids"] == "Q1|Q2981|Q53662"
    assert first["query"]["props"] == "labels|descriptions|claims" and first["query"]["languages"] == "en|mul"
    assert first["user_agent"].startswith("wikivel-bot/") and "User:Example" in first["user_agent"]
    # Levels: the items, parents, grandparents with texts and claims; above them labels and
    # claims only, up to the top of the graph (the safety rules' closure has no hop ceiling).
    props = [r["query"]["props"] for r in wikidata.requests]
    assert props[:3] == ["labels|descriptions|claims"] * 3 and set(props[3:]) == {"labels|claims"}
    assert labels.nearest_class("Q53662", frozenset({"Q729"})) == ("Q729", 4)
    assert load_label_set(tmp_path / "set").content_hash == labels.content_hash


def test_batches_of_fifty(wikidata: FakeWikidata) -> None:
    client = WikidataClient(wikidata.url)
    found = client.get_entities([f"Q{n}" for n in range(1000, 1120)] + ["Q146"], ["labels"], ["en"])
    assert list(found) == ["Q146"]
    assert [len(r["query"]["ids"].split("|")) for r in wikidata.requests] == [50, 50, 21]


def test_api_error_is_a_wiki_error(wikidata: FakeWikidata) -> None:
    wikidata.fail_with = {"error": {"code": "no-such-entity", "info": "Could not find an entity"}}
    with pytest.raises(WikiError, match="no-such-entity"):
        WikidataClient(wikidata.url).get_entities(["Q146"], ["labels"], ["en"])
    assert len(wikidata.requests) == 1  # an API error is an answer, not retried


def test_cli_from_qids_uses_the_configured_api(wikidata: FakeWikidata, tmp_path: Path) -> None:
    qids = tmp_path / "qids.txt"
    qids.write_text("Q146\nQ30249683\n")
    result = CliRunner().invoke(main, ["--wikidata-api-url", wikidata.url, "labels", "build", "--from-qids",
                                       str(qids), "--out", str(tmp_path / "set")])
    assert result.exit_code == 0, result.output
    labels = load_label_set(tmp_path / "set")
    assert labels.qids == ["Q146"]  # the scholarly article is not depictable
    assert "not depictable" in labels.reason("Q30249683")
    assert labels.manifest["sources"][0]["kind"] == "wikidata-api"
