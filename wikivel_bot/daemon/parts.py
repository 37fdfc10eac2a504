"""The daemon's parts: its stages as callables over the queue, built from Settings.

:func:`build_parts` is where the daemon builds the site, the poller, the fetcher, the linker
(model and label index loaded once) and the writer; everything it imports is imported
lazily, so pywikibot and torch load only when the daemon starts. ``daemon`` schedules the
parts; tests give it :class:`Parts` of their own.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from wikivel_bot.config import Settings


@dataclass
class Parts:
    """The daemon's stages as callables over the queue (built by :func:`build_parts`).

    ``write`` is None when writing is off (neither enabled nor a dry run).
    """

    store: Any
    poll: Callable[[], Any]
    fetch: Callable[[int], Any]
    link: Callable[[int], Any]
    write: Optional[Callable[[int], Any]]
    stop_check: Callable[[], Any]
    maintenance: Callable[[], None]
    description: Dict[str, Any]
    # Errors after which this daemon must not try to write again (blocked, logged out,
    # dry-run guard tripped): writing stops until an operator restarts it.
    fatal_write_errors: tuple = ()
    # The stop page said stop right before an edit: writing pauses, as at a round's start.
    pause_errors: tuple = ()
    # What the stages are working on (``queue.leases.WorkInProgress``; the stages run
    # through it): the only leases the heartbeat renews. None: nothing is tracked.
    work: Any = None


def build_parts(settings: Settings, store: Any, dry_run: bool) -> Parts:
    """Build the site, poller, fetcher, linker (model and label index loaded once) and,
    when writing is on, the writer.

    :param dry_run: pywikibot's ``simulate`` is switched on before the site exists, so no
        write request can leave the process whatever happens later.
    """
    from wikivel_bot import pipeline
    from wikivel_bot.commons.writer import loop as write_loop
    from wikivel_bot.commons.writer import statement_writer as w

    if dry_run:
        w.enable_dry_run()
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.poller import UploadPoller
    from wikivel_bot.commons.site import open_items, open_repo, open_site, repo_api_url
    from wikivel_bot.commons.writer.stop_page import StopGuard, WritingPaused, check_stop_page
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.commons.providers import evidence_source
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker.link import safety_rules
    from wikivel_bot.queue import monitor

    worker = f"daemon:{socket.gethostname()}:{os.getpid()}"
    from wikivel_bot.queue.leases import WorkInProgress

    # Every stage claims through `work`, so the heartbeat renews exactly what is in progress.
    work = WorkInProgress()
    site = open_site(settings.site)
    poller = UploadPoller(site, settings.poll)
    fetcher = Fetcher.from_settings(site, settings)
    thumbnails = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    label_set = default_label_set(settings.linker.labels_dir)
    from wikivel_bot.commons.providers import item_image_source

    # The one builder every path uses: item images (P18, fetched once into the cache) when
    # the linker or its verifier reads them, the cascade, the verifier, ranking and safety
    # rules, and the files' own evidence (look-ups cached in the queue database).
    # A promotion or rollback in learning.models_dir is followed at the next link batch,
    # rebuilt through the same builder (daemon/promotions.py).
    from wikivel_bot.daemon.promotions import FollowingLinker

    following = FollowingLinker(settings, lambda s: build_ready_linker(
        s, label_set, item_images=item_image_source(s, site), evidence=evidence_source(s, lambda: site, store)))
    linker = following.ready.linker

    def run_linker(files: Any, rejected: Any) -> Any:
        return following.link(files, rejected)

    write: Optional[Callable[[int], Any]] = None
    writing = dry_run or settings.write.enabled
    if writing:
        repo = open_repo(settings.site, site)
        items = open_items(settings.site, repo)
        # The safety rules as configured now: a pair approved before a rule change is refused.
        writer = w.StatementWriter(site, w.new_batch_id(), w.hierarchy_lookup(label_set, items), repo=repo,
                                   tags=settings.write.tags, dry_run=dry_run,
                                   safety=w.safety_check(settings.safety, label_set, items), items=items,
                                   fresh_s=settings.db.claim_lease_s / 3,
                                   # Read again right before every edit, not only each round.
                                   stop=StopGuard(site, settings.daemon.stop_page, settings.daemon.stop_run_text))

        def write(limit: int) -> Any:
            return work.run(store, lambda queue: write_loop.write_approved(
                queue, writer, batch_size=1, worker=worker, max_attempts=settings.write.max_attempts,
                limit=limit))

    description = linker.description
    info: Dict[str, Any] = {}   # the state document's fields, kept current after a model change
    following.on_change = lambda ready: info.update(linker=ready.description.name,
                                                    linker_version=ready.description.version)
    info.update({
        # The API URL it talks to: pywikibot's name ("commons:commons") is the same for
        # Commons and for a local wiki registered as the commons family.
        "site": repo_api_url(site), "dry_run": dry_run, "writing": writing,
        "linker": description.name, "linker_version": description.version,
        # Switched-off safety rules travel with the daemon's state, so `status` shows them.
        "warnings": list(description.warnings) + list(safety_rules(settings.safety).off_notes()),
        "label_set": label_set.content_hash,
        "precision": description.precision, "precision_reason": description.precision_reason,
        "stop_page": settings.daemon.stop_page,
    })
    return Parts(
        store=store,
        poll=lambda: pipeline.poll_once(store, poller),
        fetch=lambda n: work.run(store, lambda queue: pipeline.fetch_pending(queue, fetcher, n, worker)),
        link=lambda n: work.run(store, lambda queue: pipeline.link_pending(queue, thumbnails, run_linker,
                                                                         n, worker)),
        work=work,
        write=write,
        stop_check=lambda: check_stop_page(site, settings.daemon.stop_page, settings.daemon.stop_run_text),
        maintenance=lambda: monitor.maintain(store),
        fatal_write_errors=(w.WriteStopped, w.WriteRefused),
        pause_errors=(WritingPaused,),
        description=info,
    )
