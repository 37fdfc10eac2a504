"""``wikivel-bot run``: the daemon that keeps up with Commons.

APScheduler 3.x runs four jobs — poll, fetch+link, write, maintenance — each at most once at
a time (``max_instances=1``), missed runs coalesced. Every job takes its work from the queue
and commits each result before the next, so a kill -9 at any moment and a restart resume
without loss or duplication, and several daemons can share one PostgreSQL/MariaDB queue
(work is claimed, never double-processed).

Signals: the first SIGTERM/SIGINT lets the job in progress finish its current item and
exits cleanly; a second one exits at once. Before each write batch the stop page is read;
anything but the "run" text pauses writing (and says why in `status`).

Like ``cli/``, this module builds the site, the linker and the writer from Settings
(lazily, so pywikibot and torch load only when the daemon starts).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Optional

from wikivel_bot.config import Settings
from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import WikivelError
from wikivel_bot.events import event

log = logging.getLogger("wikivel_bot.daemon")

# A stage round claims at most this many items before the job yields, so a stop request
# or a pause is noticed within one batch.
ROUND_LIMIT = 200
# Seconds between heartbeats. Each heartbeat also renews this daemon's leases, so a batch
# that takes longer than the lease is never handed to a second worker; `status` calls a
# daemon "not responding" when its heartbeat is several intervals old.
HEARTBEAT_S = 5


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


class Daemon:
    """Schedules the stages and handles stop requests. ``run()`` blocks until stopped."""

    def __init__(self, settings: Settings, parts: Parts, write_interval_s: float) -> None:
        self.settings = settings
        self.parts = parts
        self.write_interval_s = write_interval_s
        self.stopping = threading.Event()
        self._signals = 0
        self.worker = f"daemon:{socket.gethostname()}:{os.getpid()}"
        # One document per daemon (several may share a queue); `status` lists them all.
        self.state_name = f"worker:{self.worker}"
        self._paused_reason = ""
        self._write_stopped = ""

    # -- jobs --------------------------------------------------------------------------

    def poll_job(self) -> None:
        counters = self._guard("poll", self.parts.poll)
        if counters is not None:
            cursor = counters.cursor
            self._state("poll", {
                "read": counters.read, "enqueued": counters.enqueued,
                "cursor": cursor.timestamp.isoformat() if cursor else None,
                "at": format_timestamp(),
            })

    def link_job(self) -> None:
        handled = 0
        batch = max(1, self.settings.linker.batch_size)
        while not self.stopping.is_set() and handled < ROUND_LIMIT:
            fetched = self._guard("fetch", lambda: self.parts.fetch(self.settings.fetch.batch_size))
            if self.stopping.is_set():
                break
            linked = self._guard("link", lambda: self.parts.link(batch))
            if fetched is None or linked is None:
                break  # a failed stage is retried next round, not in a tight loop
            claimed = fetched.claimed + linked.claimed
            handled += claimed
            if claimed == 0:
                break

    def write_job(self) -> None:
        if self.parts.write is None:
            return
        if self._write_stopped:
            self._pause(f"writing stopped until restart: {self._write_stopped}")
            return
        check = self._guard("stop-page", self.parts.stop_check)
        if check is None or check.paused:
            self._pause(check.reason if check is not None else "the stop page could not be checked")
            return
        if self._paused_reason:
            event("write", "resumed", previous=self._paused_reason)
            self._paused_reason = ""
        self._state("writing", {"paused": False, "reason": "", "at": format_timestamp()})
        for _ in range(max(1, self.settings.write.batch_size)):
            if self.stopping.is_set():
                return
            try:
                counters = self._guard("write", lambda: self.parts.write(1))  # type: ignore[misc]
            except self.parts.fatal_write_errors as exc:
                self._write_stopped = " ".join(str(exc).split())
                event("write", "stopped", level=logging.ERROR, error=self._write_stopped)
                self._pause(f"writing stopped until restart: {self._write_stopped}")
                return
            if counters is None or counters.claimed == 0:
                return

    def _pause(self, reason: str) -> None:
        """Record that writing is paused; log it once per change of reason, not every round."""
        self._state("writing", {"paused": True, "reason": reason, "at": format_timestamp()})
        if reason != self._paused_reason:
            event("write", "paused", level=logging.WARNING, reason=reason)
            self._paused_reason = reason

    def maintenance_job(self) -> None:
        self._guard("maintenance", self.parts.maintenance)

    # -- running -----------------------------------------------------------------------

    def run(self) -> None:
        """Start the scheduler, wait for a stop request, finish the current items, exit."""
        from apscheduler.schedulers.background import BackgroundScheduler

        self._install_signals()
        scheduler = BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
            timezone=timezone.utc,
        )
        now = datetime.now(timezone.utc)
        s = self.settings
        scheduler.add_job(self.poll_job, "interval", seconds=s.poll.interval_s, next_run_time=now, id="poll")
        scheduler.add_job(self.link_job, "interval", seconds=s.daemon.link_interval_s, next_run_time=now, id="link")
        if self.parts.write is not None:
            scheduler.add_job(self.write_job, "interval", seconds=self.write_interval_s, next_run_time=now, id="write")
        scheduler.add_job(self.maintenance_job, "interval", seconds=s.daemon.maintenance_interval_s, id="maintenance")
        started = format_timestamp()
        self._free_dead_claims()
        self._state(self.state_name, {**self.parts.description, "worker": self.worker, "started_at": started,
                                      "running": True, "heartbeat": started, "heartbeat_s": HEARTBEAT_S})
        shown: Dict[str, Any] = {k: v for k, v in self.parts.description.items()
                                 if isinstance(v, (str, int, float, bool))}
        event("daemon", "started", worker=self.worker, **shown)
        metrics = None
        if s.daemon.metrics_port:
            from wikivel_bot.metrics_endpoint import serve_metrics

            metrics = serve_metrics(self.parts.store, s.daemon.metrics_port)
            event("daemon", "metrics", url=f"http://127.0.0.1:{metrics.server_address[1]}/metrics")
        scheduler.start()
        try:
            beat = started
            while not self.stopping.wait(timeout=HEARTBEAT_S):
                beat = format_timestamp()
                self._guard("leases", lambda: self.parts.store.renew_claims(self.worker))
                self._state(self.state_name, {**self.parts.description, "worker": self.worker,
                                              "started_at": started, "running": True, "heartbeat": beat,
                                              "heartbeat_s": HEARTBEAT_S})
        finally:
            # Waits for the running jobs, which see `stopping` and end after their item.
            scheduler.shutdown(wait=True)
            if metrics is not None:
                metrics.shutdown()
            # Claims not handled by a finished job go back at once, not after the lease.
            self._guard("leases", lambda: self.parts.store.release_claims_of(self.worker))
            self._state(self.state_name, {**self.parts.description, "worker": self.worker,
                                          "started_at": started, "running": False, "heartbeat": beat,
                                          "heartbeat_s": HEARTBEAT_S,
                                          "stopped_at": format_timestamp()})
            event("daemon", "stopped", worker=self.worker)

    def _free_dead_claims(self) -> None:
        """Take back the claims of daemons and writers on this host that died (kill -9)."""
        from wikivel_bot.queue.leases import free_dead_local_claims

        freed = self._guard("leases", lambda: free_dead_local_claims(self.parts.store)) or {}
        for worker, n in freed.items():
            event("daemon", "released", worker=worker, rows=n, note="that process is gone")

    def request_stop(self) -> None:
        self.stopping.set()

    def _install_signals(self) -> None:
        def handler(signum: int, _frame: Any) -> None:
            self._signals += 1
            if self._signals > 1:
                event("daemon", "killed", level=logging.WARNING, signal=signal.Signals(signum).name)
                os._exit(128 + signum)
            event("daemon", "stopping", signal=signal.Signals(signum).name,
                  note="finishing the current item; send again to exit at once")
            self.stopping.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, handler)

    def _guard(self, stage: str, call: Callable[[], Any]) -> Any:
        """Run one stage; a failure is logged and remembered for `status`, never fatal
        (except the write errors in ``parts.fatal_write_errors``, raised for the caller)."""
        try:
            return call()
        except self.parts.fatal_write_errors:
            raise
        except WikivelError as exc:
            message = " ".join(str(exc).split())
        except Exception as exc:  # noqa: BLE001 - the daemon must outlive a bad batch
            log.exception("unexpected error in %s", stage)
            message = f"{type(exc).__name__}: {exc}"
        event(stage, "error", level=logging.ERROR, error=message)
        try:
            from wikivel_bot.queue import monitor

            monitor.add_error(self.parts.store, stage, message)
        except WikivelError:
            pass  # the database itself is down: the log line above is all we can do
        return None

    def _state(self, name: str, value: Dict[str, Any]) -> None:
        from wikivel_bot.queue import monitor

        try:
            monitor.set_state(self.parts.store, name, value)
        except WikivelError as exc:
            event("daemon", "error", level=logging.ERROR, error=f"cannot save {name} state: {exc}")


def build_parts(settings: Settings, store: Any, dry_run: bool) -> Parts:
    """Build the site, poller, fetcher, linker (model and label index loaded once) and,
    when writing is on, the writer.

    :param dry_run: pywikibot's ``simulate`` is switched on before the site exists, so no
        write request can leave the process whatever happens later.
    """
    from wikivel_bot import pipeline
    from wikivel_bot.commons import write_loop
    from wikivel_bot.commons import writer as w

    if dry_run:
        w.enable_dry_run()
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.poller import UploadPoller
    from wikivel_bot.commons.site import open_items, open_repo, open_site
    from wikivel_bot.commons.stop_page import check_stop_page
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.commons.providers import evidence_source
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker.link import safety_rules
    from wikivel_bot.queue import monitor

    worker = f"daemon:{socket.gethostname()}:{os.getpid()}"
    site = open_site(settings.site)
    poller = UploadPoller(site, settings.poll)
    fetcher = Fetcher.from_settings(site, settings)
    thumbnails = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    label_set = default_label_set(settings.linker.labels_dir)
    from wikivel_bot.commons.providers import item_image_source

    # The one builder every path uses: item images (P18, fetched once into the cache) when
    # the linker or its verifier reads them, the cascade, the verifier, ranking and safety
    # rules, and the files' own evidence (look-ups cached in the queue database).
    ready = build_ready_linker(settings, label_set, item_images=item_image_source(settings, site),
                               evidence=evidence_source(settings, lambda: site, store))
    linker = ready.linker

    def run_linker(files: Any, rejected: Any) -> Any:
        return ready.link(files, rejected)

    write: Optional[Callable[[int], Any]] = None
    writing = dry_run or settings.write.enabled
    if writing:
        repo = open_repo(settings.site, site)
        items = open_items(settings.site, repo)
        # The safety rules as configured now: a pair approved before a rule change is refused.
        writer = w.StatementWriter(site, w.new_batch_id(), w.hierarchy_lookup(label_set, items), repo=repo,
                                   tags=settings.write.tags, dry_run=dry_run,
                                   safety=w.safety_check(settings.safety, label_set, items))

        def write(limit: int) -> Any:
            return write_loop.write_approved(store, writer, batch_size=1, worker=worker,
                                    max_attempts=settings.write.max_attempts, limit=limit)

    description = linker.description
    return Parts(
        store=store,
        poll=lambda: pipeline.poll_once(store, poller),
        fetch=lambda n: pipeline.fetch_pending(store, fetcher, n, worker),
        link=lambda n: pipeline.link_pending(store, thumbnails, run_linker, n, worker),
        write=write,
        stop_check=lambda: check_stop_page(site, settings.daemon.stop_page, settings.daemon.stop_run_text),
        maintenance=lambda: monitor.maintain(store),
        fatal_write_errors=(w.WriteStopped, w.WriteRefused),
        description={
            "site": str(site), "dry_run": dry_run, "writing": writing,
            "linker": description.name, "linker_version": description.version,
            # Switched-off safety rules travel with the daemon's state, so `status` shows them.
            "warnings": list(description.warnings) + list(safety_rules(settings.safety).off_notes()),
            "label_set": label_set.content_hash,
            "precision": description.precision, "precision_reason": description.precision_reason,
            "stop_page": settings.daemon.stop_page,
        },
    )
