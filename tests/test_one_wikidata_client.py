"""One Wikidata client, one User-Agent, one Retry-After parser.

Guards on the source: only the wikidata room sends ``wbgetentities`` (the client, and the
look-ups built on its session) and only its ``api.py`` speaks HTTP there, only
``wikidata/agent.py`` spells a User-Agent, only ``wikidata/retry.py`` parses ``Retry-After``
(each with a check that the scanner itself sees a violation). Then the client's rules over real
HTTP, against the local test wiki or a small scripted server: maxlag sent and a maxlag answer
retried, 429/503 retried, ``Retry-After`` in seconds and as an HTTP date, the cap on every
wait, a bounded number of attempts ending in one line, batches of 50, a cache bounded in size
and time, redirects answered under the asked id, and one image rule for the linker's label set,
the writer's client and the review page. Sleeping is injected: no test waits for a retry.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import socket
import threading
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.source_scan import code_constants, package_modules
from tests.testwiki import TestWiki
from wikivel_bot.errors import WikiError
from wikivel_bot.labels.wikidata_api import build_from_api
from wikivel_bot.web.items import items_in
from wikivel_bot.wikidata.agent import WEB_TOOL, user_agent
from wikivel_bot.wikidata.cache import BoundedCache
from wikivel_bot.wikidata.client import WikidataClient
from wikivel_bot.wikidata.retry import RetryPolicy, retry_after_seconds

CONTACT = "https://commons.example/wiki/User:Wikivel_operator"


# -- the guards: scanning the source ----------------------------------------------------------

def _code_strings(source: str) -> Iterator[Tuple[str, int]]:
    """(string, line) of every string constant in code, f-string pieces included, docstrings not."""
    for node in code_constants(ast.parse(source)):
        if isinstance(node.value, str):
            yield node.value, node.lineno


def wbgetentities_senders(modules: Iterator[Tuple[str, str]]) -> List[str]:
    return sorted({name for name, source in modules
                   for text, _line in _code_strings(source) if text == "wbgetentities"})


# A tool's product token: our name, maybe a suffix, and a slash (``wikivel-bot/0.1``).
_PRODUCT = re.compile(r"wikivel-bot[\w-]*/")


def user_agent_builders(modules: Iterator[Tuple[str, str]]) -> List[str]:
    """Modules that spell a product token or read the HTTP library's version for one."""
    found = set()
    for name, source in modules:
        if any(_PRODUCT.search(text) for text, _line in _code_strings(source)):
            found.add(name)
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Attribute) and node.attr == "__version__"
                    and isinstance(node.value, ast.Name) and node.value.id in ("requests", "urllib3")):
                found.add(name)
    return sorted(found)


_DATE_PARSERS = {"parse_retry_after", "parsedate", "parsedate_tz", "parsedate_to_datetime", "mktime_tz"}


def retry_after_parsers(modules: Iterator[Tuple[str, str]]) -> List[str]:
    """Modules that parse a ``Retry-After`` themselves: they call an HTTP-date parser, or read
    the header other than straight into ``retry_after_seconds(...)``."""
    found = set()
    for name, source in modules:
        tree = ast.parse(source)
        parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, (ast.Attribute, ast.Name)) and (
                    getattr(called, "attr", None) in _DATE_PARSERS or getattr(called, "id", None) in _DATE_PARSERS):
                found.add(name)
            reads = (isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and a.value == "Retry-After"
                                                        for a in node.args)) or (
                isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and node.slice.value == "Retry-After")
            if reads:
                parent = parents.get(id(node))
                into = parent.func if isinstance(parent, ast.Call) else None
                if not (isinstance(into, ast.Name) and into.id == "retry_after_seconds"):
                    found.add(name)
    return sorted(found)


ROOM = "wikivel_bot/wikidata/"


def http_callers(modules: Iterator[Tuple[str, str]]) -> List[str]:
    """Modules that call ``requests`` themselves (``requests.get``, ``requests.Session()`` ...)."""
    return sorted({name for name, source in modules for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and isinstance(node.func.value, ast.Name) and node.func.value.id == "requests"})


def test_only_the_client_sends_wbgetentities() -> None:
    """``wbgetentities`` leaves the process only from the wikidata room: the client and the
    look-ups built on it (Commons' evidence), and inside the room only ``api.py`` speaks HTTP,
    so every one of them has the same User-Agent, maxlag, retries and cap."""
    senders = wbgetentities_senders(package_modules())
    assert f"{ROOM}client.py" in senders and all(name.startswith(ROOM) for name in senders), senders
    assert http_callers((n, s) for n, s in package_modules() if n.startswith(ROOM)) == [f"{ROOM}api.py"]


def test_only_one_module_builds_a_user_agent() -> None:
    assert user_agent_builders(package_modules()) == ["wikivel_bot/wikidata/agent.py"]


