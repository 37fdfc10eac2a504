"""``wikivel-bot run``: the daemon that keeps up with Commons.

APScheduler 3.x runs four jobs — poll, fetch+link, write, maintenance — each at most once at
a time (``max_instances=1``), missed runs coalesced. Every job takes its work from the queue
and commits each result before the next, so a kill -9 at any moment and a restart resume
without loss or duplication, and several daemons can share one PostgreSQL/MariaDB queue
(work is claimed, never double-processed).

Signals: the first SIGTERM/SIGINT lets the job in progress finish its current item and
exits cleanly, within 10 s whatever the job was doing (Toolforge kills a job 15 s after
SIGTERM; ``daemon.stop``): an edit still waiting for its answer then is left to the writer's
recovery at the next start. A second signal exits at once. Before each write batch the stop
page is read; anything but the "run" text pauses writing (and says why in `status`).

Like ``cli/``, the daemon builds the site, the linker and the writer from Settings, in
``daemon.parts`` (lazily, so pywikibot and torch load only when the daemon starts).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Optional

from wikivel_bot.config import Settings
from wikivel_bot.daemon.stop import FINAL_RECORDS_S, JOBS_GRACE_S, RunningJobs, exit_now, finish_within
from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.daemon.outage import DatabaseOutage
# The stages the daemon schedules, and their builder (re-exported: `run` and tests import it here).
from wikivel_bot.daemon.parts import Parts, build_parts  # noqa: F401
from wikivel_bot.errors import WikivelError
from wikivel_bot.events import event

log = logging.getLogger("wikivel_bot.daemon.scheduler")

# A stage round claims at most this many items before the job yields, so a stop request
# or a pause is noticed within one batch.
ROUND_LIMIT = 200
# Seconds between heartbeats. Each heartbeat also renews the leases of the work in progress
# (by id), so a batch that takes longer than the lease is never handed to a second worker,
# and gives back what an outage left claimed; `status` calls a daemon "not responding" when
# its heartbeat is several intervals old.
HEARTBEAT_S = 5


class Daemon:
    """Schedules the stages and handles stop requests. ``run()`` blocks until stopped."""

    def __init__(self, settings: Settings, parts: Parts, write_interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """:param clock: monotonic seconds, for the outage's once-a-minute line (tests)."""
        from wikivel_bot.queue.leases import WorkInProgress

        self.settings = settings
        self.parts = parts
        self.write_interval_s = write_interval_s
        self.stopping = threading.Event()
        # When the stop was asked for (monotonic s): the stopped line's `stop_s` counts from it.
        self._stop_asked: Optional[float] = None
        self._signals = 0
        self.worker = f"daemon:{socket.gethostname()}:{os.getpid()}"
        # One document per daemon (several may share a queue); `status` lists them all.
        self.state_name = f"worker:{self.worker}"
        self._paused_reason = ""
        self._write_stopped = ""
        self.jobs = RunningJobs()
        self.work = parts.work if parts.work is not None else WorkInProgress()
        self.outage = DatabaseOutage(clock)

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
            except self.parts.pause_errors as exc:
                self._pause(" ".join(str(exc).split()))
                return
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

    def learning_job(self) -> None:
        """A learning round (``learning.schedule``): a challenger, judged, promoted on a win."""
        from wikivel_bot.learning.schedule import learning_round

        self._guard("learning", lambda: learning_round(self.settings, self.parts.store))

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

        def track(name: str, job: Callable[[], None]) -> Callable[[], None]:
            # The stop knows which jobs still run (see _stop); a run the pool starts after
            # the stop request does nothing.
            return self.jobs.wrap(name, lambda: None if self.stopping.is_set() else job())

        scheduler.add_job(track("poll", self.poll_job), "interval", seconds=s.poll.interval_s,
                          next_run_time=now, id="poll")
        scheduler.add_job(track("link", self.link_job), "interval", seconds=s.daemon.link_interval_s,
                          next_run_time=now, id="link")
        if self.parts.write is not None:
            scheduler.add_job(track("write", self.write_job), "interval", seconds=self.write_interval_s,
                              next_run_time=now, id="write")
        scheduler.add_job(track("maintenance", self.maintenance_job), "interval",
                          seconds=s.daemon.maintenance_interval_s, id="maintenance")
        # Learning from reviewers (learning.schedule_hours; off by default, docs/learning.md).
        from wikivel_bot.learning.schedule import add_learning_job

        add_learning_job(scheduler, s, track("learn", self.learning_job))
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
                self.keep_leases()
                self._state(self.state_name, {**self.parts.description, "worker": self.worker,
                                              "started_at": started, "running": True, "heartbeat": beat,
                                              "heartbeat_s": HEARTBEAT_S})
        finally:
            self._stop(scheduler, metrics, started, beat)

    def _stop(self, scheduler: Any, metrics: Any, started: str, beat: str) -> None:
        """End within 10 s (``daemon.stop``): the running jobs see `stopping` and end after
        their item, or are left behind after JOBS_GRACE_S. The stopped line's `stop_s` is the
        time from the stop request to the last records' end, bounded by those two deadlines."""
        asked = self._stop_asked if self._stop_asked is not None else time.monotonic()
        scheduler.shutdown(wait=False)
        left = self.jobs.wait_idle(JOBS_GRACE_S)
        if metrics is not None:
            metrics.shutdown()

        def last_records() -> None:
            # Claims not handled by a finished job go back at once, not after the lease. With
            # a write still in flight they all stay: whether that edit reached the wiki is
            # unknown, and only the next start's re-read (recovery) may decide it.
            if "write" not in left:
                self._guard("leases", lambda: self.parts.store.release_claims_of(self.worker))
            self._state(self.state_name, {**self.parts.description, "worker": self.worker,
                                          "started_at": started, "running": False, "heartbeat": beat,
                                          "heartbeat_s": HEARTBEAT_S,
                                          "stopped_at": format_timestamp()})

        recorded = finish_within(last_records, FINAL_RECORDS_S)
        stop_s = round(time.monotonic() - asked, 2)
        if not left and recorded:
            event("daemon", "stopped", worker=self.worker, stop_s=stop_s)
            return
        event("daemon", "stopped", level=logging.WARNING, worker=self.worker, stop_s=stop_s,
              left_running=",".join(left) or None, last_records="saved" if recorded else "timed out",
              note="an edit in flight is recorded by the writer's recovery at the next start")
        exit_now(0)

    def _free_dead_claims(self) -> None:
        """Take back the claims of daemons and writers on this host that died (kill -9)."""
        from wikivel_bot.queue.leases import free_dead_local_claims

        freed = self._guard("leases", lambda: free_dead_local_claims(self.parts.store)) or {}
        for worker, n in freed.items():
            event("daemon", "released", worker=worker, rows=n, note="that process is gone")

    def request_stop(self) -> None:
        self._note_stop_asked()
        self.stopping.set()

    def _note_stop_asked(self) -> None:
        if self._stop_asked is None:
            self._stop_asked = time.monotonic()

    def _install_signals(self) -> None:
        def handler(signum: int, _frame: Any) -> None:
            self._signals += 1
            if self._signals > 1:
                event("daemon", "killed", level=logging.WARNING, signal=signal.Signals(signum).name)
                os._exit(128 + signum)
            self._note_stop_asked()
            event("daemon", "stopping", signal=signal.Signals(signum).name,
                  note="finishing the current item; send again to exit at once")
            self.stopping.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, handler)

    def keep_leases(self) -> None:
        """At each heartbeat: make the releases an outage left owed, then renew by id the
        leases of the work in progress, and nothing else (what no stage works on expires)."""
        store = self.parts.store
        if self._guard("leases", store.settle_releases) is not None:
            self._guard("leases", lambda: self.work.renew(store, self.worker))

    def _guard(self, stage: str, call: Callable[[], Any]) -> Any:
        """Run one stage; a failure is logged and remembered for `status`, never fatal
        (except the write errors in ``parts.fatal_write_errors``, raised for the caller).
        An unreachable database is the outage's to log: once a minute, no traceback."""
        try:
            return call()
        except self.parts.fatal_write_errors + self.parts.pause_errors:
            raise
        except Exception as exc:  # noqa: BLE001 - the daemon must outlive a bad batch
            if self.outage.failed(stage, exc):
                return None
            if isinstance(exc, WikivelError):
                message = " ".join(str(exc).split())
            else:
                log.exception("unexpected error in %s", stage)
                message = f"{type(exc).__name__}: {exc}"
        event(stage, "error", level=logging.ERROR, error=message)
        try:
            from wikivel_bot.queue import monitor

            monitor.add_error(self.parts.store, stage, message)
        except Exception as exc:  # noqa: BLE001 - the log line above is all we can do
            if not (isinstance(exc, WikivelError) or self.outage.failed(stage, exc)):
                raise
        return None

    def _state(self, name: str, value: Dict[str, Any]) -> None:
        from wikivel_bot.queue import monitor

        try:
            monitor.set_state(self.parts.store, name, value)
        except Exception as exc:  # noqa: BLE001 - the heartbeat must outlive an outage
            if self.outage.failed("state", exc):
                return
            if not isinstance(exc, WikivelError):
                raise
            event("daemon", "error", level=logging.ERROR, error=f"cannot save {name} state: {exc}")
        else:
            self.outage.answered()
