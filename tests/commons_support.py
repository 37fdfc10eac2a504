"""Fixtures and helpers for the Commons-side tests (poller, fetcher, thumbnails, generators).

Import the fixtures you use into a test module (``from tests.commons_support import wiki,
site, ...``). Everything runs real pywikibot over real HTTP against the local test wiki in
``tests/testwiki`` (one server per test module), and ``local_only`` fails a test that opens
a connection to, or looks up, any host but 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

if "pywikibot" not in sys.modules:
    # pywikibot picks its directory when imported: keep its caches, cookies and throttle
    # file out of the checkout, and run without any user-config.py.
    os.environ.setdefault("PYWIKIBOT_DIR", tempfile.mkdtemp(prefix="pwb-commons-"))
    os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")

from sqlalchemy import select

from tests.testwiki import TestWiki
from wikivel_bot.config import PollSettings, SiteSettings
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import files

ROOT = Path(__file__).resolve().parents[1]
CONTACT = "https://commons.example/wiki/User:Wikivel_operator"
BOT = "WikivelBot"
LOCAL = ("127.0.0.1", "::1", "localhost")
# pywikibot settings that keep failures fast: few retries, no waiting between them.
FAST_PYWIKIBOT = {
    "max_retries": 2, "retry_wait": 0, "retry_max": 1, "socket_timeout": (3, 10),
    "put_throttle": 0, "minthrottle": 0, "maxthrottle": 1, "noisysleep": 3600.0,
}


@pytest.fixture(scope="module")
def local_only() -> Iterator[List[Any]]:
    """Record every connection and DNS lookup of this module; fail on any non-local one.

    Module-scoped and installed before the site is built, so connections pywikibot pools
    and reuses are covered from the start.
    """
    seen: List[Any] = []
    outside: List[Any] = []
    real_connect, real_gai, real_create = socket.socket.connect, socket.getaddrinfo, socket.create_connection

    def connect(sock: socket.socket, address: Any) -> Any:
        seen.append(address)
        if isinstance(address, tuple) and address[0] not in LOCAL:
            outside.append(address)
            raise AssertionError(f"connection to a non-local host: {address!r}")
        return real_connect(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(host)
        if host not in LOCAL:
            outside.append(host)
            raise AssertionError(f"DNS lookup of a non-local host: {host!r}")
        return real_gai(host, *args, **kwargs)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(address)
        if address[0] not in LOCAL:
            outside.append(address)
            raise AssertionError(f"connection to a non-local host: {address!r}")
        return real_create(address, *args, **kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(socket.socket, "connect", connect)
    patch.setattr(socket, "getaddrinfo", getaddrinfo)
    patch.setattr(socket, "create_connection", create_connection)
    yield seen
    patch.undo()
    assert not outside, f"tests talked to non-local hosts: {outside}"
    assert seen, "the guard saw no connection at all (is it installed?)"


@pytest.fixture(scope="module")
def wiki() -> Iterator[TestWiki]:
    """The local test wiki with the bundled fixtures (one per test module)."""
    with TestWiki.start() as server:
        yield server


@pytest.fixture(scope="session")
def pywikibot_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pywikibot with fast-failing retries, writing outside the checkout.

    Session-scoped: pywikibot expects its throttle file to stay where it first wrote it.
    """
    from pywikibot import config

    if Path(config.base_dir).resolve() == ROOT:
        # Imported before this module could set PYWIKIBOT_DIR, and without a user-config:
        # pywikibot would write into the checkout.
        config.base_dir = str(tmp_path_factory.mktemp("pywikibot"))
    directory = Path(config.base_dir)
    (directory / "throttle.ctrl").touch()  # pywikibot fails if it vanished after first use
    saved = {name: getattr(config, name) for name in FAST_PYWIKIBOT}
    for name, value in FAST_PYWIKIBOT.items():
        setattr(config, name, value)
    yield directory
    for name, value in saved.items():
        setattr(config, name, value)


@pytest.fixture(scope="module")
def site_settings(wiki: TestWiki) -> SiteSettings:
    return SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT, languages=("en",))


@pytest.fixture(scope="module")
def site(wiki: TestWiki, local_only: List[Any], pywikibot_dir: Path, site_settings: SiteSettings) -> Any:
    """The test wiki as wikivel-bot opens it (``--api-url``), with the bot's user name."""
    from wikivel_bot.commons.site import open_site

    return open_site(site_settings, user=BOT)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[Store]:
    """An empty, migrated queue on a temporary SQLite file."""
    engine = create_engine_for(f"sqlite:///{tmp_path / 'queue.sqlite'}")
    migrate.upgrade(engine)
    store = Store(engine)
    yield store
    store.close()


def file_rows(store: Store) -> Dict[str, Dict[str, Any]]:
    """{title: {page_id, state, reason, ...}} of every queued file."""
    with store.engine.connect() as conn:
        return {r.title: dict(r._mapping) for r in conn.execute(select(files))}


def poll_settings(**changes: Any) -> PollSettings:
    """Default poll settings with some keys changed."""
    import dataclasses

    return dataclasses.replace(PollSettings(), **changes)


def log_events(wiki: TestWiki, **params: Any) -> List[Dict[str, Any]]:
    """The upload log straight from the API (not through the code under test)."""
    import requests

    query = {"action": "query", "list": "logevents", "leaction": "upload/upload", "ledir": "newer",
             "lelimit": "max", "leprop": "ids|title|timestamp|user", "format": "json",
             "formatversion": "2", **params}
    return requests.get(wiki.api_url, params=query, timeout=10).json()["query"]["logevents"]


def media_requests(wiki: TestWiki) -> List[Any]:
    """Recorded requests for originals and thumbnails."""
    return [r for r in wiki.requests if r.path.startswith(("/thumb/", "/images/"))]


def thumb_url(wiki: TestWiki, title: str, width: int = 330) -> str:
    """The thumbnail URL the API gives for ``title`` at ``width``."""
    import requests

    data = requests.get(wiki.api_url, params={
        "action": "query", "titles": title, "prop": "imageinfo", "iiprop": "url",
        "iiurlwidth": width, "format": "json", "formatversion": "2"}, timeout=10).json()
    info = data["query"]["pages"][0]["imageinfo"][0]
    return info.get("thumburl") or info["url"]


def original_url(wiki: TestWiki, title: str) -> str:
    import requests

    data = requests.get(wiki.api_url, params={
        "action": "query", "titles": title, "prop": "imageinfo", "iiprop": "url",
        "format": "json", "formatversion": "2"}, timeout=10).json()
    return data["query"]["pages"][0]["imageinfo"][0]["url"]


def fixture_titles() -> List[str]:
    """Every fixture file as ``File:Title`` (upload order)."""
    from tests.testwiki.fixture_files import FILES

    return ["File:" + spec["name"].replace("_", " ") for spec in FILES]


def one(items: List[Any], message: Optional[str] = None) -> Any:
    assert len(items) == 1, message or items
    return items[0]
