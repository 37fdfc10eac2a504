"""The web review under test: a queue, the local test wiki (with its OAuth 2.0 provider) and
the Flask app on both, plus logging in through the real OAuth dance over HTTP.

``login`` drives the whole authorization-code flow: the app's ``/login`` redirect, the
wiki's consent page (submitted for a chosen fixture user), the callback, where the app
exchanges the code for a token and reads the profile from the wiki over real HTTP.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.db_support import queue_url
from tests.review_support import add_file
from tests.testwiki import TestWiki
from tests.testwiki.model import User
from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from wikivel_bot.config import Settings, SiteSettings, WebSettings
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.web.app import create_app
from wikivel_bot.web.secrets_file import WebSecrets

SECRETS = WebSecrets(oauth_client_secret=DEFAULT_CLIENT_SECRET, session_secret="s" * 40)

# Users added to the fixture wiki for the web tests (the fixture's own are autoconfirmed).
NEWBIE = "Nora Newcomer"      # no autoconfirmed: may look, not decide
BLOCKED = "Boris Blocked"     # autoconfirmed but blocked
OPERATOR = "Olga Operator"    # in web.operators


class FakeClock:
    """The rate limiter's clock, moved by the test (no sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def add_web_users(wiki: TestWiki) -> None:
    wiki.store.add_user(User(name=NEWBIE, userid=201, groups=[]))
    wiki.store.add_user(User(name=BLOCKED, userid=202, groups=["autoconfirmed"], blocked=True))
    wiki.store.add_user(User(name=OPERATOR, userid=203, groups=["autoconfirmed"]))


def web_settings(wiki: TestWiki, **web: Any) -> Settings:
    base = dict(oauth_client_id=DEFAULT_CLIENT_ID, operators=(OPERATOR,))
    base.update(web)
    return Settings(site=SiteSettings(api_url=wiki.api_url, languages=("en", "de")), web=WebSettings(**base))


@pytest.fixture(scope="module")
def webwiki() -> Iterator[TestWiki]:
    """One test wiki for a module, with the web users and a consumer for Flask's test host."""
    with TestWiki.start() as wiki:
        add_web_users(wiki)
        wiki.oauth.register(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, "http://")
        yield wiki


# The web's queries and decisions on every kind of database it is deployed on (SQLite;
# ToolsDB is MariaDB; a VPS may use PostgreSQL): locking and SQL differ between them.
WEB_BACKENDS = ("sqlite-file", "postgresql", "mysql")


@pytest.fixture(params=WEB_BACKENDS)
def web_queue(request: pytest.FixtureRequest, tmp_path: Path, _scratch_databases: Any) -> Iterator[Store]:
    engine = create_engine_for(queue_url(request.param, tmp_path, _scratch_databases))
    migrate.upgrade(engine)
    store = Store(engine)
    yield store
    store.close()


def make_app(wiki: TestWiki, store: Store, clock: Optional[FakeClock] = None, items: Any = True,
             labels: Any = None, **web: Any) -> Any:
    app = create_app(web_settings(wiki, **web), store, secrets=SECRETS, items=items, clock=clock, labels=labels)
    app.testing = True
    return app


def consent(authorize_url: str, username: str, decision: str = "allow") -> str:
    """Submit the wiki's consent page as ``username``; return where the wiki redirects."""
    page = requests.get(authorize_url, timeout=10)
    assert page.status_code == 200, page.text
    assert 'name="username"' in page.text
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text))
    import html

    fields = {k: html.unescape(v) for k, v in fields.items()}
    parts = urlsplit(authorize_url)
    answer = requests.post(f"{parts.scheme}://{parts.netloc}/w/rest.php/oauth2/authorize",
                           data={**fields, "username": username, "decision": decision},
                           allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    return answer.headers["Location"]


def login(client: Any, username: str, next_path: str = "/") -> Any:
    """Log ``client`` (Flask's test client) in as ``username`` through the wiki's OAuth."""
    start = client.get("/login?next=" + next_path)
    assert start.status_code == 302, start.data
    callback = consent(start.headers["Location"], username)
    parts = urlsplit(callback)
    assert parts.path == "/oauth/callback"
    return client.get(parts.path + "?" + parts.query)


def csrf_of(client: Any) -> str:
    page = client.get("/")
    found = re.search(r'<meta name="csrf-token" content="([^"]+)">', page.get_data(as_text=True))
    assert found, "no CSRF token on the page"
    return found.group(1)


def post_decision(client: Any, token: Optional[str], file: str, item: str, action: str) -> Any:
    headers = {"X-CSRF-Token": token} if token is not None else {}
    return client.post("/api/decisions", json={"file": file, "item": item, "action": action}, headers=headers)


def seed(store: Store, page_ids: Sequence[int] = (10001, 10002, 10003)) -> List[int]:
    from tests.review_support import CAT, DOG, HUMAN

    return [add_file(store, p, [CAT, DOG, HUMAN], title=f"File:Example {p}.jpg", day=i)
            for i, p in enumerate(page_ids)]


def query_of(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
