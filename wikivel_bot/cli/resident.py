"""The resident suggestion service of ``wikivel-bot web`` (and ``cli/wsgi.py``), built here
because the CLI alone builds the linker, the site and the queue's helpers.

The linker comes from the one factory through ``CliContext.ready_linker`` (the daemon's
builder: item images, evidence cached in the queue), wrapped in the daemon's
``FollowingLinker`` so a promoted or rolled-back model answers from the next batch on.
"""

from __future__ import annotations

from typing import Any, Optional

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import WikivelError


def build_suggester(obj: CliContext, store: Any, *, announce: bool = True) -> Optional[Any]:
    """A ``resident.service.ResidentSuggester`` when ``web.suggest`` is on, else None.

    A linker that cannot be built (no ML extras, a bad checkpoint) leaves the review page
    served without suggestions, with one line saying why.
    """
    settings = obj.settings
    if not settings.web.suggest:
        return None
    try:
        from wikivel_bot.cli.safety_view import safety_doc
        from wikivel_bot.commons.sources import image_of, read_named
        from wikivel_bot.commons.thumbnails import ThumbnailClient
        from wikivel_bot.daemon.promotions import FollowingLinker
        from wikivel_bot.queue.resident_queries import queued_versions
        from wikivel_bot.resident.queueing import enqueue_linked
        from wikivel_bot.resident.revisions import probe_revisions
        from wikivel_bot.resident.service import ResidentSuggester

        label_set = obj.label_set()
        following = FollowingLinker(settings, lambda s: obj.ready_linker(progress=False, settings=s,
                                                                         label_set=label_set, evidence_cache=store))
    except ImportError as exc:
        click.echo(f"web: suggestions are off: the resident linker needs {exc.name} (pip install 'wikivel-bot[ml]')",
                   err=True)
        return None
    except WikivelError as exc:
        click.echo(f"web: suggestions are off: {' '.join(str(exc).split())}", err=True)
        return None
    client = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    # The revision check of every request, over plain HTTP (no pywikibot read throttle).
    from wikivel_bot.core.review_rules import SITE_BASES
    from wikivel_bot.wikidata.agent import WEB_TOOL, user_agent
    from wikivel_bot.wikidata.api import ApiSession
    from wikivel_bot.wikidata.retry import RetryPolicy

    site = settings.site
    api_url = site.api_url or SITE_BASES.get(site.name.strip().lower(), SITE_BASES["commons"]).replace(
        "/wiki/", "/w/api.php")
    revisions = ApiSession(user_agent(site.operator_contact, tool=WEB_TOOL),
                           policy=RetryPolicy(attempts=2, backoff_s=0.5, max_wait_s=2.0), timeout_s=10.0)
    web = settings.web
    suggester = ResidentSuggester(
        following, label_set,
        read=lambda texts: read_named(texts, settings, obj.site()),
        image=lambda text, media: image_of(client, text, media),
        safety=safety_doc(settings.safety, label_set),
        queued=lambda page_id: queued_versions(store, page_id),
        probe=lambda texts: probe_revisions(revisions, api_url, texts),
        enqueue=lambda outcome: enqueue_linked(store, outcome),
        window_s=web.suggest_window_ms / 1000.0, max_waiting=web.suggest_queue,
        max_batch=web.suggest_batch or max(1, settings.linker.batch_size), cache_size=web.suggest_cache_files)
    if announce:
        click.echo(f"web: suggestions from {suggester.version}", err=True)
    return suggester
