"""Opening the site: named Commons sites, any API URL, the items repository, User-Agent."""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from tests.commons_support import BOT, CONTACT
from tests.commons_support import local_only, pywikibot_dir, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot.commons import site as site_module
from wikivel_bot.commons.site import NAMED_SITES, check_api, open_items, open_repo, open_site, repo_api_url
from wikivel_bot.config import SiteSettings
from wikivel_bot.errors import ConfigError, WikiError


def test_api_url_gives_a_data_site_with_mediainfo(site, wiki) -> None:
    assert type(site).__name__ == "DataSite"
    assert site.has_extension("WikibaseMediaInfo")
    assert site.username() == BOT
    assert (site.hostname(), site.scriptpath(), site.protocol()) == (f"127.0.0.1:{wiki.port}", "/w", "http")
    # The same URL gives the same site object (pywikibot caches sites).
    assert open_site(SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT), user=BOT) is site


def test_items_follow_the_site_or_the_wikidata_url(site, site_settings, wiki) -> None:
    assert open_repo(site_settings, site) == site
    settings = SiteSettings(api_url=wiki.api_url, wikidata_api_url=f"{wiki.server}/wikidata/w/api.php",
                            operator_contact=CONTACT)
    other = open_site(settings, user=BOT)
    repo = open_repo(settings, other)
    assert repo != other and repo.scriptpath() == "/wikidata/w"
    # pywikibot's own lookup agrees: items come from the Wikidata URL's site.
    assert other.get_repo_for_entity_type("item") == repo
    # The Wikidata client reads from the same repository, over plain HTTP.
    assert repo_api_url(repo) == f"{wiki.server}/wikidata/w/api.php"
    before = len(wiki.requests)
    assert open_items(settings, repo).one("Q146").label == "house cat"
    sent = wiki.requests[before:]
    assert [r.action for r in sent] == ["wbgetentities"] and CONTACT in sent[0].user_agent


def test_named_sites_and_bad_settings() -> None:
    assert NAMED_SITES["commons"] == ("commons", "commons")
    assert NAMED_SITES["commons:test"] == ("test", "commons")
    assert NAMED_SITES["commons:beta"] == ("beta", "commons")
    with pytest.raises(ConfigError, match="unknown site 'wikipedia:en'"):
        open_site(SiteSettings(name="wikipedia:en"))
    for url in ("commons.wikimedia.org/w/api.php", "ftp://host/w/api.php", "https://host/wiki/Main_Page"):
        with pytest.raises(ConfigError, match="not an API URL"):
            open_site(SiteSettings(api_url=url))


def test_a_wrong_url_fails_at_once(wiki, local_only) -> None:
    with pytest.raises(WikiError, match="did not answer like a MediaWiki API"):
        check_api(f"{wiki.server}/nowhere/api.php")
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(WikiError, match="cannot reach"):
        open_site(SiteSettings(api_url=f"http://127.0.0.1:{port}/w/api.php"))


def test_wikimedia_sites_require_a_contact() -> None:
    anonymous = SimpleNamespace(hostname=lambda: "commons.wikimedia.org", username=lambda: None)
    with pytest.raises(ConfigError, match="operator_contact"):
        site_module._require_contact(anonymous, SiteSettings())
    site_module._require_contact(anonymous, SiteSettings(operator_contact=CONTACT))
    named = SimpleNamespace(hostname=lambda: "commons.wikimedia.org", username=lambda: "SomeBot")
    site_module._require_contact(named, SiteSettings())
    local = SimpleNamespace(hostname=lambda: "127.0.0.1:8765", username=lambda: None)
    site_module._require_contact(local, SiteSettings())


def test_user_agent_names_tool_and_operator(site, wiki) -> None:
    from pywikibot.comms import http

    agent = http.user_agent(site)
    assert "wikivel-bot/" in agent and CONTACT in agent
    before = len(wiki.requests)
    site.simple_request(action="query", meta="siteinfo").submit()
    assert all(CONTACT in r.user_agent for r in wiki.requests[before:])


@pytest.fixture
def operator_family(wiki, tmp_path: Path) -> Iterator[str]:
    """An operator's own family for the test wiki, as a user-config.py would register it."""
    import pywikibot
    from pywikibot import config
    from pywikibot.family import Family

    name = "opwiki"
    source = (
        "from pywikibot import family\n\n"
        "class Family(family.SingleSiteFamily, family.DefaultWikibaseFamily):\n"
        f"    name = {name!r}\n    domain = '127.0.0.1:{wiki.port}'\n\n"
        "    def protocol(self, code):\n        return 'http'\n\n"
        "    def scriptpath(self, code):\n        return '/w'\n"
    )
    path = tmp_path / f"{name}_family.py"
    path.write_text(source, encoding="utf-8")
    config.family_files[name] = str(path)
    config.usernames[name][name] = "OperatorBot"
    yield name
    config.family_files.pop(name, None)
    config.usernames.pop(name, None)
    Family._families.pop(name, None)
    for key in [k for k in pywikibot._sites if f":{name}:" in k]:
        del pywikibot._sites[key]


def test_an_operators_family_for_the_url_is_used(wiki, site, operator_family: str) -> None:
    theirs = open_site(SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT))
    assert theirs.family.name == operator_family
    assert theirs.username() == "OperatorBot"  # their user-config's account applies


def test_check_api_refuses_a_wiki_without_mediainfo(monkeypatch: Any, wiki) -> None:
    import requests

    real_get = requests.get

    def without_mediainfo(url: str, **kwargs: Any) -> Any:
        response = real_get(url, **kwargs)
        data = response.json()
        data["query"]["extensions"] = [e for e in data["query"]["extensions"] if e["name"] != "WikibaseMediaInfo"]
        response.json = lambda: data  # type: ignore[method-assign]
        return response

    monkeypatch.setattr(requests, "get", without_mediainfo)
    with pytest.raises(WikiError, match="has no WikibaseMediaInfo"):
        check_api(wiki.api_url)
