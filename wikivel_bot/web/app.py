"""``create_app``: the Flask app on one queue and one Settings.

The CLI (``wikivel-bot web``) builds the store and calls this; tests call it with a store
of their own and drive it with Flask's test client or a real browser over waitress.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Callable, FrozenSet, Optional, Tuple, Union
from urllib.parse import urlsplit

from flask import Flask

from wikivel_bot.config import Settings, SiteSettings
from wikivel_bot.core.review_rules import SITE_BASES
from wikivel_bot.core.safety import item_check, rules_from
from wikivel_bot.queue.store import Store
from wikivel_bot.web import api, api_errors, gadget, oauth, pages, security, sessions, suggest
from wikivel_bot.web.context import Reverter, Suggester, WebContext
from wikivel_bot.web.secrets_file import WebSecrets, load_secrets
from wikivel_bot.wikidata.agent import WEB_TOOL, user_agent as build_user_agent
from wikivel_bot.wikidata.client import WIKIDATA_API, WikidataClient
from wikivel_bot.wikidata.retry import RetryPolicy

if TYPE_CHECKING:
    from wikivel_bot.labels.labelset import LabelSet

log = logging.getLogger(__name__)
HERE = Path(__file__).parent
# Media of Wikimedia wikis (file thumbnails and item images).
WIKIMEDIA_MEDIA = "https://upload.wikimedia.org"
# A reviewer waits for the page: two tries and short waits, then the page falls back to the
# linker's labels (the daemon's client, which nobody waits for, keeps the longer defaults).
WEB_RETRY = RetryPolicy(attempts=2, backoff_s=0.5, max_wait_s=2.0)


def oauth_base(site: SiteSettings, configured: str = "") -> str:
    """The ``…/w/rest.php`` the OAuth 2.0 endpoints hang under: ``web.oauth_url``, else the
    configured wiki's (its api.php's sibling), else the named Wikimedia site's."""
    if configured:
        return configured.rstrip("/")
    if site.api_url:
        return site.api_url.rsplit("/", 1)[0] + "/rest.php"
    base = SITE_BASES.get(site.name.strip().lower(), SITE_BASES["commons"])
    return base.replace("/wiki/", "/w/rest.php")


# Wikimedia's mobile sites are the desktop host with ".m" after its first label.
MOBILE_DOMAINS = ("wikimedia.org", "wikipedia.org", "wikidata.org", "wiktionary.org", "wikisource.org")


def wiki_origins(site: SiteSettings, configured: Tuple[str, ...] = ()) -> FrozenSet[str]:
    """The pages that may call the API from a browser (CORS): ``web.suggest_origins``, else
    the wiki the bot edits, desktop and mobile (``https://commons.wikimedia.org`` and
    ``https://commons.m.wikimedia.org`` for Commons; the test wiki's own in tests)."""
    if configured:
        return frozenset(o.rstrip("/") for o in configured)
    base = site.api_url or SITE_BASES.get(site.name.strip().lower(), SITE_BASES["commons"])
    origin = security.origin_of(base)
    found = {origin} if origin else set()
    parts = urlsplit(base)
    first, _, rest = (parts.hostname or "").partition(".")
    if rest in MOBILE_DOMAINS and parts.port is None:
        found.add(f"{parts.scheme}://{first}.m.{rest}")
    return frozenset(found)


def create_app(
    settings: Settings,
    store: Store,
    *,
    secrets: Optional[WebSecrets] = None,
    items: Union[WikidataClient, None, bool] = True,
    reverter: Optional[Reverter] = None,
    clock: Optional[Callable[[], float]] = None,
    labels: Optional["LabelSet"] = None,
    suggester: Optional[Suggester] = None,
) -> Flask:
    """The web app.

    :param settings: ``[web]`` and ``[site]`` are read; the store is already built from ``[db]``.
    :param secrets: default: read from ``web.secrets_file``.
    :param items: a Wikidata client, True to build one from ``[site]``, or None/False for none
        (the page then shows the linker's labels).
    :param reverter: reverts a batch for an operator; None: the batch page offers no revert.
    :param clock: the clock of the rate limiter, the login lifetime and the profile
        re-check, in seconds since the epoch (tests move it by hand); default: the real one.
    :param labels: the label set: the items it keeps are shown with its texts in the
        reviewer's language (``labels.languages``); None: every item from ``items``.
    :param suggester: the resident suggestion service (``resident.service.ResidentSuggester``,
        built by the CLI when ``web.suggest`` is on) behind ``GET /api/suggest``; None: off.
    """
    secrets = secrets if secrets is not None else load_secrets(settings.web.secrets_file)
    if secrets.ephemeral:
        log.warning("web: no session_secret in web.secrets_file; logins end when this process does")
    site = settings.site
    user_agent = build_user_agent(site.operator_contact, tool=WEB_TOOL)
    if items is True:
        media_api = site.api_url or SITE_BASES.get(site.name, SITE_BASES["commons"]).replace("/wiki/", "/w/api.php")
        items = WikidataClient(site.wikidata_api_url or site.api_url or WIKIDATA_API, media_api_url=media_api,
                               user_agent=user_agent, policy=WEB_RETRY, timeout_s=10.0)
    app = Flask(__name__, template_folder=str(HERE / "templates"), static_folder=str(HERE / "static"))
    app.config.update(
        SECRET_KEY=secrets.session_secret,
        SESSION_COOKIE_NAME="wikivel_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.web.public_url.startswith("https://"),
        # The cookie lives as long as the login may (web.session_hours), and is not
        # renewed by use: the server ends the login at that time anyway (web.sessions).
        PERMANENT_SESSION_LIFETIME=timedelta(hours=settings.web.session_hours),
        SESSION_REFRESH_EACH_REQUEST=False,
        MAX_CONTENT_LENGTH=64 * 1024,
        JSON_SORT_KEYS=False,
    )
    limiter = security.RateLimiter(settings.web.decisions_per_minute, *(() if clock is None else (clock,)))
    app.extensions["wikivel"] = WebContext(
        store=store, settings=settings, secrets=secrets, limiter=limiter, items=items or None,
        labels=labels, reverter=reverter, oauth_base=oauth_base(site, settings.web.oauth_url), user_agent=user_agent,
        # Checked against the label set only: the writer, which reads Wikidata, refuses the rest.
        safety=item_check(rules_from(settings.safety), labels),
        clock=clock or time.time, suggester=suggester,
        suggest_limiter=security.RateLimiter(settings.web.suggest_per_minute,
                                             *(() if clock is None else (clock,))),
    )
    origins = {security.origin_of(u) for u in (site.api_url, site.wikidata_api_url)} | {WIKIMEDIA_MEDIA}
    # Order matters: who is logged in (sessions), then the CSRF check that asks it, then
    # the JSON body check.
    app.before_request(sessions.load)
    wiki = wiki_origins(site, settings.web.suggest_origins)
    app.config["WIKIVEL_WIKI_ORIGINS"] = wiki
    security.install(app, {o for o in origins if o}, wiki)
    api_errors.install(app)
    app.register_blueprint(pages.bp)
    app.register_blueprint(oauth.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(suggest.bp)
    app.register_blueprint(gadget.bp)
    return app