def test_only_one_module_parses_retry_after() -> None:
    assert retry_after_parsers(package_modules()) == ["wikivel_bot/wikidata/retry.py"]


def test_the_guards_see_a_second_copy() -> None:
    """The scanners must catch what they guard against (or the tests above prove nothing)."""
    sample = [
        ("a.py", '"""Uses wbgetentities (prose)."""\nparams = {"action": "wbgetentities"}\n'),
        ("b.py", 'def f():\n    """wbgetentities, wikivel-bot/1, Retry-After: prose."""\n'
                 '    return site.request(action="wbgetentities")\n'),
        ("c.py", '"""Only prose: wbgetentities."""\n'),
    ]
    assert wbgetentities_senders(iter(sample)) == ["a.py", "b.py"]
    assert http_callers(iter([("a.py", "s = requests.Session()\n"), ("b.py", "r = requests.get(url)\n"),
                              ("c.py", "r = self.http.get(url)\n")])) == ["a.py", "b.py"]
    agents = [("a.py", 'ua = f"wikivel-bot/{v} ({contact})"\n'), ("b.py", "v = requests.__version__\n"),
              ("c.py", 'TOOL = "wikivel-bot"\n'), ("d.py", 'h["User-Agent"] = user_agent(contact)\n')]
    assert user_agent_builders(iter(agents)) == ["a.py", "b.py"]
    parsers = [("a.py", 'wait = float(r.headers.get("Retry-After"))\n'),
               ("b.py", "from email.utils import parsedate_to_datetime\nwhen = parsedate_to_datetime(v)\n"),
               ("c.py", 'wait = retry_after_seconds(r.headers.get("Retry-After"), cap)\n'),
               ("d.py", 'answer.headers["Retry-After"] = "60"\n'),
               ("e.py", 'wait = int(r.headers["Retry-After"])\n')]
    assert retry_after_parsers(iter(parsers)) == ["a.py", "b.py", "e.py"]


# -- the User-Agent and the Retry-After parser ------------------------------------------------

def test_user_agent_follows_wikimedia_policy() -> None:
    agent = user_agent(CONTACT)
    assert re.fullmatch(r"wikivel-bot/[\w.+-]+ \(https://commons\.example/wiki/User:Wikivel_operator\) "
                        r"python-requests/[\w.+-]+", agent), agent
    assert user_agent("", tool=WEB_TOOL).startswith("wikivel-bot-web/")
    assert "(operator contact not configured)" in user_agent("")
    # A contact cannot end the comment early or add a line.
    assert user_agent("me (at) example\norg").count("(") == 1 and "\n" not in user_agent("a\nb")


def _http_date(delta_s: float) -> str:
    return format_datetime(datetime.now(timezone.utc) + timedelta(seconds=delta_s), usegmt=True)


def test_retry_after_in_both_forms_and_capped() -> None:
    assert retry_after_seconds("7") == 7.0 and retry_after_seconds(" 120 ", 60) == 60.0
    assert retry_after_seconds(_http_date(-3600)) == 0.0  # a date in the past: go now
    assert 100 <= retry_after_seconds(_http_date(120)) <= 120
    assert retry_after_seconds(_http_date(86_400), 60) == 60.0
    for garbled in (None, "", "soon", "-1", "1.5"):
        assert retry_after_seconds(garbled) is None


