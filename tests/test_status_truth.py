"""`status` and `write` tell the operator the truth.

`status` shows who holds claimed work and until when, why approved pairs are still approved,
and calls a daemon whose heartbeat stopped "not responding"; `write` handles what is approved
now and exits, `--follow` keeps waiting and says so.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from click.testing import CliRunner

from tests.test_cli import cli
from tests.writer_support import approve, clock, queue, site, wiki  # noqa: F401 - fixtures
from wikivel_bot.cli import main
from wikivel_bot.cli.status import daemon_condition
from wikivel_bot.queue import migrate, monitor
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_daemon_without_a_recent_heartbeat_is_not_responding() -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    alive = {"running": True, "heartbeat": _iso(now - timedelta(seconds=20)), "heartbeat_s": 5}
    assert daemon_condition(alive, now) == "running"
    killed = {**alive, "heartbeat": _iso(now - timedelta(minutes=10))}
    assert daemon_condition(killed, now).startswith(
        f"NOT RESPONDING (last heartbeat {killed['heartbeat']}")
    assert daemon_condition({"running": False, "stopped_at": "2026-11-23T11:00:00Z"}, now) == (
        "stopped 2026-11-23T11:00:00Z")


def test_status_shows_claims_simulated_approvals_and_a_dead_daemon(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    store = Store(engine)
    try:
        approve(store, 10004, "Q146")
        approve(store, 10046, "Q146")
        approve(store, 10001, "Q146")
        (edit,) = store.claim_approved(1, "write:otherhost:4242")
        from wikivel_bot.types import DryRun

        (simulated,) = store.claim_approved(1, "dry", dry_run=True)
        store.record_edit(simulated.candidate_id, "b-dry", DryRun("s"), datetime.now(timezone.utc))
        old = datetime.now(timezone.utc) - timedelta(minutes=30)
        monitor.set_state(store, "worker:daemon:otherhost:99", {
            "worker": "daemon:otherhost:99", "running": True, "started_at": _iso(old),
            "heartbeat": _iso(old), "heartbeat_s": 5, "dry_run": True, "writing": True})
    finally:
        store.close()

    result = cli("status", env_extra={"WIKIVEL_DB_URL": url})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1 candidates (approved) held by write:otherhost:4242 until " in out
    assert "approved" in out and "1 simulated by a dry run, waiting for a real write" in out
    assert "1 claimed by a writer" in out
    assert f"daemon daemon:otherhost:99: NOT RESPONDING (last heartbeat {_iso(old)}" in out


def test_write_exits_when_done_and_follow_keeps_waiting(wiki, site, queue, tmp_path,
                                                         monkeypatch) -> None:
    from wikivel_bot.cli import write as write_module

    url = str(queue.engine.url)
    approve(queue, 10004, "Q146")
    runner = CliRunner()
    plain = runner.invoke(main, ["write"], env={"WIKIVEL_DB_URL": url})
    assert plain.exit_code == 0, plain.output
    assert "1 written" in plain.output and "waiting" not in plain.output

    naps = []

    def interrupted_sleep(seconds: float) -> None:
        naps.append(seconds)
        raise KeyboardInterrupt

    monkeypatch.setattr(write_module.time, "sleep", interrupted_sleep)
    follow = runner.invoke(main, ["write", "--follow"], env={"WIKIVEL_DB_URL": url})
    assert follow.exit_code == 0, follow.output
    assert "waiting for new approvals (--follow" in follow.output
    assert "interrupted" in follow.output and naps == [30]
    both = runner.invoke(main, ["write", "--once", "--follow"], env={"WIKIVEL_DB_URL": url})
    assert both.exit_code != 0 and "--once and --follow" in both.output
