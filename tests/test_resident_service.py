"""The resident suggestion service behind ``GET /api/suggest``: the same answer as
``suggest --json``, batching, a bounded line, a per-client limit, a cache per (file revision,
linker version), CORS for the wiki's own origins only.

Real parts throughout: the local test wiki over HTTP (real pywikibot), the tiny open_clip
model with random weights, a real SQLite queue, the service built by the CLI's own builder.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterator, List

import pytest

pytest.importorskip("torch")
pytest.importorskip("pywikibot")
pytest.importorskip("flask")

from click.testing import CliRunner  # noqa: E402

from tests.commons_support import CONTACT, local_only, pywikibot_dir, wiki  # noqa: E402,F401
from tests.linker_support import TINY_MODEL, tiny_settings, write_animals_artifact  # noqa: E402
from tests.web_support import SECRETS, FakeClock  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.cli.context import CliContext  # noqa: E402
from wikivel_bot.config import Settings, SiteSettings, WebSettings  # noqa: E402
from wikivel_bot.queue import migrate  # noqa: E402
from wikivel_bot.queue.engine import create_engine_for  # noqa: E402
from wikivel_bot.queue.store import Store  # noqa: E402
from wikivel_bot.types import Candidate, MediaFile, Upload  # noqa: E402
from wikivel_bot.web.app import create_app  # noqa: E402

APPLE = "File:Red apple.png"
DOG = "File:Dog in the park.jpg"
ELSEWHERE = "https://evil.example"


def _settings(wiki: Any, labels: Path, cache: Path, **web: Any) -> Settings:  # noqa: F811
    values = dict(suggest=True, suggest_window_ms=0.0)
    values.update(web)
    return Settings(site=SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT, languages=("en",)),
                    linker=tiny_settings(labels_dir=str(labels), cache_dir=str(cache), top_k=3),
                    web=WebSettings(**values))


@pytest.fixture(scope="module")
def world(wiki, local_only, pywikibot_dir, tmp_path_factory) -> Iterator[Any]:  # noqa: F811
    """The service as ``wikivel-bot web`` builds it, its store and settings (one per module)."""
    from wikivel_bot.cli.resident import build_suggester

    tmp = tmp_path_factory.mktemp("resident")
    labels = write_animals_artifact(tmp / "labels")
    settings = _settings(wiki, labels, tmp / "cache")
    engine = create_engine_for(f"sqlite:///{tmp / 'queue.db'}")
    migrate.upgrade(engine)
    store = Store(engine)
    obj = CliContext(_settings=settings)
    suggester = build_suggester(obj, store, announce=False)
    assert suggester is not None
    yield obj, store, suggester, labels
    suggester.close()
    store.close()


def _app(world: Any, clock: Any = None, **web: Any) -> Any:
    obj, store, suggester, _ = world
    settings = obj.settings
    if web:
        settings = settings.replace("web", **web)
    return create_app(settings, store, secrets=SECRETS, items=None, labels=obj.label_set(), suggester=suggester,
                      clock=clock)


def test_the_answer_is_suggest_json_for_that_file(world, wiki, tmp_path, monkeypatch):  # noqa: F811
    _, _, suggester, labels = world
    client = _app(world).test_client()
    answer = client.get("/api/suggest", query_string={"file": APPLE})
    assert answer.status_code == 200, answer.get_json()
    body = answer.get_json()
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(world[0].settings.linker.cache_dir))
    monkeypatch.setenv("WIKIVEL_SITE_OPERATOR_CONTACT", CONTACT)
    monkeypatch.setenv("WIKIVEL_LINKER_PRECISION", "fp32")
    args = ["--api-url", wiki.api_url, "suggest", APPLE, "--labels", str(labels), "--top", "3", "--json",
            "--model", TINY_MODEL, "--weights", "random", "--device", "cpu"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    # One function behind both: the file's entry (candidates, scores, why, withheld counts),
    # the linker that ranked, the label set and the safety block are the same.
    assert body["files"] == cli["files"]
    assert body["files"][0]["candidates"], "the tiny linker suggests something for every file"
    assert body["linker"]["version"] == cli["linker"]["version"] == suggester.version
    for key in ("label_set", "safety", "random_weights", "warnings"):
        assert body[key] == cli[key], key
    assert body["source"] == "linker" and body["mid"].startswith("M") and body["cached"] is False
    assert set(body["items"]) == {c["qid"] for c in body["files"][0]["candidates"]}
    # A fresh suggestion names no reviewer: cacheable, by its own rule.
    assert answer.headers["Cache-Control"] == "public, max-age=300"


def test_a_second_answer_for_the_same_revision_comes_from_the_cache(world):
    _, _, suggester, _ = world
    client = _app(world).test_client()
    first = client.get("/api/suggest", query_string={"file": DOG}).get_json()
    linked, reads = suggester.linked_files, suggester.full_reads
    again = client.get("/api/suggest", query_string={"file": DOG}).get_json()
    # Only the light revision check: no full read of the file, no model run.
    assert again["cached"] is True and (suggester.linked_files, suggester.full_reads) == (linked, reads)
    assert again["files"] == first["files"]
    # The M-id names the same file at the same revision: the same cached answer.
    by_id = client.get("/api/suggest", query_string={"file": first["mid"]}).get_json()
    assert by_id["cached"] is True and by_id["files"][0]["candidates"] == first["files"][0]["candidates"]


def test_an_edit_of_the_file_is_a_new_answer(world, wiki):  # noqa: F811
    """The cache is per file revision: after an edit the file is read and linked again."""
    _, _, suggester, _ = world
    client = _app(world).test_client()
    title = _two_more(wiki)[0]
    assert client.get("/api/suggest", query_string={"file": title}).get_json()["cached"] is False
    assert client.get("/api/suggest", query_string={"file": title}).get_json()["cached"] is True
    page = wiki.store.page(title)
    wiki.store.add_revision(page, {"main": ("wikitext", page.text + "\n[[Category:Apples]]")}, user="Alice Uploader",
                            comment="category")
    linked = suggester.linked_files
    after = client.get("/api/suggest", query_string={"file": title}).get_json()
    assert after["cached"] is False and suggester.linked_files == linked + 1


def test_a_file_that_cannot_be_read_is_one_json_error(world):
    client = _app(world).test_client()
    missing = client.get("/api/suggest", query_string={"file": "File:No such picture here.jpg"})
    assert missing.status_code == 404
    body = missing.get_json()
    assert set(body) == {"error", "file"} and "No such picture here.jpg" in body["error"]
    assert missing.headers["Cache-Control"] == "no-store"
    bad = client.get("/api/suggest", query_string={"file": "M12x"})
    assert bad.status_code in (400, 404) and "error" in bad.get_json()
    empty = client.get("/api/suggest")
    assert empty.status_code == 400 and "file=" in empty.get_json()["error"]


def test_concurrent_callers_are_linked_in_one_batch(world, wiki):  # noqa: F811
    """Four callers at once, a window far longer than any start-up: one model call. The
    batch is full at four, so it starts when the fourth arrives (the window is never waited
    out)."""
    obj, store, _, _ = world
    from wikivel_bot.cli.resident import build_suggester

    settings = obj.settings.replace("web", suggest_window_ms=1000.0 * 60, suggest_cache_files=0)
    settings = settings.replace("linker", batch_size=4)
    suggester = build_suggester(CliContext(_settings=settings), store, announce=False)
    titles = ["File:Red apple.png", "File:Dog in the park.jpg", *_two_more(wiki)]
    answers: List[Any] = [None] * 4
    try:
        def ask(i: int) -> None:
            answers[i] = suggester.suggest(titles[i])

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(a is not None and a.status == 200 for a in answers), [a and a.entry for a in answers]
        assert suggester.batches == 1 and suggester.linked_files == 4
    finally:
        suggester.close()


def _two_more(wiki: Any) -> List[str]:  # noqa: F811
    from tests.commons_support import fixture_titles

    others = [t for t in fixture_titles() if t not in (APPLE, DOG) and t.lower().endswith((".jpg", ".png"))]
    return others[:2]


def test_a_full_line_answers_503_with_retry_after(world):
    """The worker is held inside a wiki read; one request waits; the next is refused."""
    obj, store, _, _ = world
    from wikivel_bot.commons.sources import read_named
    from wikivel_bot.resident.service import ResidentSuggester

    entered, release = threading.Event(), threading.Event()

    def held_read(texts: List[str]) -> Any:
        entered.set()
        release.wait(120)
        return read_named(texts, obj.settings, obj.site())

    live = world[2]
    suggester = ResidentSuggester(live.linker, live.label_set, read=held_read, image=lambda t, m: b"",
                                  max_waiting=1)
    app = _app(world)
    app.extensions["wikivel"].suggester = suggester
    client = app.test_client()
    first = threading.Thread(target=lambda: suggester.suggest(APPLE))
    first.start()
    assert entered.wait(120)
    second = threading.Thread(target=lambda: suggester.suggest(DOG))
    second.start()
    while suggester._waiting.qsize() < 1:  # a condition, not a guess at timing
        threading.Event().wait(0.01)
    refused = client.get("/api/suggest", query_string={"file": APPLE})
    release.set()
    first.join()
    second.join()
    suggester.close()
    assert refused.status_code == 503
    assert int(refused.headers["Retry-After"]) >= 1 and "busy" in refused.get_json()["error"]


def test_one_client_is_held_to_its_limit(world):
    clock = FakeClock()
    client = _app(world, clock=clock, suggest_per_minute=2).test_client()
    for _ in range(2):
        assert client.get("/api/suggest", query_string={"file": APPLE}).status_code == 200
    over = client.get("/api/suggest", query_string={"file": APPLE})
    assert over.status_code == 429 and int(over.headers["Retry-After"]) >= 1
    # Another client (another address) is not held back by this one.
    other = client.get("/api/suggest", query_string={"file": APPLE}, environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other.status_code == 200
    clock.now += 61
    assert client.get("/api/suggest", query_string={"file": APPLE}).status_code == 200


def test_only_the_wikis_own_origins_get_cors(world, wiki):  # noqa: F811
    client = _app(world).test_client()
    own = wiki.api_url.split("/w/")[0]
    allowed = client.get("/api/suggest", query_string={"file": APPLE}, headers={"Origin": own})
    assert allowed.headers["Access-Control-Allow-Origin"] == own
    assert "Origin" in allowed.headers["Vary"]
    assert "Access-Control-Allow-Credentials" not in allowed.headers
    other = client.get("/api/suggest", query_string={"file": APPLE}, headers={"Origin": ELSEWHERE})
    assert "Access-Control-Allow-Origin" not in other.headers
    preflight = client.options("/api/decisions", headers={"Origin": ELSEWHERE, "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in preflight.headers
    # Commons' own origins by default, desktop and mobile; configurable.
    from wikivel_bot.web.app import wiki_origins

    assert wiki_origins(SiteSettings()) == {"https://commons.wikimedia.org", "https://commons.m.wikimedia.org"}
    assert wiki_origins(SiteSettings(), ("https://example.org",)) == {"https://example.org"}


def test_a_file_the_running_linker_queued_is_answered_from_the_queue(world):
    obj, store, suggester, _ = world
    client = _app(world).test_client()
    fresh = client.get("/api/suggest", query_string={"file": APPLE}).get_json()
    page_id = int(fresh["mid"][1:])
    store.enqueue([Upload(page_id=page_id, title=APPLE, timestamp=__import__("datetime").datetime(2024, 1, 1),
                          uploader="Alice", log_id=9000 + page_id, mime="image/png", width=800, height=600)])
    file_id = store.file_id_of(page_id)
    store.mark_fetched(file_id, MediaFile(page_id=page_id, title=APPLE, thumb_url="https://x.invalid/a.png", revid=1))
    first = fresh["files"][0]["candidates"][0]
    store.save_candidates(file_id, [Candidate(qid=first["qid"], score=first["score"], rank=1, linker="zero-shot",
                                              linker_version=suggester.version, labelset_hash="h" * 16,
                                              evidence={"label": first["label"]})])
    queued = client.get("/api/suggest", query_string={"file": APPLE})
    body = queued.get_json()
    assert body["source"] == "queue" and body["linker_version"] == suggester.version
    assert [c["item"] for c in body["file"]["candidates"]] == [first["qid"]]
    assert body["file"]["candidates"][0]["state"] == "proposed"
    # The queue view names reviewers: never stored by a cache.
    assert queued.headers["Cache-Control"] == "no-store"


def test_suggest_asks_a_running_service_first_and_falls_back_in_one_line(world, wiki, monkeypatch):  # noqa: F811
    """``suggest --server``: the service's answer, the same file JSON; a service that does not
    answer costs one line, and the command links in its own process."""
    from wikivel_bot.web.serve import make_server

    obj, _, _, labels = world
    server: Any = make_server(_app(world), "127.0.0.1", 0, 4)
    threading.Thread(target=server.run, daemon=True).start()
    url = f"http://127.0.0.1:{server.effective_port}"
    linker = obj.settings.linker
    for key, value in (("MODEL", TINY_MODEL), ("WEIGHTS", "random"), ("DEVICE", "cpu"), ("PRECISION", "fp32"),
                       ("LABELS_DIR", str(labels)), ("CACHE_DIR", linker.cache_dir), ("TOP_K", "3")):
        monkeypatch.setenv(f"WIKIVEL_LINKER_{key}", value)
    monkeypatch.setenv("WIKIVEL_SITE_OPERATOR_CONTACT", CONTACT)
    try:
        direct = _app(world).test_client().get("/api/suggest", query_string={"file": DOG}).get_json()
        asked = CliRunner().invoke(main, ["--api-url", wiki.api_url, "suggest", DOG, "--server", url, "--json"],
                                   catch_exceptions=False)
        assert asked.exit_code == 0, asked.output
        doc = json.loads(asked.stdout)
        assert doc["server"] == url and doc["files"] == direct["files"]
        assert doc["linker"]["version"] == direct["linker"]["version"]
    finally:
        server.close()
    fallback = CliRunner().invoke(main, ["--api-url", wiki.api_url, "suggest", DOG, "--server", url, "--json"],
                                  catch_exceptions=False)
    assert fallback.exit_code == 0, fallback.output
    lines = [line for line in fallback.stderr.splitlines() if "did not answer" in line]
    assert len(lines) == 1 and url in lines[0] and "linking here" in lines[0]
    assert json.loads(fallback.stdout)["files"] == direct["files"]


def test_a_reviewer_queues_a_fresh_suggestion_to_decide_on_it(world, wiki):  # noqa: F811
    """A file the bot had not queued: a reviewer who may decide queues its suggestions (as the
    daemon would), then decides through the one decision function; the page then reads the
    pair's state from the queue."""
    from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
    from tests.web_support import csrf_of, login

    wiki.oauth.register(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, "http://")
    client = _app(world, oauth_client_id=DEFAULT_CLIENT_ID).test_client()
    title = _two_more(wiki)[1]
    fresh = client.get("/api/suggest", query_string={"file": title}).get_json()
    assert fresh["source"] == "linker"
    assert client.post("/api/suggest/queue", json={"file": title}).status_code == 401
    assert login(client, "Alice Uploader").status_code == 302
    token = csrf_of(client)
    queued = client.post("/api/suggest/queue", json={"file": title}, headers={"X-CSRF-Token": token})
    assert queued.status_code == 200, queued.get_json()
    view = queued.get_json()["file"]
    wanted = [c["qid"] for c in fresh["files"][0]["candidates"]]
    assert [c["item"] for c in view["candidates"]] == wanted
    assert {c["state"] for c in view["candidates"]} == {"proposed"}
    decided = client.post("/api/decisions", json={"file": view["file"], "item": wanted[0], "action": "reject"},
                          headers={"X-CSRF-Token": token})
    assert decided.status_code == 200, decided.get_json()
    again = client.get("/api/suggest", query_string={"file": title}).get_json()
    assert again["source"] == "queue"
    assert {c["item"]: c["state"] for c in again["file"]["candidates"]}[wanted[0]] == "rejected"
    # Queuing again changes nothing: the file is the running linker's already.
    assert client.post("/api/suggest/queue", json={"file": title},
                       headers={"X-CSRF-Token": token}).get_json()["file"]["candidates"] == again["file"]["candidates"]
