"""Building the pywikibot site for Settings: Commons, test/beta Commons, or any URL.

``site.name`` picks one of pywikibot's Commons sites (``commons:commons``, ``commons:test``,
``commons:beta``); ``site.api_url`` instead points at any MediaWiki with WikibaseMediaInfo.
For a URL, an operator's own family (from their ``user-config.py``) is used when one
matches it, so their account name applies; otherwise a family is built from the URL, like
``pywikibot.family.AutoFamily`` but as a Wikibase family, so the site is a ``DataSite`` and
MediaInfo statements can be read and written. The Wikidata repository for items follows the
site (Commons → Wikidata, test → test Wikidata, a custom wiki → itself) unless
``site.wikidata_api_url`` names another one.

pywikibot is configured only here: the User-Agent gets the operator's contact (Wikimedia's
User-Agent policy), and nothing else of an operator's ``user-config.py`` is overridden. Its
log gets one filter (:class:`OneLineTracebacks`): a request without a usable answer (a read
timeout, a dropped connection) is one line on the operator's terminal, not pywikibot's
traceback; the writer says what it does next in a line of its own.
Works without any user-config.py (``PYWIKIBOT_NO_USER_CONFIG=2``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple
from urllib.parse import urlsplit

import pywikibot
import requests
from pywikibot import config as pwb_config
from pywikibot import family as pwb_family

from wikivel_bot.commons.api import translated_errors
from wikivel_bot.config import SiteSettings
from wikivel_bot.errors import ConfigError, WikiError, WikiUnreachable
from wikivel_bot.wikidata.agent import TOOL, tool_product, user_agent
from wikivel_bot.wikidata.client import WikidataClient

log = logging.getLogger(__name__)

# Settings name -> (pywikibot code, family).
NAMED_SITES: Dict[str, Tuple[str, str]] = {
    "commons": ("commons", "commons"),
    "commons:commons": ("commons", "commons"),
    "commons:test": ("test", "commons"),
    "commons:beta": ("beta", "commons"),
}
# Hosts whose User-Agent policy we must meet (a contact is required there).
# Families built from URLs by family_for_url in this process.
_BUILT: Set[str] = set()
WIKIMEDIA_SUFFIXES = (".wikimedia.org", ".wikipedia.org", ".wikidata.org", ".wmcloud.org")


def open_site(settings: SiteSettings, *, user: Optional[str] = None, check: bool = True) -> Any:
    """The pywikibot site for ``settings`` (a ``DataSite`` for every supported wiki).

    :param settings: ``Settings.site``: name, api_url, wikidata_api_url, operator_contact.
    :param user: account name; default: pywikibot's ``usernames`` for the site.
    :param check: for an ``api_url``, ask the wiki once whether it is a MediaWiki with
        WikibaseMediaInfo, so a wrong URL fails at once with a clear message instead of in
        pywikibot's long retry loop.
    :raises ConfigError: unknown site name, malformed URL, or a Wikimedia site without an
        operator contact. :raises WikiError: the URL does not answer like a MediaWiki API.
    """
    if settings.api_url:
        _check_url(settings.api_url, "site.api_url")
        if check:
            check_api(settings.api_url, settings.operator_contact)
        items_from = None
        if settings.wikidata_api_url:
            _check_url(settings.wikidata_api_url, "site.wikidata_api_url")
            repo_family, repo_code = family_for_url(settings.wikidata_api_url)
            items_from = (repo_code, repo_family.name)
        fam, code = family_for_url(settings.api_url, items_from=items_from)
        with translated_errors(settings.api_url, "opening the site"), connecting(settings.api_url):
            site = pywikibot.Site(code, fam, user=user)
    else:
        try:
            code, name = NAMED_SITES[settings.name]
        except KeyError:
            raise ConfigError(
                f"site.name: unknown site {settings.name!r} "
                f"(use commons, commons:test or commons:beta, or give --api-url)"
            ) from None
        with translated_errors(settings.name, "opening the site"), connecting(settings.name):
            site = pywikibot.Site(code, name, user=user)
    _require_contact(site, settings)
    quiet_request_tracebacks()
    # Last: pywikibot's config is process-wide, and a site that failed to open must not
    # change what the sites already open send.
    _configure_user_agent(settings.operator_contact)
    return site


class OneLineTracebacks(logging.Filter):
    """pywikibot logs the whole traceback of a request that got no usable answer (and then
    waits and resends, or, for the writer's one-shot requests, gives up): that traceback
    becomes its last line, a warning — what happened, without the call stack."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Traceback (most recent call last)"):
            last = message.strip().splitlines()[-1]
            record.msg = "no usable answer from the wiki: " + " ".join(last.split())[:300]
            record.args = ()
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_ONE_LINE = OneLineTracebacks()


