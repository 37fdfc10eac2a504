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
        cwd=str(ROOT), env=env, encoding="utf-8", timeout=120, dimensions=(40, 120),
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
        cwd=str(ROOT), env={**env, "WIKIVEL_REVIEW_REVIEWER": "Bo"}, encoding="utf-8", timeout=120,
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


def _screen_after(child, stream, screen) -> list:
    """Feed everything up to the next prompt into the emulator; the screen's rows."""
    child.expect_exact("review> ")
    stream.feed(child.before + child.after)
    return [row.rstrip() for row in screen.display]


def test_header_stays_on_an_80x24_screen_whatever_the_candidates(tmp_path: Path) -> None:
    """A file with twelve candidates, each with notes, a long description and a long page
    URL: on a real 80x24 terminal (pyte emulates the screen the pty output draws) the title,
    the description and "depicts now" stay visible while the selection walks to the last
    candidate; the page link points at the configured wiki; items are named beside QIDs."""
    pyte = pytest.importorskip("pyte")
    from wikivel_bot.types import Depiction

    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    items = [(f"Q{100 + i}", 0.9 - i / 100, f"item number {i}", "a thing that is shown here " * 3)
             for i in range(12)]
    title = "File:A rather long title of a photograph of many things on a table in Lyon.jpg"
    add_file(store, 1, items, title=title, description="Many things on a table. " * 20,
             categories=[f"Category number {i}" for i in range(10)], depicts=[Depiction("Q146")],
             notes=["ancestor Q35120 (entity) suppressed", "close to a more specific item"])
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    env.update(TERM="xterm", COLUMNS="80", LINES="24")
    api = "http://127.0.0.1:8765/w/api.php"
    child = pexpect.spawn(
        sys.executable, ["-m", "wikivel_bot", "--db-url", url, "--api-url", api, "review", "--reviewer", "Ann"],
        cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(24, 80),
    )
    screen = pyte.Screen(80, 24)
    stream = pyte.Stream(screen)
    try:
        for step in range(12):
            rows = _screen_after(child, stream, screen)
            text = "\n".join(rows)
            assert rows[0].startswith("== file 1 of 1: M1  File:A rather long title"), text
            assert any(r.startswith("description: Many things on a table.") for r in rows), text
            assert any(r.startswith("depicts now: Q146 (house cat)") for r in rows), text
            assert "page:        http://127.0.0.1:8765/wiki/File:A_rather_long_title" in text, text
            assert any(r.startswith(f"> #{step + 1:<2} Q{100 + step}") for r in rows), text
            assert rows[-1].startswith("review>") or "review>" in text
            child.send(DOWN)
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_render_fits_any_height_and_keeps_the_selection() -> None:
    """The fitting itself, for every terminal height from 14 rows up: never more rows than
    the terminal has (long lines counted as they wrap), the title first, the selection shown.
    Below 14 rows a 170-character page URL alone takes three; the fitting does its best there."""
    from types import SimpleNamespace

    from wikivel_bot.core.review_rules import ReviewCandidate, ReviewFile
    from wikivel_bot.review.session import FileView
    from wikivel_bot.review.terminal import render
    from wikivel_bot.types import CandidateState, Depiction

    candidates = tuple(
        ReviewCandidate(candidate_id=i, qid=f"Q{100 + i}", score=0.9 - i / 100, rank=i + 1, linker="zero-shot",
                        state=CandidateState.PROPOSED, label=f"item {i}", description="shown " * 20,
                        notes=("ancestor suppressed", "close to a more specific item"))
        for i in range(12))
    file = ReviewFile(file_id=1, page_id=1, title="File:" + "Long title " * 12 + ".jpg",
                      thumb_url="https://upload.wikimedia.org/" + "x" * 150, description="words " * 100,
                      categories=tuple(f"Category {i}" for i in range(20)), depicts=(Depiction("Q146"),),
                      candidates=candidates)
    for height in range(14, 40):
        for cursor in (0, 5, 11):
            session = SimpleNamespace(current=FileView(file, cursor=cursor, number=1), total=1, message="approved Q1",
                                      label_of=lambda qid: "house cat",
                                      page_url=lambda: "https://commons.wikimedia.org/wiki/" + "L" * 120)
            text = render(session, 80, height)  # type: ignore[arg-type]
            lines = text.rstrip("\n").split("\n")
            rows = sum(max(1, -(-len(line) // 80)) for line in lines)
            assert rows <= height - 1, (height, cursor, text)
            assert lines[0].startswith("== file 1 of 1: M1")
            assert any(line.startswith(f"> #{cursor + 1:<2} Q{100 + cursor}") for line in lines), (height, cursor, text)
            assert any(line.startswith("depicts now: Q146 (house cat)") for line in lines)
            assert lines[-1] == ">> approved Q1"
