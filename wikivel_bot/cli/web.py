"""``wikivel-bot web``: the patrollers' review page and JSON API, served by waitress.

Thin: build the store and the app from the settings, hand operators' batch reverts a
reverter that builds the pywikibot site on first use, and serve.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError


def _reverter(obj: CliContext) -> Callable[[str, str], List[str]]:
    """Revert a batch for an operator, one at a time (pywikibot's site is not shared safely)."""
    lock = threading.Lock()

    def revert(batch_id: str, operator: str) -> List[str]:
        from wikivel_bot.commons.writer import revert as r
        from wikivel_bot.queue.revert_queries import RevertQueue

        settings = obj.settings
        with lock:
            if settings.write.dry_run:
                from wikivel_bot.commons.writer.statement_writer import enable_dry_run

                enable_dry_run()
            site = obj.site()
            reverter = r.StatementReverter(site, tags=settings.write.tags, dry_run=settings.write.dry_run)
            counters = r.RevertCounters(batch_id=batch_id)
            r.revert_batch(RevertQueue(obj.store()), reverter, batch_id, counters=counters)
        return [f"requested by {operator}", *counters.lines()]

    return revert


def _labels(obj: CliContext) -> Any:
    """The configured label set, whose texts the page shows in the reviewer's language; the
    page still works without it (every item then comes from the Wikibase API)."""
    from wikivel_bot.errors import WikivelError

    try:
        return obj.label_set()
    except WikivelError as exc:
        click.echo(f"web: no label set ({' '.join(str(exc).split())}); items are looked up on the wiki", err=True)
        return None


@click.command("web")
@click.option("--host", help="Address to listen on (default: web.host, 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default: web.port; 0 = any free port).")
@click.pass_obj
def web(obj: CliContext, host: Optional[str], port: Optional[int]) -> None:
    """Serve the review page for patrollers: login with the reviewer's wiki account (OAuth
    2.0), one file at a time with keys, a grid for one item across many files, write batches
    with revert for operators, and the JSON API (/api/queue, /api/files/M123, /api/stats,
    POST /api/decisions). Decisions are the same rows the terminal review writes. With
    web.suggest on, the process keeps the linker in memory and answers GET /api/suggest for
    any file, and serves the Commons user script at /gadget.js (docs/reviewer.md). Settings:
    the [web] section; secrets in web.secrets_file. GET /healthz answers 200 while the queue
    is reachable."""
    settings = obj.settings
    # One connection per waitress thread: each request holds one for its transaction.
    store = obj.store(pool_size=settings.web.threads)
    try:
        from wikivel_bot.web.app import create_app
        from wikivel_bot.web.serve import serve
    except ImportError as exc:
        raise UsageError(f"the web review needs {exc.name}: pip install 'wikivel-bot[web]'") from None

    from wikivel_bot.cli.resident import build_suggester

    app = create_app(settings, store, reverter=_reverter(obj), labels=_labels(obj),
                     suggester=build_suggester(obj, store))
    where = host or settings.web.host
    number = settings.web.port if port is None else port
    try:
        serve(app, where, number, settings.web.threads,
              announce=lambda url: click.echo(f"serving the review page on {url}", err=True))
    except OSError as exc:
        raise UsageError(f"cannot listen on {where}:{number}: {exc.strerror or exc}") from None