def quiet_request_tracebacks() -> None:
    """Install :class:`OneLineTracebacks` on pywikibot's logger (once; process-wide, like
    pywikibot's own config)."""
    logger = logging.getLogger("pywiki")
    if _ONE_LINE not in logger.filters:
        logger.addFilter(_ONE_LINE)


def open_repo(settings: SiteSettings, site: Any) -> Any:
    """The Wikibase repository that holds the items (Q-ids) for ``site``.

    :param settings: ``Settings.site``; ``wikidata_api_url`` wins when set.
    :param site: from :func:`open_site`.
    """
    if settings.wikidata_api_url:
        _check_url(settings.wikidata_api_url, "site.wikidata_api_url")
        fam, code = family_for_url(settings.wikidata_api_url)
        with translated_errors(settings.wikidata_api_url, "opening the Wikidata repository"), \
                connecting(settings.wikidata_api_url, variable="WIKIVEL_SITE_WIKIDATA_API_URL"):
            return pywikibot.Site(code, fam, user=site.username(), interface="DataSite")
    with translated_errors(site, "finding the Wikidata repository"):
        if hasattr(site, "get_repo_for_entity_type"):
            return site.get_repo_for_entity_type("item")
        repo = site.data_repository()
    if repo is None:
        raise WikiError(f"{site} has no Wikibase repository; give --wikidata-api-url")
    return repo


def repo_api_url(repo: Any) -> str:
    """The api.php URL of a pywikibot site (the items repository from :func:`open_repo`)."""
    return str(repo.base_url(repo.apipath()))


def open_items(settings: SiteSettings, repo: Any) -> WikidataClient:
    """The Wikidata client for the items of ``repo`` (from :func:`open_repo`): the same
    repository pywikibot writes to, read over plain HTTP with the operator's User-Agent.

    :param settings: ``Settings.site``: languages and operator contact.
    """
    return WikidataClient(repo_api_url(repo), languages=settings.languages, contact=settings.operator_contact)


def family_for_url(api_url: str, items_from: Optional[Tuple[str, str]] = None) -> Tuple[Any, str]:
    """(family, code) of the wiki at ``api_url``, registered so ``Site(url=...)`` finds it.

    An operator's family that already matches the URL is returned as it is. Otherwise a
    single-site Wikibase family is built from the URL's scheme, host and script path.

    :param api_url: ``http(s)://host[:port]/path/api.php``.
    :param items_from: (code, family) of the repository for items; None = the wiki itself.
    """
    known = _registered_family(api_url)
    if known is not None and items_from is None:
        return known
    parts = urlsplit(api_url)
    script = parts.path[: -len("/api.php")] if parts.path.endswith("/api.php") else parts.path.rstrip("/")
    digest = hashlib.sha1(f"{api_url}|{items_from}".encode()).hexdigest()[:10]
    # Family names must be ASCII letters and digits; the hash keeps two URLs apart.
    name = f"wikivel{digest}"
    if name in pwb_family.Family._families:
        return pwb_family.Family._families[name], name
    scheme = parts.scheme

    def protocol(self: Any, code: str) -> str:
        return scheme

    def scriptpath(self: Any, code: str) -> str:
        return script

    def entity_sources(self: Any, code: str) -> Dict[str, Tuple[str, str]]:
        if items_from is None:
            return {}
        return {"item": items_from, "property": items_from}

    cls = type(
        "UrlFamily",
        (pwb_family.SingleSiteFamily, pwb_family.DefaultWikibaseFamily),
        {"name": name, "domain": parts.netloc, "protocol": protocol, "scriptpath": scriptpath,
         "entity_sources": entity_sources},
    )
    fam = cls()
    pwb_family.Family._families[name] = fam
    _BUILT.add(name)
    # Registered by URL too, so pywikibot.Site(url=...) (used by data_repository) finds it.
    pwb_config.family_files[name] = api_url
    return fam, name


