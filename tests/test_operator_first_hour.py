"""An operator's first hour without surprises.

Each point as the operator meets it: `status` right after the daemon was killed with
kill -9; `revert --batch BATCH_ID` copied from the README; `write` with nothing approved;
and the messages: the random-weights warning once per card, "27 named people", `config
show` naming each key's source, the daemon logging the API URL it talks to, the batch page's
times alike, and the terminal's help wrapped between words.
"""

from __future__ import annotations

import re
import signal
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tests.review_support import CAT, DOG, add_file
from tests.test_cli import cli
from tests.test_cli_errors import run_cli
from tests.writer_support import approve, site, wiki  # noqa: F401 - fixtures are used by name
from wikivel_bot.cli import main
from wikivel_bot.queue import migrate, monitor
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def queue(tmp_path: Path):
    """A migrated SQLite queue and its URL."""
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    store = Store(engine)
    yield store, url
    store.close()


# -- 5. status right after kill -9 ----------------------------------------------------------


def test_status_says_not_running_at_once_when_the_daemons_process_is_gone(tmp_path: Path) -> None:
    """The real daemon, killed with SIGKILL: its heartbeat is seconds old, yet `status` says
    at once that it is not running, because its worker is on this host and the pid is gone.
    The daemon's start line names the API URL it talks to, not pywikibot's family name."""
    pytest.importorskip("torch")
    from tests.test_daemon import daemon_env, queue_at, start_daemon, wait_for
    from tests.testwiki import TestWiki

    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = queue_at(url)
    log = tmp_path / "daemon.log"

    def running_daemon() -> dict:
        workers = [v for k, v in monitor.get_states(store).items() if k.startswith("worker:")]
        return workers[0] if workers and workers[0].get("running") else {}

    with TestWiki.start() as served:
        proc = start_daemon(daemon_env(served, tmp_path, url), tmp_path, "--dry-run", log=log)
        try:
            # (a time limit that only guards a hang: the start imports torch on a loaded machine)
            wait_for(lambda: bool(running_daemon()), "the daemon to save its first heartbeat", proc, log,
                     timeout_s=300)
            assert running_daemon()["worker"].endswith(f":{proc.pid}")
            alive = cli("status", env_extra={"WIKIVEL_DB_URL": url})
            assert alive.returncode == 0, alive.stderr
            assert re.search(r"daemon daemon:\S+: running \(", alive.stdout), alive.stdout
            # 29.9: the log names the URL the daemon talks to (the test wiki is registered as
            # pywikibot's commons family, so "commons:commons" would hide where it writes).
            assert f"site={served.api_url}" in log.read_text()
            assert "site=commons:commons" not in log.read_text()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    assert running_daemon()  # it had no chance to say it stopped
    gone = cli("status", env_extra={"WIKIVEL_DB_URL": url})
    assert gone.returncode == 0, gone.stderr
    assert re.search(r"daemon daemon:\S+: not running \(process gone; last heartbeat ", gone.stdout), gone.stdout
    assert ": running (" not in gone.stdout and "NOT RESPONDING" not in gone.stdout
    store.close()


def test_a_daemon_on_another_host_is_still_judged_by_its_heartbeat() -> None:
    from wikivel_bot.cli.status import daemon_condition

    now = datetime.now(timezone.utc)
    beat = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    # pid 1 elsewhere says nothing about this host: a fresh heartbeat means running.
    assert daemon_condition({"worker": "daemon:otherhost:1", "running": True, "heartbeat": beat,
                             "heartbeat_s": 5}, now) == "running"


# -- 6. revert --batch BATCH_ID, copied literally -------------------------------------------


def test_revert_of_an_unknown_batch_prints_only_the_error(queue, tmp_path: Path) -> None:
    """The batch is looked up before anything is counted or the wiki opened (the default
    site, Commons, is not reachable from the tests: reaching it would be another error)."""
    _store, url = queue
    for batch, hint in (("BATCH_ID", True), ("b-20260101120000-1a2b", False)):
        result = run_cli(["--db-url", url, "revert", "--batch", batch], tmp_path)
        assert result.returncode != 0
        assert result.stdout == "", result.stdout  # no "0 statements removed / 0 left alone"
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: no batch '{batch}' in the audit trail"), lines
        assert ("a batch id looks like b-20260101120000-1a2b" in lines[0]) is hint, lines[0]


# -- 7. write with nothing approved -----------------------------------------------------------


def test_write_with_nothing_approved_says_so_and_creates_no_batch(queue, tmp_path: Path) -> None:
    store, url = queue
    add_file(store, 10004, [CAT, DOG])  # proposed pairs, none approved
    for args in ([], ["--dry-run"]):
        result = run_cli(["--db-url", url, "write", *args], tmp_path)
        assert result.returncode == 0, result.stderr
        assert "nothing approved" in result.stdout
        assert "batch" not in result.stdout.replace("no batch created", ""), result.stdout
        assert not re.search(r"b-\d{14}-", result.stdout + result.stderr)
    assert store.audit_rows() == []


def test_a_run_that_claimed_nothing_names_no_batch(wiki, site, queue) -> None:  # noqa: F811
    """Approved pairs another live writer holds: the run opens the wiki, claims nothing, and
    says why the pair is still approved, without a batch id that no edit carries."""
    store, url = queue
    approve(store, 10004, "Q146")
    assert store.claim_approved(1, "write:otherhost:4242")  # a live writer elsewhere holds it
    result = CliRunner().invoke(main, ["write"], env={"WIKIVEL_DB_URL": url})
    assert result.exit_code == 0, result.output
    assert "0 approved pairs claimed" in result.output and "1 claimed by another writer" in result.output
    assert not re.search(r"batch b-", result.output), result.output


