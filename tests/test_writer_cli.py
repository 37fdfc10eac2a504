"""``wikivel-bot write`` / ``revert`` end to end, and the writer killed mid-run.

The crash tests run the real command in a subprocess (``python -m wikivel_bot write``) with
pywikibot configured the way an operator does it (``PYWIKIBOT_DIR`` with a user-config.py),
SIGKILL it at a chosen point and run it again: no statement may appear twice, no approval may
be lost, and every pair of a file's grouped edit is recorded with that edit's revision. The
kill points are made exact by the test wiki holding one answer: ``hold_response`` saves the
write and then keeps the answer back (the API succeeded, the queue has not heard of it), a
held read stops the writer before it writes anything; a long put throttle holds the writer
between its re-read and its edit.
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
    approve_all,
    audited_revisions,
    bot_revisions,
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
# The writer must never give up on a held answer by itself before the test kills it (or
# releases the answer): a read timeout far above any wait here, so no kill point depends on
# how fast the test notices the hold on a loaded machine.
PATIENT_READS = "socket_timeout = (30, 900)\n"


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
        "PYWIKIBOT_DIR": str(write_config(tmp_path / "operator-pywikibot", wiki, extra=PATIENT_READS)),
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


def kill_when(proc: subprocess.Popen, ready, what: str, timeout_s: float = 300) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` holds (``timeout_s`` only guards a hang)."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"writer ended before {what}: {proc.stdout.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def bot_statements(wiki, page_id: int, qid: str) -> List[dict]:
    return [s for s in depicts_on_wiki(wiki, page_id) if targets([s]) == [qid]]


def test_killed_after_the_api_call_before_the_commit(wiki, db, tmp_path) -> None:
    store, url = db
    approve(store, 10004, "Q146")  # written and committed before the kill
    # One edit for three pairs: its answer is held back; the writer dies waiting.
    approve_all(store, 10046, ["Q146", "Q3736439", "Q144"], prominent=["Q3736439"])
    held = wiki.faults.add("wbeditentity", "hold_response", title="M10046", seconds=120)
    env = child_env(wiki, tmp_path, url)

    proc = start_writer(env, tmp_path)
    kill_when(proc, lambda: len(edits_of(wiki, 10046)) == 1, "the held write to be saved")

    assert held.fired == 1
    assert [r["page_id"] for r in edit_rows(store)] == [10004]  # the group never got recorded
    assert {k: v for k, v in states(store).items() if k[0] == 10046} == {
        (10046, q): "approved" for q in ("Q146", "Q3736439", "Q144")}
    (saved,) = edits_of(wiki, 10046)
    guids = {f"Q{s['mainsnak']['datavalue']['value']['numeric-id']}": s["id"]
             for s in saved.data["claims"]["P180"]}
    wiki.faults.clear()

    writes_before = wiki.write_count()
    out = run_writer(env, tmp_path)
    assert f"released 3 claims of write:" in out and f":{proc.pid} (that process is gone)" in out

    assert wiki.write_count() == writes_before  # nothing was sent again
    for qid in ("Q146", "Q3736439", "Q144"):
        assert len(bot_statements(wiki, 10046, qid)) == 1
    assert len(bot_statements(wiki, 10004, "Q146")) == 1 and len(edits_of(wiki, 10004)) == 1
    assert set(states(store).values()) == {"written"}
    # Recovered from the history, every pair of the group (its requests were noted before
    # they left): the audit trail has the group's
    # revision and each pair's own statement, so revert can find them ...
    killed_batch = edit_rows(store)[0]["batch_id"]
    rows = {r["qid"]: r for r in edit_rows(store) if r["page_id"] == 10046}
    assert {q: (r["outcome"], r["revid"], r["statement_id"], r["batch_id"]) for q, r in rows.items()} == {
        q: ("written", saved.new_revid, guid, killed_batch) for q, guid in guids.items()}
    # ... under the batch of the killed run that made the edit, so that
    # `revert --batch` with the id from the edit summary finds it.
    assert f"batch {killed_batch})" in saved.summary
    assert f"batch {killed_batch}" not in out  # the recovering run has a batch of its own
    # Settled from the requests noted before they left (commons.writer.unsettled).
    assert "3 edits whose answer never came found applied late" in out
    assert bot_revisions(wiki) == audited_revisions(store)


def test_killed_while_waiting_for_the_put_throttle(wiki, db, tmp_path) -> None:
    """Between the re-read and the edit: the writer has its token and waits out a long put
    throttle when it is killed. Nothing was sent; the next run writes the group once."""
    store, url = db
    approve_all(store, 10004, ["Q146", "Q144"])
    slow = child_env(wiki, tmp_path, url)
    # A throttle far longer than the test could take to notice the token request and kill.
    slow["PYWIKIBOT_DIR"] = str(write_config(tmp_path / "slow-pywikibot", wiki,
                                             extra="put_throttle = 600\nmaxthrottle = 1200\n" + PATIENT_READS))

    proc = start_writer(slow, tmp_path)
    kill_when(proc, lambda: any("csrf" in r.params.get("type", "") for r in wiki.requests),
              "the writer's token request, right before the throttle wait")
    assert wiki.write_count() == 0 and edit_rows(store) == []
    assert set(states(store).values()) == {"approved"}

    out = run_writer(child_env(wiki, tmp_path, url), tmp_path)
    assert f":{proc.pid} (that process is gone)" in out and "2 written" in out
    (edit,) = wiki.edits
    assert sorted(targets(depicts_on_wiki(wiki, 10004))) == ["Q144", "Q146"]
    assert bot_revisions(wiki) == audited_revisions(store) == [edit.new_revid]


def test_killed_during_the_re_read_before_writing(wiki, db, tmp_path) -> None:
    store, url = db
    approve_all(store, 10004, ["Q146", "Q144"], prominent=["Q146"])
    # The writer's read of the file's latest revision (for MediaInfo) is held.
    held = wiki.faults.add("revisions", "hold_response", title="File:Village church.png", seconds=120)
    env = child_env(wiki, tmp_path, url)

    proc = start_writer(env, tmp_path)
    kill_when(proc, lambda: held.fired == 1, "the re-read")
    assert wiki.write_count() == 0
    assert set(states(store).values()) == {"approved"} and edit_rows(store) == []
    wiki.faults.clear()

    out = run_writer(env, tmp_path)
    assert f":{proc.pid} (that process is gone)" in out
    statements = depicts_on_wiki(wiki, 10004)
    assert targets(statements) == ["Q146", "Q144"]
    assert [s["rank"] for s in statements] == ["preferred", "normal"]
    assert wiki.write_count() == 1 and wiki.edits[0].tags == ["wikivel-bot"]
    assert set(states(store).values()) == {"written"}
    assert "2 written in 1 edit\n" in out and "batch b-" in out  # one edit per file
    assert bot_revisions(wiki) == audited_revisions(store)


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
    dry_batch = edit_rows(store)[-1]["batch_id"]
    nothing = runner.invoke(main, ["revert", "--batch", dry_batch], env=env)
    assert nothing.exit_code == 0, nothing.output
    assert "it was a dry run" in nothing.output and "nothing to revert" in nothing.output
    assert "statements removed" not in nothing.output and wiki.write_count() == 0

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