def check_api(api_url: str, contact: str = "", timeout_s: float = 15.0) -> None:
    """Ask ``api_url`` for its site info; fail clearly unless it is a MediaWiki with MediaInfo.

    :raises WikiError: no answer, not JSON, not a MediaWiki API, or no WikibaseMediaInfo.
    """
    params = {"action": "query", "meta": "siteinfo", "siprop": "general|extensions",
              "format": "json", "formatversion": "2"}
    try:
        response = requests.get(api_url, params=params, timeout=timeout_s,
                                headers={"User-Agent": user_agent(contact)})
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise unreachable(api_url, exc) from None
    except requests.RequestException as exc:
        # The exception text repeats the URL and pool internals; its class says enough.
        raise WikiError(f"cannot reach {shown_url(api_url)} ({type(exc).__name__})") from None
    try:
        data = response.json()
    except ValueError:
        raise WikiError(
            f"{api_url} did not answer like a MediaWiki API (HTTP {response.status_code}, not JSON)"
        ) from None
    query = data.get("query") if isinstance(data, dict) else None
    if not isinstance(query, dict) or "general" not in query:
        raise WikiError(f"{api_url} did not answer like a MediaWiki API (no siteinfo)")
    names = {ext.get("name") for ext in query.get("extensions", ())}
    if "WikibaseMediaInfo" not in names:
        raise WikiError(
            f"{api_url} ({query['general'].get('sitename', '?')}) has no WikibaseMediaInfo: "
            "structured data (depicts) cannot be read or written there"
        )


# What to do when no wiki answers: the settings variable, or the README's offline recipe
# (a local test wiki), which is how this project runs on a machine without internet.
OFFLINE_RECIPE = 'README.md, "Try it offline"'


def shown_url(url: str) -> str:
    """``url`` as messages show it: scheme, host, port and path, never a user name,
    password or query string (a URL from the settings may carry credentials)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return url.split("?", 1)[0].rsplit("@", 1)[-1]
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    return f"{parts.scheme}://{host}{parts.path}"


def _nested(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every error inside it, outermost first: pywikibot wraps requests' error
    in a builtin ConnectionError, requests wraps urllib3's MaxRetryError, which holds the
    socket error as its ``reason``."""
    seen: Set[int] = set()
    queue: List[BaseException] = [exc]
    while queue:
        err = queue.pop(0)
        if id(err) in seen:
            continue
        seen.add(id(err))
        yield err
        queue.extend(arg for arg in err.args if isinstance(arg, BaseException))
        for attr in ("reason", "__cause__", "__context__"):
            inner = getattr(err, attr, None)
            if isinstance(inner, BaseException):
                queue.append(inner)


def connection_reason(exc: BaseException) -> str:
    """Why no connection was made, in a few words (requests' and urllib3's own text is a
    pool repr that says neither what failed nor what to do)."""
    for err in _nested(exc):
        name = type(err).__name__
        if name == "NameResolutionError" or isinstance(err, socket.gaierror):
            return "its name does not resolve: no DNS or no network"
        if isinstance(err, ConnectionRefusedError):
            return "connection refused: nothing listens there"
        if isinstance(err, TimeoutError) or "Timeout" in name:
            return "timed out"
    for err in _nested(exc):
        if type(err) is OSError and err.errno is not None:  # e.g. network unreachable
            return os.strerror(err.errno)
    return type(exc).__name__


def _failed_host(exc: BaseException, default: str) -> str:
    """The host a connection error was about (the request's URL, else urllib3's pool)."""
    for err in _nested(exc):
        url = getattr(getattr(err, "request", None), "url", None)
        if url:
            parts = urlsplit(str(url))
            if parts.hostname:
                return parts.hostname + (f":{parts.port}" if parts.port else "")
        pool = getattr(err, "pool", None)
        if pool is not None and getattr(pool, "host", None):
            port = getattr(pool, "port", None)
            return str(pool.host) + (f":{port}" if port and port not in (80, 443) else "")
    return default


