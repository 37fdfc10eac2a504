"""A writer process that exits holds nothing, even after a reviewer revoked a pair mid-run.

``python -m wikivel_bot write`` in a subprocess claims two files' pairs. The test wiki holds
the answer to the first edit until the test releases it, after the reviewer has rejected the
second pair (pywikibot's read timeout is raised far above any hold, so nothing is resent).
The writer's last check before that edit fails (the lease is lost to the decision), it exits,
and no claim is left: the reject cleared it, so a later undo makes the pair claimable at once.
The order is fixed by the wiki's events, not by how fast the reject is recorded.
"""

from __future__ import annotations

import time

import pytest

from tests.test_writer_cli import child_env, db, start_writer  # noqa: F401 - db is a fixture
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    REVIEWER,
    approve,
    edits_of,
    site,
    states,
    wiki,
)
from wikivel_bot.types import DecisionAction

# A hang guard only: the test releases the held answer itself. pywikibot must not time out
# (and resend) while the answer is held: child_env's read timeout is longer than the hold.
HOLD_S = 600


def test_a_writer_that_exits_after_a_revoked_pair_leaves_no_claim(wiki, db, tmp_path) -> None:
    store, url = db
    approve(store, 10004, "Q146")
    approve(store, 10046, "Q146")
    held = wiki.faults.add("write", "hold_response", title="M10004", seconds=HOLD_S)

    proc = start_writer(child_env(wiki, tmp_path, url), tmp_path, "--batch-size", "5")
    try:
        deadline = time.monotonic() + 300  # a hang guard; the wait is for the wiki's event
        while not held.holding.wait(0.1):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the first edit never reached the wiki: {proc.communicate()[0]}")
        # The first edit's answer is held: the writer has not reached the second pair yet.
        decision = store.record_decision(10046, "Q146", DecisionAction.REJECT, REVIEWER, "web")
    finally:
        held.release()  # only now may the writer go on to its check of the second pair
    out, _ = proc.communicate(timeout=300)

    assert proc.returncode == 0, out
    assert edits_of(wiki, 10046) == [], "the writer edited a pair rejected before its last check"
    assert "1 written" in out and "1 left to another writer" in out, out
    assert states(store) == {(10004, "Q146"): "written", (10046, "Q146"): "rejected"}
    assert store.claims() == [], "the exited writer still holds a claim"
    store.undo_decision(decision)
    assert [e.page_id for e in store.claim_approved(5, "next")] == [10046]
