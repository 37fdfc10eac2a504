"""A full terminal review through a pseudo-terminal: the real command, real keys, real database.

`python -m wikivel_bot review` runs in a pty (so it reads single keys in cbreak mode, arrow
keys as escape sequences), and the test presses: down, 1, 3, s, u, 2, q.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.db_support import open_store
from tests.review_support import CAT, DOG, HUMAN, PARK, TABBY, add_file, decision_rows, pair_states
from wikivel_bot.queue import migrate

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parents[1]
DOWN = "\x1b[B"


def test_full_session_through_a_pty(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG, HUMAN], title="File:Cat on a sofa.jpg", categories=["Cats on sofas"])
    add_file(store, 2, [TABBY, PARK], title="File:Tabby in a park.jpg")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    env.update(TERM="xterm", COLUMNS="120", LINES="40")
    child = pexpect.spawn(
        sys.executable, ["-m", "wikivel_bot", "--db-url", url, "review", "--reviewer", "Ann"],
        cwd=str(ROOT), env=env, encoding="utf-8", timeout=20, dimensions=(40, 120),
    )
    try:
        child.expect_exact("file 1 of 2: M1  File:Cat on a sofa.jpg")
        child.expect_exact("categories:  Cats on sofas")
        child.expect(r">\s#1\s+Q146\s+0\.910\s+house cat - domesticated feline")
        child.expect_exact("review> ")

        child.send(DOWN)  # the cursor to #2 (Q144, dog)
        child.expect(r">\s#2\s+Q144")
        child.expect_exact("review> ")
        child.send("1")  # approve dog; the cursor moves on to #3
        child.expect_exact(">> approved Q144 (dog)")
        child.expect_exact("review> ")
        child.send("3")  # reject human; the cursor wraps to #1, the only open one
        child.expect(r">\s#1\s+Q146")
        child.expect_exact(">> rejected Q5 (human)")
        child.expect_exact("review> ")
        child.send("s")  # skip the cat: M1 is done, M2 comes
        child.expect_exact("file 2 of 2: M2  File:Tabby in a park.jpg")
        child.expect_exact(">> skipped Q146 (house cat)")
        child.expect_exact("review> ")
        child.send("u")  # undo the skip: back to M1 with the cat selected
        child.expect_exact("file 1 of 2: M1")
        child.expect(r">\s#1\s+Q146.*\n.*Q144.*\[approved\]")
        child.expect_exact(">> undone: Q146 on M1 is open again")
        child.expect_exact("review> ")
        child.send("2")  # approve the cat as prominent: M1 done, back to M2
        child.expect_exact("M2  File:Tabby in a park.jpg")
        child.expect_exact(">> prominent Q146 (house cat)")
        child.expect_exact("review> ")
        child.send("q")
        child.expect_exact("review session (Ann): approved 1, prominent 1, rejected 1, skipped 0, undone 1")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    assert pair_states(store) == {
        (1, "Q146"): ("approved", 1), (1, "Q144"): ("approved", 0), (1, "Q5"): ("rejected", 0),
        (2, "Q1050479"): ("proposed", 0), (2, "Q22698"): ("proposed", 0),
    }
    assert decision_rows(store) == [
        (1, "Q144", "approve", "Ann", "terminal"), (1, "Q5", "reject", "Ann", "terminal"),
        (1, "Q146", "approve_prominent", "Ann", "terminal"),
    ]
    store.close()


def test_ctrl_c_ends_the_session_with_its_summary(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG])
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    child = pexpect.spawn(
        sys.executable, ["-m", "wikivel_bot", "--db-url", url, "review"],
        cwd=str(ROOT), env={**env, "WIKIVEL_REVIEW_REVIEWER": "Bo"}, encoding="utf-8", timeout=20,
    )
    try:
        child.expect_exact("review> ")
        child.send("3")
        child.expect_exact(">> rejected Q146 (house cat)")
        child.expect_exact("review> ")
        child.sendintr()
        child.expect_exact("review session (Bo): approved 0, prominent 0, rejected 1, skipped 0, undone 0")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0 and "Traceback" not in (child.before or "")
    assert pair_states(store)[(1, "Q146")] == ("rejected", 0)
    store.close()