# -- 9. messages --------------------------------------------------------------------------------


def _random_weights_file(store: Store) -> None:
    from wikivel_bot.linker.clip import RANDOM_WARNING
    from wikivel_bot.types import Candidate, FileState, MediaFile, Upload

    store.enqueue([Upload(page_id=10001, title="File:Example 10001.jpg", timestamp=datetime(2026, 1, 1),
                          uploader="Alice", log_id=1, mime="image/jpeg", width=800, height=600)])
    file_id = store.file_id_of(10001)
    store.mark_fetched(file_id, MediaFile(page_id=10001, title="File:Example 10001.jpg",
                                          thumb_url="https://upload.wikimedia.org/x.jpg", revid=7))
    # As the linker stores a random-weights suggestion: the flag and the linker's warning.
    store.save_candidates(file_id, [Candidate(
        qid="Q146", score=0.5, rank=1, linker="zero-shot", linker_version="1", labelset_hash="h" * 16,
        evidence={"label": "house cat", "description": "", "notes": [], "random_weights": True,
                  "warnings": [RANDOM_WARNING]})])
    assert store.counts()["files"][FileState.LINKED.value] == 1


def test_the_random_weights_warning_appears_once_in_an_export_note(queue, tmp_path: Path) -> None:
    import json

    store, url = queue
    _random_weights_file(store)
    result = CliRunner().invoke(main, ["--db-url", url, "export", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    said = [note for note in row["notes"] if "random weights" in note]
    assert len(said) == 1, row["notes"]


def test_the_random_weights_warning_appears_once_on_a_web_card(tmp_path: Path) -> None:
    from tests.web_support import add_web_users, login, make_app
    from tests.testwiki import TestWiki
    from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET

    engine = create_engine_for(f"sqlite:///{tmp_path / 'web.sqlite'}")
    migrate.upgrade(engine)
    store = Store(engine)
    _random_weights_file(store)
    with TestWiki.start() as served:
        add_web_users(served)
        served.oauth.register(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, "http://")
        client = make_app(served, store).test_client()
        assert login(client, "Alice Uploader").status_code == 302
        page = client.get("/review?file=M10001").get_data(as_text=True)
        card = client.get("/api/files/M10001").json["candidates"][0]
    store.close()
    assert page.count("random weights") == 1, page
    assert card["random_weights"] is True
    assert not any("random weights" in reason for reason in card["reasons"]), card["reasons"]


def test_withheld_counts_take_the_plural() -> None:
    from wikivel_bot.core.safety import rule_count, rule_counts
    from wikivel_bot.review.export import ExportStats

    assert rule_count(1, "named person") == "1 named person"
    assert rule_count(27, "named person") == "27 named people"
    assert rule_counts({"named person": 27, "sensitive class": 1}) == "27 named people, 1 sensitive class"
    assert rule_counts({"blocked class": 2, "unchecked": 3}) == "2 blocked classes, 3 unchecked"
    stats = ExportStats(withheld={"named person": 27})
    assert stats.withheld_line() == "withheld by the safety rules for these files: 27 named people"


def test_config_show_names_the_source_of_each_key(tmp_path: Path) -> None:
    (tmp_path / "wikivel.toml").write_text('[poll]\ninterval_s = 120\n')
    url = f"sqlite:///{tmp_path}/q.sqlite"
    shown = cli("--site", "commons:test", "config", "show", cwd=tmp_path,
                env_extra={"WIKIVEL_DB_URL": url, "PYTHONPATH": str(ROOT)})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == ("# from: defaults, wikivel.toml, environment variable WIKIVEL_DB_URL, the command line"), lines[0]
    assert f'url = "{url}"  # from environment variable WIKIVEL_DB_URL' in lines
    assert "interval_s = 120  # from wikivel.toml" in lines
    assert 'name = "commons:test"  # from the command line' in lines
    assert "claim_lease_s = 900" in lines  # a default: no comment
    # Still a settings file: the sources are TOML comments.
    import tomllib

    assert tomllib.loads(shown.stdout)["poll"]["interval_s"] == 120
    plain = cli("config", "show", cwd=tmp_path.parent)
    assert plain.stdout.splitlines()[0] == "# from: defaults", plain.stdout[:200]


def test_the_batch_pages_times_are_alike(queue) -> None:
    from wikivel_bot.queue.web_queries import recent_batches
    from wikivel_bot.types import DryRun

    store, _url = queue
    approve(store, 10004, "Q146")
    (claimed,) = store.claim_approved(1, "dry", dry_run=True)
    started = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=timezone.utc)
    store.record_edit(claimed.candidate_id, "b-20261125120000-abcd", DryRun("s"), started)
    (batch,) = recent_batches(store)
    assert batch.started is not None and batch.finished is not None
    assert batch.started.microsecond == 0 and batch.finished.microsecond == 0
    assert str(batch.started) == "2026-11-25 12:00:00"


def test_the_terminal_help_wraps_between_words() -> None:
    from wikivel_bot.review.terminal import HELP, render

    session = SimpleNamespace(current=None, total=0, message=HELP, label_of=lambda qid: qid,
                              page_url=lambda: "")
    for width in (100, 80, 57):
        text = render(session, width)  # type: ignore[arg-type]
        lines = text.rstrip("\n").split("\n")
        helped = [line for line in lines if line.startswith((">> ", "   "))]
        assert len(helped) > 1 and all(len(line) <= width for line in helped), (width, helped)
        # Every word of the help whole on one line: joined again, the lines give the help back.
        assert " ".join(line[3:] for line in helped) == HELP, (width, helped)
