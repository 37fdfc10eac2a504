"""A writer process frozen after its last check (SIGSTOP) and resumed after another writer took
its pair over adds no second statement (a write is never resent blindly).

``python -m wikivel_bot write`` runs in a subprocess against the Wikibase-like test wiki (a
change on a stale ``baserevid`` is patched onto the latest revision, so a late edit that is
not refused adds its statement a second time). The writer stops itself with a real SIGSTOP at
an exact point of ``commons/writer/edit_send.py``, chosen by a small wrapper that patches that module
before running the unchanged CLI (an outside signal could not hit a point microseconds wide):

* ``send``: in ``send_once``, after the last check *and* the freshness check, right before
  the request leaves: no check can help; the wiki refuses the late edit. On a file with
  structured data the statement GUID, the same for the writer that took over
  (``edit_group.statement_guid``), makes it an edit conflict; on a file that had none, its
  base revision has no MediaInfo, so Wikibase creates the entity afresh and fails to save it
  over the one the second writer made (``failed-save``); the first writer then re-reads once
  more and finds the pair taken over.
* ``check``: right after the last check, frozen for longer than ``fresh_s`` (a third of
  ``db.claim_lease_s``): on waking the writer checks again, finds the pair taken over and
  sends nothing.

While it is stopped its lease is moved into the past in the database (what a freeze longer
than the lease does), a second writer process takes the pair over and writes it, and only
then is the first one continued. Every step waits for an observable state (the process state
in ``/proc``, the second writer's exit); the timeouts only guard against a hang.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import select, update

from tests.test_writer_cli import child_env, db, start_writer  # noqa: F401 - db is a fixture
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    approve,
    audited_revisions,
    bot_revisions,
    depicts_on_wiki,
    edit_rows,
    states,
    targets,
    wiki,
)
from wikivel_bot.queue.tables import candidates

FILE = 10004
HANG_GUARD_S = 300
# A lease short enough that "frozen longer than fresh_s" (a third of it) takes seconds; no
# other writer runs until the test moves the lease into the past, so its length decides
# nothing else.
SHORT_LEASE_S = 30

# Runs the unchanged CLI after patching one point of edit_send to stop the process there,
# once: the first time the point is reached (the writer's first and only group edit).
FREEZER = '''
import os, runpy, signal, sys
from wikivel_bot.commons.writer import edit_send

point, frozen = os.environ["FREEZE_AT"], []

def freeze():
    if not frozen:
        frozen.append(True)
        os.kill(os.getpid(), signal.SIGSTOP)

if point == "send":
    real_send = edit_send.send_once
    def send_once(*args, **kwargs):
        freeze()
        return real_send(*args, **kwargs)
    edit_send.send_once = send_once
elif point == "check":
    real_check = edit_send._last_check
    def _last_check(*args, **kwargs):
        checked = real_check(*args, **kwargs)
        freeze()
        return checked
    edit_send._last_check = _last_check
else:
    raise SystemExit("FREEZE_AT must be send or check")
sys.argv = ["wikivel_bot", "write", "--once", *sys.argv[1:]]
runpy.run_module("wikivel_bot", run_name="__main__", alter_sys=True)
'''


def start_frozen_writer(env, tmp_path: Path, point: str) -> subprocess.Popen:
    script = tmp_path / "frozen_writer.py"
    script.write_text(FREEZER)
    return subprocess.Popen([sys.executable, str(script)], env={**env, "FREEZE_AT": point},
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def process_state(pid: int) -> str:
    """The one-letter state of a process in /proc ("T": stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def wait_until_stopped(proc: subprocess.Popen) -> float:
    """Wait for ``proc`` to stop itself; the monotonic time it was seen stopped."""
    deadline = time.monotonic() + HANG_GUARD_S
    while process_state(proc.pid) != "T":
        if proc.poll() is not None:
            pytest.fail(f"the writer ended without reaching its freeze point: {proc.communicate()[0]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the writer never reached its freeze point")
        time.sleep(0.02)
    return time.monotonic()


def claimed_by(store) -> list:
    with store.engine.connect() as conn:
        return [r.claimed_by for r in conn.execute(select(candidates.c.claimed_by))]


def wbeditentity_errors(server) -> list:
    return [r.error for r in server.requests if r.action == "wbeditentity"]


# (where the writer freezes, the file, what the wiki answers its late edit); Mallard on
# pond.jpg (10005) has structured data (P180 = Q25348), Village church.png (FILE) has none.
CASES = [("send", FILE, "failed-save"), ("send", 10005, "editconflict"), ("check", FILE, None)]


@pytest.mark.parametrize("point, page_id, refused", CASES)
def test_a_writer_frozen_after_its_last_check_adds_no_second_statement(wiki, db, tmp_path, point, page_id,  # noqa: F811
                                                                       refused) -> None:
    store, url = db
    before = targets(depicts_on_wiki(wiki, page_id))
    approve(store, page_id, "Q144")
    env = child_env(wiki, tmp_path, url)
    if point == "check":
        env["WIKIVEL_DB_CLAIM_LEASE_S"] = str(SHORT_LEASE_S)

    first, second = start_frozen_writer(env, tmp_path, point), None
    try:
        stopped_at = wait_until_stopped(first)
        (holder,) = [c for c in claimed_by(store) if c]
        assert holder.endswith(f":{first.pid}") and wiki.edits == []
        # A freeze longer than the lease: the first writer's lease is in the past.
        with store.engine.begin() as conn:
            conn.execute(update(candidates).values(claimed_at=datetime(2000, 1, 1)))

        second = start_writer(env, tmp_path)
        out_second, _ = second.communicate(timeout=HANG_GUARD_S)
        assert second.returncode == 0, out_second
        assert "1 written in 1 edit" in out_second, out_second
        if point == "check":
            # Frozen for longer than fresh_s since the last check (made before it was seen
            # stopped): the duration is the scenario itself, not a synchronisation.
            fresh_s = SHORT_LEASE_S / 3
            time.sleep(max(0.0, fresh_s + 1 - (time.monotonic() - stopped_at)))
    except BaseException:
        for proc in (first, second):  # a stopped process ends on SIGKILL too
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
        raise
    os.kill(first.pid, signal.SIGCONT)
    out_first, _ = first.communicate(timeout=HANG_GUARD_S)

    assert first.returncode == 0, out_first
    assert "0 written" in out_first and "1 left to another writer" in out_first, out_first
    # Once on the file, added by the second writer; the first one's late edit was refused
    # (send) or never sent (check).
    assert targets(depicts_on_wiki(wiki, page_id)) == before + ["Q144"]
    assert wbeditentity_errors(wiki) == ([None, refused] if point == "send" else [None])
    (row,) = edit_rows(store)
    statement = depicts_on_wiki(wiki, page_id)[-1]
    assert (row["outcome"], row["statement_id"]) == ("written", statement["id"])
    assert row["batch_id"] in out_second and row["batch_id"] not in out_first
    assert bot_revisions(wiki) == audited_revisions(store) == [row["revid"]]
    assert states(store) == {(page_id, "Q144"): "written"}
    assert claimed_by(store) == [None] and store.claims() == [], "a writer left a claim behind"