def unreachable(target: str, exc: BaseException, *, variable: str = "WIKIVEL_SITE_API_URL") -> WikiUnreachable:
    """The one message for a wiki this machine cannot connect to: which host, why in a few
    words, and the two ways on (another wiki's URL in ``variable``, or the offline recipe).

    :param target: the API URL or site name that was being opened.
    """
    if "://" in target:
        what = f"cannot reach {shown_url(target)}"
    else:  # a site name (commons, commons:test): name it, then the host it stands for
        what = f"{target}: cannot reach {_failed_host(exc, target)}"
    return WikiUnreachable(
        f"{what} ({connection_reason(exc)}); set {variable} to the api.php URL "
        f"of a wiki this machine can reach, or run the offline recipe ({OFFLINE_RECIPE})"
    )


@contextmanager
def connecting(target: str, *, variable: str = "WIKIVEL_SITE_API_URL") -> Iterator[None]:
    """Turn a failed connection inside the block into :func:`unreachable`'s message; other
    errors pass on unchanged (to :func:`translated_errors`)."""
    try:
        yield
    # requests' own errors, and the builtin ConnectionError pywikibot raises for a name
    # that does not resolve (at once, without its retries).
    except (requests.ConnectionError, requests.Timeout, ConnectionError) as exc:
        raise unreachable(target, exc, variable=variable) from None


def _check_url(url: str, key: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or not parts.path.endswith("api.php"):
        raise ConfigError(f"{key}: {url!r} is not an API URL (like https://host/w/api.php)")


def _registered_family(api_url: str) -> Optional[Tuple[Any, str]]:
    """(family, code) of the first configured family whose site is at ``api_url``, or None.

    Compared on scheme, host and script path without creating sites: ``Family.from_url``
    would instantiate (and so contact) every candidate site.
    """
    parts = urlsplit(api_url)
    script = parts.path[: -len("/api.php")]
    for name in _operator_families_first(list(pwb_config.family_files)):
        if name in _BUILT:
            continue  # an operator's family wins over one we built earlier in this process
        try:
            fam = pwb_family.Family.load(name)
            codes = list(fam.langs)
        except Exception:
            continue
        for code in codes:
            try:
                if (fam.hostname(code) == parts.netloc and fam.protocol(code) == parts.scheme
                        and fam.scriptpath(code) == script):
                    return fam, code
            except Exception:
                continue
    return None


def _operator_families_first(names: List[str]) -> List[str]:
    """The operator's own families (files outside pywikibot's ``families/``) before
    pywikibot's. pywikibot imports a family file by module name after appending its folder
    to ``sys.path``: once one of its own families was loaded, an operator's
    ``commons_family.py`` would be shadowed by pywikibot's module of the same name."""
    import pywikibot.families

    own = os.path.dirname(os.path.abspath(pywikibot.families.__file__))

    def builtin(name: str) -> bool:
        path = str(pwb_config.family_files.get(name, ""))
        return os.path.dirname(os.path.abspath(path)) == own if path.endswith(".py") else True

    return sorted(names, key=builtin)


def _configure_user_agent(contact: str) -> None:
    """Name wikivel-bot and the operator in pywikibot's User-Agent (``script_comments``)."""
    # pywikibot builds the header itself (its own format); we give it the tool and contact.
    ours = tool_product()
    if contact:
        ours += f"; {contact}"
    current = pwb_config.user_agent_description or ""
    if current.startswith(f"{TOOL}/"):
        current = ""  # ours from an earlier call in this process
    pwb_config.user_agent_description = f"{ours}; {current}" if current else ours


def _require_contact(site: Any, settings: SiteSettings) -> None:
    """Wikimedia blocks anonymous tools: demand a contact (or an account named in the UA)."""
    host = site.hostname()
    if not host.endswith(WIKIMEDIA_SUFFIXES):
        return
    if settings.operator_contact or site.username():
        return
    raise ConfigError(
        "site.operator_contact is empty: Wikimedia requires a User-Agent with a way to reach "
        "the operator (set site.operator_contact to your user page or e-mail, or a pywikibot "
        "username in user-config.py)"
    )
