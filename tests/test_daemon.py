"""`wikivel-bot run` as a subprocess against the local test wiki.

The daemon runs the tiny open_clip model with random weights (a few MB, CPU) on the starter
label set; the wiki gets new uploads while it runs. Checked: uploads are picked up and
linked, approvals made meanwhile are written (simulated in dry-run), the stop page pauses
writing, SIGTERM exits cleanly, kill -9 and a restart lose and duplicate nothing, and two
daemons on one PostgreSQL queue share the work without overlap.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from tests.linker_support import tiny_model_file
from tests.testwiki import TestWiki
from tests.testwiki.pwb import write_config
from wikivel_bot.queue import migrate, monitor
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.types import CandidateState, DecisionAction

ROOT = Path(__file__).resolve().parents[1]
STOP_PAGE = "User:WikivelBot/Stop"


@pytest.fixture
def wiki():
    with TestWiki.start() as running:
        yield running


def queue_at(url: str) -> Store:
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    return Store(engine)


def daemon_env(wiki: TestWiki, tmp_path: Path, url: str, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKIVEL_", "PYWIKIBOT_"))}
    env.update({
        "PYWIKIBOT_DIR": str(write_config(tmp_path / "pywikibot", wiki)),
        "PYTHONPATH": str(ROOT),
        "WIKIVEL_DB_URL": url,
        # The default 15-minute lease: a killed daemon's claims must come back because the
        # restarted one sees that process is gone, not because a short lease ran out.
        "WIKIVEL_LINKER_MODEL": str(tiny_model_file()),
        "WIKIVEL_LINKER_PRETRAINED": "",
        "WIKIVEL_LINKER_WEIGHTS": "random",
        "WIKIVEL_LINKER_DEVICE": "cpu",
        "WIKIVEL_LINKER_CACHE_DIR": str(tmp_path / "cache"),
        "WIKIVEL_POLL_INTERVAL_S": "1",
        "WIKIVEL_DAEMON_LINK_INTERVAL_S": "1",
        "WIKIVEL_DAEMON_STOP_PAGE": STOP_PAGE,
        "WIKIVEL_SITE_OPERATOR_CONTACT": "User:Tester",
    })
    env.update(extra)
    return env


def start_daemon(env: Dict[str, str], cwd: Path, *args: str, log: Path) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen([sys.executable, "-m", "wikivel_bot", "run", *args], env=env, cwd=cwd,
                            stdout=handle, stderr=subprocess.STDOUT, text=True)


def wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen, log: Path,
             timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"daemon exited ({proc.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


def stop(proc: subprocess.Popen, log: Path, sig: int = signal.SIGTERM) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"daemon did not stop on {sig}:\n{log.read_text()[-3000:]}")


def linked_page_ids(store: Store) -> List[int]:
    from sqlalchemy import select

    from wikivel_bot.queue.tables import files

    with store.transaction() as conn:
        return sorted(conn.execute(select(files.c.page_id).where(files.c.state == "linked")).scalars())


def all_page_ids(store: Store) -> List[int]:
    from sqlalchemy import select

    from wikivel_bot.queue.tables import files

    with store.transaction() as conn:
        return sorted(conn.execute(select(files.c.page_id)).scalars())


def settled(store: Store) -> bool:
    """Every eligible file has been fetched and linked (or given a reason)."""
    counts = store.counts()["files"]
    return counts["discovered"] == 0 and counts["fetched"] == 0 and counts["linked"] > 0


def proposed_qids(store: Store) -> set:
    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates

    with store.transaction() as conn:
        return set(conn.execute(select(candidates.c.qid)).scalars())


def starter_people() -> set:
    from wikivel_bot.labels import default_label_set

    starter = default_label_set()
    people = {q for q in starter.qids if starter.instance_of(q) == ["Q5"]}
    assert len(people) >= 50
    return people


def set_stop_page(wiki: TestWiki, text: str) -> None:
    page = wiki.store.page(STOP_PAGE)
    wiki.store.add_revision(page, {"main": ("wikitext", text)}, user="Admin", comment="kill switch")


def approve_first(store: Store, page_id: int, wiki: Optional[TestWiki] = None) -> str:
    """Approve the best proposed candidate (with ``wiki``: the best whose item the wiki has;
    random weights rank any item of the starter set first)."""
    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates, files

    with store.transaction() as conn:
        ranked = conn.execute(
            select(candidates.c.qid).join(files, files.c.id == candidates.c.file_id)
            .where(files.c.page_id == page_id, candidates.c.state == "proposed")
            .order_by(candidates.c.rank)
        ).scalars().all()
    qid = next((q for q in ranked if wiki is None or wiki.entity(q) is not None), None)
    assert qid, f"no proposed candidate for M{page_id}"
    store.record_decision(page_id, qid, DecisionAction.APPROVE, "Ann", "cli")
    return qid


def _has_known_candidate(store: Store, page_id: int, wiki: TestWiki) -> bool:
    """Some proposed candidate of the file is an item the test wiki has (so it can be written)."""
    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates, files

    with store.transaction() as conn:
        qids = conn.execute(select(candidates.c.qid).join(files, files.c.id == candidates.c.file_id)
                            .where(files.c.page_id == page_id, candidates.c.state == "proposed")).scalars().all()
    return any(wiki.entity(q) is not None for q in qids)


def test_dry_run_daemon_end_to_end(wiki: TestWiki, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = queue_at(url)
    log = tmp_path / "daemon.log"
    proc = start_daemon(daemon_env(wiki, tmp_path, url), tmp_path, "--dry-run", log=log)
    try:
        wait_for(lambda: settled(store), "the fixture uploads to be linked", proc, log)
        # The default safety settings hold on the starter set: no person is proposed.
        assert not proposed_qids(store) & starter_people()
        # An upload while the daemon runs is picked up.
        new = wiki.add_upload("Daemon test upload.jpg", width=640, height=480)
        wait_for(lambda: new.pageid in linked_page_ids(store), "the new upload to be linked", proc, log)
        # An approval made meanwhile is written — simulated: nothing reaches the wiki.
        writes_before = wiki.write_count()
        qid = approve_first(store, new.pageid)
        wait_for(lambda: len(store.audit_rows(page_id=new.pageid)) == 1,
                 "the approval to be handled in dry-run", proc, log)
        assert wiki.write_count() == writes_before == 0
        (row,) = store.audit_rows(page_id=new.pageid)
        assert (row["qid"], row["outcome"], row["reviewer"]) == (qid, "dry_run", "Ann")
        # The approval is kept for a real write (a dry run is only an audit record).
        assert store.counts()["candidates"][CandidateState.APPROVED.value] == 1
        # The kill switch: anything but "run" pauses writing, and status says why.
        set_stop_page(wiki, "stop — reverting a bad batch")
        wait_for(lambda: monitor.get_states(store).get("writing", {}).get("paused") is True,
                 "writing to pause", proc, log)
        second = linked_page_ids(store)[0]
        approve_first(store, second)
        time.sleep(3)  # several write rounds (1 s apart) see the stop page meanwhile
        assert store.audit_rows(page_id=second) == []
        assert "reverting a bad batch" in monitor.get_states(store)["writing"]["reason"]
        set_stop_page(wiki, "run")
        wait_for(lambda: len(store.audit_rows(page_id=second)) == 1, "writing to resume", proc, log)
        # Rounds went on meanwhile: the first pair was simulated once, not every cycle.
        assert [r["outcome"] for r in store.audit_rows(page_id=new.pageid)] == ["dry_run"]
        assert store.counts()["candidates"][CandidateState.APPROVED.value] == 2
    finally:
        code = stop(proc, log)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert "stage=daemon outcome=stopped" in text
    assert re.search(r"stage=link outcome=linked file=M\d+ candidates=\d+", text)
    (worker,) = [v for k, v in monitor.get_states(store).items() if k.startswith("worker:")]
    assert worker["running"] is False and worker["dry_run"] is True
    assert wiki.write_count() == 0


def test_kill_and_restart_lose_and_duplicate_nothing(wiki: TestWiki, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = queue_at(url)
    env = daemon_env(wiki, tmp_path, url, WIKIVEL_WRITE_ENABLED="true")
    log = tmp_path / "first.log"
    proc = start_daemon(env, tmp_path, log=log)
    wait_for(lambda: store.counts()["files"]["linked"] >= 3, "some files to be linked", proc, log)
    proc.kill()  # kill -9 in the middle of fetching and linking
    proc.wait(timeout=30)
    log2 = tmp_path / "second.log"
    proc = start_daemon(env, tmp_path, log=log2)
    try:
        wait_for(lambda: settled(store), "the restart to finish the queue", proc, log2)
        target = next(p for p in linked_page_ids(store) if _has_known_candidate(store, p, wiki))
        qid = approve_first(store, target, wiki)
        wait_for(lambda: store.counts()["candidates"][CandidateState.WRITTEN.value] == 1,
                 "the approval to be written", proc, log2)
    finally:
        stop(proc, log2)
    # Nothing lost: every file the upload log named has a row with a final state.
    counts = store.counts()["files"]
    assert counts["discovered"] == counts["fetched"] == 0
    # (a deleted file's log entry has no page id any more: nothing to queue for it)
    uploaded = {e.logpage for e in wiki.store.upload_events() if e.action == "upload" and e.logpage}
    assert set(all_page_ids(store)) == uploaded
    # Nothing duplicated: one statement for the approval, written once.
    writes = [e for e in wiki.edits if e.entity == f"M{target}"]
    assert len(writes) == 1
    depicts = wiki.entity(f"M{target}")["statements"]["P180"]
    assert [s["mainsnak"]["datavalue"]["value"]["id"] for s in depicts].count(qid) == 1


def test_two_daemons_share_one_postgresql_queue(wiki: TestWiki, tmp_path: Path, _scratch_databases) -> None:
    url = _scratch_databases["postgresql"].get()
    store = queue_at(url)
    from tests.db_support import empty_tables

    empty_tables(url)
    env = daemon_env(wiki, tmp_path, url)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [start_daemon(env, tmp_path, log=log) for log in logs]
    try:
        wait_for(lambda: settled(store), "both daemons to finish the queue", procs[0], logs[0], timeout_s=180)
    finally:
        codes = [stop(p, log) for p, log in zip(procs, logs)]
    assert codes == [0, 0]
    linked = [set(re.findall(r"stage=link outcome=linked file=M(\d+)", log.read_text())) for log in logs]
    assert not linked[0] & linked[1], "a file was linked by both daemons"
    assert {int(p) for p in linked[0] | linked[1]} == set(linked_page_ids(store))
    fetched = [set(re.findall(r"stage=fetch outcome=(?:fetched|unavailable|ineligible) file=M(\d+)", log.read_text())) for log in logs]
    assert not fetched[0] & fetched[1], "a file was fetched by both daemons"
