"""``wikivel-bot write`` / ``revert`` end to end, and the writer killed mid-run.

The crash tests run the real command in a subprocess (``python -m wikivel_bot write``) with
pywikibot configured the way an operator does it (``PYWIKIBOT_DIR`` with a user-config.py),
SIGKILL it at a chosen point and run it again: no statement may appear twice and no
approval may be lost. The kill points are made exact by the test wiki holding one answer:
``hold_response`` saves the write and then keeps the answer back (the API succeeded, the
queue has not heard of it), a held read stops the writer before it writes anything.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest
from click.testing import CliRunner

from tests.testwiki.pwb import write_config
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    approve,
    depicts_on_wiki,
    edit_rows,
    edits_of,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.cli import main
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(tmp_path: Path):
    """A queue on a SQLite file (real clock: the subprocess shares it) and its URL."""
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    store = Store(engine)
    yield store, url
    store.close()


def child_env(wiki, tmp_path: Path, url: str) -> Dict[str, str]:
    """The environment of an operator's shell: pywikibot from its directory, settings from
    WIKIVEL_* variables. The claim lease is the default (15 minutes): a killed writer's pairs
    must come back because the next writer sees that process is gone, not by waiting."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKIVEL_", "PYWIKIBOT_"))}
    env.update({
        "PYWIKIBOT_DIR": str(write_config(tmp_path / "operator-pywikibot", wiki)),
        "WIKIVEL_DB_URL": url,
        # site.name = commons (the default): write_config registers the test wiki *as*
        # pywikibot's commons family, as an operator's family file would.
        "WIKIVEL_WRITE_TAGS": "wikivel-bot",
        "PYTHONPATH": str(ROOT),
    })
    return env


def start_writer(env: Dict[str, str], cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "wikivel_bot", "write", "--once", *args],
                            env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def run_writer(env: Dict[str, str], cwd: Path) -> str:
    proc = start_writer(env, cwd)
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, out
    return out


def kill_when(proc: subprocess.Popen, ready, what: str, timeout_s: float = 60) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` holds."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"writer ended before {what}: {proc.stdout.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def bot_statements(wiki, page_id: int, qid: str) -> List[dict]:
    return [s for s in depicts_on_wiki(wiki, page_id) if targets([s]) == [qid]]


def test_killed_after_the_api_call_before_the_commit(wiki, db, tmp_path) -> None:
    store, url = db
    approve(store, 10004, "Q146")  # written and committed before the kill
    approve(store, 10046, "Q146")  # its answer is held back; the writer dies waiting
    held = wiki.faults.add("wbsetclaim", "hold_response", title="M10046", seconds=120)
    env = child_env(wiki, tmp_path, url)

    proc = start_writer(env, tmp_path)
    kill_when(proc, lambda: len(edits_of(wiki, 10046)) == 1, "the held write to be saved")

    assert held.fired == 1
    assert states(store) == {(10004, "Q146"): "written", (10046, "Q146"): "approved"}
    assert [r["page_id"] for r in edit_rows(store)] == [10004]  # the write never got recorded
    (saved,) = edits_of(wiki, 10046)
    wiki.faults.clear()

    writes_before = wiki.write_count()
    out = run_writer(env, tmp_path)
    assert f"released 1 claims of write:" in out and f":{proc.pid} (that process is gone)" in out

    assert wiki.write_count() == writes_before  # nothing was sent again
    assert len(bot_statements(wiki, 10046, "Q146")) == 1
    assert len(bot_statements(wiki, 10004, "Q146")) == 1 and len(edits_of(wiki, 10004)) == 1
    assert states(store) == {(10004, "Q146"): "written", (10046, "Q146"): "written"}
    row = edit_rows(store)[-1]
    # Recovered from the history: the audit trail has the statement, so revert can find it.
    assert (row["page_id"], row["outcome"], row["statement_id"], row["revid"]) == (
        10046, "written", saved.claim["id"], saved.new_revid)
    # ... under the batch of the killed run that made the edit, so that
    # `revert --batch` with the id from the edit summary finds it.
    killed_batch = edit_rows(store)[0]["batch_id"]
    assert row["batch_id"] == killed_batch and f"batch {killed_batch})" in saved.summary
    assert f"batch {killed_batch}" not in out  # the recovering run has a batch of its own
    assert "1 written" in out


def test_killed_during_the_re_read_before_writing(wiki, db, tmp_path) -> None:
    store, url = db
    approve(store, 10004, "Q146", prominent=True)
    # The writer's read of the file's latest revision (for MediaInfo) is held.
    held = wiki.faults.add("revisions", "hold_response", title="File:Village church.png", seconds=120)
    env = child_env(wiki, tmp_path, url)

    proc = start_writer(env, tmp_path)
    kill_when(proc, lambda: held.fired == 1, "the re-read")
    assert wiki.write_count() == 0
    assert states(store) == {(10004, "Q146"): "approved"} and edit_rows(store) == []
    wiki.faults.clear()

    out = run_writer(env, tmp_path)
    assert f":{proc.pid} (that process is gone)" in out
    (statement,) = depicts_on_wiki(wiki, 10004)
    assert targets([statement]) == ["Q146"] and statement["rank"] == "preferred"
    assert wiki.write_count() == 1 and wiki.edits[0].tags == ["wikivel-bot"]
    assert states(store) == {(10004, "Q146"): "written"}
    assert "1 written" in out and "batch b-" in out


def test_write_and_revert_commands(wiki, site, db, tmp_path) -> None:
    """In-process through click: dry run, real run, revert of the batch."""
    store, url = db
    approve(store, 10004, "Q146")
    approve(store, 10001, "Q146")  # already depicted
    env = {"WIKIVEL_DB_URL": url}  # site.name = commons: the site fixture made that the test wiki
    runner = CliRunner()

    dry = runner.invoke(main, ["write", "--once", "--dry-run"], env=env)
    assert dry.exit_code == 0, dry.output
    assert wiki.write_count() == 0
    assert "1 dry-run (would have been written" in dry.output and "1 skipped" in dry.output
    assert states(store)[(10004, "Q146")] == "approved"  # the trial's approval is kept

    from pywikibot import config

    config.simulate = False  # a new process would start without it
    approve(store, 10046, "Q146")
    real = runner.invoke(main, ["write", "--batch-size", "1"], env=env)
    assert real.exit_code == 0, real.output
    assert "2 written" in real.output
    batch = edit_rows(store)[-1]["batch_id"]
    assert f"batch {batch}" in real.output and batch in wiki.edits[-1].summary

    unknown = runner.invoke(main, ["revert", "--batch", "b-nope"], env=env)
    assert unknown.exit_code != 0 and "no batch 'b-nope'" in unknown.output

    undone = runner.invoke(main, ["revert", "--batch", batch], env=env)
    assert undone.exit_code == 0, undone.output
    assert "2 statements removed" in undone.output
    assert depicts_on_wiki(wiki, 10046) == [] and depicts_on_wiki(wiki, 10004) == []
    assert states(store)[(10046, "Q146")] == "reverted"
    assert states(store)[(10004, "Q146")] == "reverted"
    assert wiki.edits[-1].action == "wbremoveclaims" and batch in wiki.edits[-1].summary
