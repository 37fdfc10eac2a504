"""The daemon's jobs on their own: pausing, fatal write errors, stopping between items.

The stages are plain callables here (the real ones run in tests/test_daemon.py); the queue
is a real SQLite one, because the daemon reports its condition through it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import List

import pytest

from tests.db_support import open_store
from wikivel_bot.commons.writer.stop_page import WritingPaused
from wikivel_bot.config import Settings
from wikivel_bot.daemon.scheduler import Daemon, Parts
from wikivel_bot.errors import WikiError
from wikivel_bot.queue import migrate, monitor


class Blocked(WikiError):
    """Stands for commons.writer.outcomes.WriteStopped."""


@dataclass
class Check:
    paused: bool
    reason: str = ""


@dataclass
class Counters:
    claimed: int


def make(tmp_path: Path, write, stop_check, calls: List[str]) -> Daemon:
    store = open_store(f"sqlite:///{tmp_path / 'q.sqlite'}")
    migrate.upgrade(store.engine)
    parts = Parts(store=store, poll=lambda: None, fetch=lambda n: Counters(0), link=lambda n: Counters(0),
                  write=write, stop_check=stop_check, maintenance=lambda: None, description={},
                  fatal_write_errors=(Blocked,), pause_errors=(WritingPaused,))
    settings = Settings().replace("write", batch_size=5)
    return Daemon(settings, parts, write_interval_s=1)


def test_stop_page_pauses_and_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    calls: List[str] = []
    daemon = make(tmp_path, lambda n: calls.append("write") or Counters(1),
                  lambda: Check(True, "stop page says 'stop'"), calls)
    with caplog.at_level(logging.INFO, logger="wikivel_bot.events"):
        for _ in range(3):
            daemon.write_job()
    assert calls == []
    assert monitor.get_states(daemon.parts.store)["writing"]["paused"] is True
    assert sum("outcome=paused" in r.getMessage() for r in caplog.records) == 1


def test_a_stop_page_read_before_an_edit_pauses_writing_not_for_good(tmp_path: Path) -> None:
    """The writer reads the stop page again right before each edit (stop_page.StopGuard):
    a stop there pauses like one read at the round's start, and the next round writes."""
    calls: List[str] = []
    stop = ["stop"]

    def write(n: int) -> Counters:
        calls.append("write")
        if stop:
            stop.pop()
            raise WritingPaused("writing paused: stop page User:Bot/stop says 'stop'")
        return Counters(0)

    daemon = make(tmp_path, write, lambda: Check(False), calls)
    daemon.write_job()
    state = monitor.get_states(daemon.parts.store)["writing"]
    assert state["paused"] is True and "says 'stop'" in state["reason"]
    daemon.write_job()
    assert calls == ["write", "write"]
    assert monitor.get_states(daemon.parts.store)["writing"]["paused"] is False


def test_a_fatal_write_error_stops_writing_until_restart(tmp_path: Path) -> None:
    calls: List[str] = []

    def write(n: int) -> Counters:
        calls.append("write")
        raise Blocked("blocked: the account is blocked")

    daemon = make(tmp_path, write, lambda: Check(False), calls)
    daemon.write_job()
    daemon.write_job()
    assert calls == ["write"]  # never tried again
    state = monitor.get_states(daemon.parts.store)["writing"]
    assert state["paused"] is True and "account is blocked" in state["reason"]


def test_ordinary_errors_are_recorded_and_writing_goes_on(tmp_path: Path) -> None:
    calls: List[str] = []

    def write(n: int) -> Counters:
        calls.append("write")
        if len(calls) == 1:
            raise WikiError("HTTP 503 from the API")
        return Counters(1 if len(calls) < 4 else 0)

    daemon = make(tmp_path, write, lambda: Check(False), calls)
    daemon.write_job()  # the error ends this round
    daemon.write_job()  # the next round writes until nothing is left
    assert calls == ["write"] * 4
    errors = monitor.get_states(daemon.parts.store)["errors"]["items"]
    assert errors[-1]["stage"] == "write" and "503" in errors[-1]["message"]


def test_a_stop_request_ends_a_round_between_items(tmp_path: Path) -> None:
    calls: List[str] = []
    daemon = make(tmp_path, None, lambda: Check(False), calls)

    def write(n: int) -> Counters:
        calls.append("write")
        daemon.request_stop()
        return Counters(1)

    daemon.parts.write = write
    daemon.write_job()
    assert calls == ["write"]