def test_the_policy_caps_every_wait() -> None:
    policy = RetryPolicy(attempts=5, backoff_s=1.0, max_wait_s=5.0)
    assert [policy.wait(n) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.wait(0, retry_after=3.0) == 3.0 and policy.wait(0, retry_after=600) == 5.0


def test_the_cache_is_bounded_in_size_and_time() -> None:
    now = [0.0]
    cache: BoundedCache[str] = BoundedCache(max_items=2, ttl_s=10.0, clock=lambda: now[0])
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.lookup("a") == (True, "A")  # a is now the most recently used
    cache.put("c", "C")
    assert len(cache) == 2 and cache.lookup("b") == (False, None)
    cache.put("none", None)  # type: ignore[arg-type]
    assert cache.lookup("none") == (True, None)  # "does not exist" is an answer too
    now[0] = 10.0
    assert cache.lookup("c") == (False, None) and len(cache) == 1


# -- the client over HTTP -------------------------------------------------------------------

class Sleeps:
    """The retry's sleep: records the waits asked for, never sleeps."""

    def __init__(self) -> None:
        self.calls: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture(scope="module")
def wiki() -> Iterator[TestWiki]:
    with TestWiki.start() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def client_for(url: str, sleeps: Sleeps, **kwargs: Any) -> WikidataClient:
    policy = RetryPolicy(attempts=kwargs.pop("attempts", 4), max_wait_s=kwargs.pop("max_wait_s", 60.0), sleep=sleeps)
    return WikidataClient(url, contact=CONTACT, policy=policy, **kwargs)


def test_maxlag_is_sent_and_a_lagged_answer_retried(wiki, sleeps) -> None:
    wiki.faults.add("wbgetentities", "maxlag", lag=7, retry_after=3)
    before = len(wiki.recorder.api_requests("wbgetentities"))
    assert client_for(wiki.api_url, sleeps).one("Q146").label == "house cat"
    sent = wiki.recorder.api_requests("wbgetentities")[before:]
    assert [r.error for r in sent] == ["maxlag", None]
    assert all(r.params["maxlag"] == "5" and CONTACT in r.user_agent for r in sent)
    assert sleeps.calls == [3.0]  # the answer's Retry-After, not the backoff


@pytest.mark.parametrize("status", ["http429", "http503"])
def test_busy_answers_are_retried_after_retry_after(wiki, sleeps, status: str) -> None:
    wiki.faults.add("wbgetentities", status, times=2, retry_after=2)
    assert client_for(wiki.api_url, sleeps).one("Q144").label == "dog"
    assert sleeps.calls == [2.0, 2.0]


def test_a_long_retry_after_is_capped(wiki, sleeps) -> None:
    wiki.faults.add("wbgetentities", "http429", times=1, retry_after=3600)
    assert client_for(wiki.api_url, sleeps, max_wait_s=60.0).one("Q5") is not None
    assert sleeps.calls == [60.0]


def test_attempts_are_bounded_and_end_in_one_line(wiki, sleeps) -> None:
    fault = wiki.faults.add("wbgetentities", "http500", times=None)
    try:
        with pytest.raises(WikiError) as failed:
            client_for(wiki.api_url, sleeps, attempts=3).get(["Q146"])
    finally:
        wiki.faults.remove(fault)
    assert fault.fired == 3 and sleeps.calls == [1.0, 2.0]  # backoff without a Retry-After
    message = str(failed.value)
    assert "\n" not in message and message.startswith(wiki.api_url) and "after 3 attempts: HTTP 500" in message


def test_an_unreachable_api_is_one_line_after_the_attempts(sleeps) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/w/api.php"
    with pytest.raises(WikiError, match=r"after 2 attempts: ConnectionError$"):
        client_for(url, sleeps, attempts=2).get(["Q146"])
    assert sleeps.calls == [1.0]


def test_items_and_thumbnails_in_batches_of_50_then_from_the_cache(wiki, sleeps) -> None:
    now = [0.0]
    client = client_for(wiki.api_url, sleeps, media_api_url=wiki.api_url, cache_size=200, cache_ttl_s=60.0,
                        clock=lambda: now[0])
    qids = [f"Q{n}" for n in range(1, 121)]
    before = len(wiki.recorder.api_requests("wbgetentities"))
    client.get(qids)
    assert [len(r.params["ids"].split("|")) for r in wiki.recorder.api_requests("wbgetentities")[before:]] \
        == [50, 50, 20]
    titles = [f"File:Photo {n}.jpg" for n in range(120)] + ["File:Black_cat_on_sofa.jpg"]
    before = len(wiki.recorder.api_requests("query"))
    thumbs = client.thumbnails(titles)
    asked = [r.params["titles"].count("|") + 1 for r in wiki.recorder.api_requests("query")[before:]]
    assert asked == [50, 50, 21]
    # Answered under the title as given, though the API spells it with spaces.
    assert list(thumbs) == ["File:Black_cat_on_sofa.jpg"] and thumbs["File:Black_cat_on_sofa.jpg"].startswith(
        wiki.server + "/thumb/")
    sent = client.requests
    client.get(qids)
    client.thumbnails(titles)
    assert client.requests == sent  # everything from the cache
    now[0] = 61.0  # past the expiry: asked again
    client.get(["Q146"])
    assert client.requests == sent + 1


# -- a scripted server: HTTP dates and redirects ----------------------------------------------

class Scripted:
    """Answers api.php with the queued (status, headers, body) replies, then with ``final``."""

    def __init__(self, final: Dict[str, Any]) -> None:
        self.replies: List[Tuple[int, Dict[str, str], Dict[str, Any]]] = []
        self.final = final
        self.seen: List[Dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.seen.append({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})
                status, headers, body = outer.replies.pop(0) if outer.replies else (200, {}, outer.final)
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/w/api.php"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _entity(qid: str, label: str, p18: List[Tuple[str, str]]) -> Dict[str, Any]:
    return {"type": "item", "id": qid, "labels": {"en": {"language": "en", "value": label}},
            "claims": {"P18": [{"mainsnak": {"snaktype": "value", "property": "P18",
                                             "datavalue": {"value": name, "type": "string"}},
                                "type": "statement", "rank": rank} for name, rank in p18]}}


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    # Q1 was merged into Q2: wbgetentities answers under the asked id with the target's entity.
    server = Scripted({"entities": {"Q1": _entity("Q2", "merged item", [])}, "success": 1})
    yield server
    server.close()


def test_retry_after_as_an_http_date_is_honoured_and_capped(scripted, sleeps) -> None:
    scripted.replies += [(503, {"Retry-After": _http_date(86_400)}, {}),
                         (429, {"Retry-After": _http_date(-60)}, {}),
                         (200, {"Retry-After": _http_date(86_400)}, {"error": {"code": "maxlag", "info": "lagged"}})]
    info = client_for(scripted.url, sleeps, max_wait_s=30.0).one("Q1")
    assert sleeps.calls == [30.0, 0.0, 30.0]
    assert len(scripted.seen) == 4 and all(q["maxlag"] == "5" for q in scripted.seen)
    assert info is not None and (info.qid, info.resolved, info.label) == ("Q1", "Q2", "merged item")


def test_an_api_error_is_not_retried(scripted, sleeps) -> None:
    scripted.replies.append((200, {}, {"error": {"code": "no-such-entity", "info": "Could not\nfind it"}}))
    with pytest.raises(WikiError, match=r"API error no-such-entity: Could not find it$"):
        client_for(scripted.url, sleeps).get(["Q1"])
    assert sleeps.calls == [] and len(scripted.seen) == 1


# -- one image rule: linker, writer and reviewer see the same picture --------------------------

# A deprecated preferred image, a normal one, then a preferred one: the preferred one wins, the
# first usable one (the old web rule) would have been Normal.jpg, and the deprecated one never.
IMAGES = [("Deprecated.jpg", "deprecated"), ("Normal.jpg", "normal"), ("Preferred.jpg", "preferred")]
NO_PREFERRED = [("Deprecated.jpg", "deprecated"), ("First normal.jpg", "normal"), ("Second.jpg", "normal")]


@pytest.fixture(scope="module")
def image_items(wiki) -> Tuple[str, str]:
    wiki.store.add_entity(_entity("Q90000001", "three pictures", IMAGES))
    wiki.store.add_entity(_entity("Q90000002", "two normal pictures", NO_PREFERRED))
    return "Q90000001", "Q90000002"


def test_one_image_rule_everywhere(wiki, image_items, sleeps) -> None:
    ranked, plain = image_items
    client = client_for(wiki.api_url, sleeps, media_api_url=wiki.api_url)
    assert client.one(ranked).image == "Preferred.jpg" and client.one(plain).image == "First normal.jpg"
    # The linker's side: the label set (built through the same client) keeps the same file.
    labels = build_from_api(None, [90000001, 90000002], api_url=wiki.api_url)
    assert {q: labels.texts_in([q], "en")[q].image for q in image_items} == {
        ranked: "Preferred.jpg", plain: "First normal.jpg"}
    # The reviewer's side: from the label set for kept items, from the client for the others.
    from_set = items_in(list(image_items), "en", labels, client)
    from_client = items_in(list(image_items), "en", None, client)
    assert {q: (from_set[q].image_title, from_client[q].image_title) for q in image_items} == {
        ranked: ("File:Preferred.jpg", "File:Preferred.jpg"), plain: ("File:First normal.jpg", "File:First normal.jpg")}


def test_the_review_page_falls_back_when_the_wiki_fails(wiki, image_items, sleeps, caplog) -> None:
    fault = wiki.faults.add("wbgetentities", "http503", times=None, retry_after=1)
    try:
        with caplog.at_level(logging.WARNING, logger="wikivel_bot.web.items"):
            shown = items_in([image_items[0]], "en", None, client_for(wiki.api_url, sleeps, attempts=2,
                                                                       media_api_url=wiki.api_url))
    finally:
        wiki.faults.remove(fault)
    assert shown == {} and sleeps.calls == [1.0]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "item look-up failed" in lines[0] and "HTTP 503" in lines[0] and "\n" not in lines[0]


def test_the_web_app_builds_the_client_with_its_own_user_agent(wiki) -> None:
    from wikivel_bot.config import Settings, SiteSettings
    from wikivel_bot.web.app import WEB_RETRY, create_app
    from wikivel_bot.web.secrets_file import WebSecrets

    settings = Settings(site=SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT))
    app = create_app(settings, store=None, secrets=WebSecrets(session_secret="s" * 40))  # type: ignore[arg-type]
    client: Optional[WikidataClient] = app.extensions["wikivel"].items
    assert client is not None and client.api_url == wiki.api_url and client.api.policy == WEB_RETRY
    agent = client.api.http.headers["User-Agent"]
    assert agent.startswith("wikivel-bot-web/") and CONTACT in agent
    assert app.extensions["wikivel"].user_agent == agent  # the OAuth client sends the same
