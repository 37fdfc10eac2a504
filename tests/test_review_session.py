"""ReviewSession and the terminal loop, driven by key tokens (no terminal needed)."""

from __future__ import annotations

import io
import os

import pytest

from tests.review_support import CAT, DOG, HUMAN, PARK, T0, TABBY, add_file, decision_rows, pair_states
from wikivel_bot.core.review_rules import ReviewFilter
from wikivel_bot.queue.store import Store
from wikivel_bot.review.keys import LineKeys, TerminalKeys, line_tokens
from wikivel_bot.review.session import ReviewSession, SessionCounts
from wikivel_bot.review.terminal import render, run_review
from wikivel_bot.types import DecisionAction, Written


def two_files(store: Store) -> None:
    add_file(store, 1, [CAT, DOG, HUMAN])
    add_file(store, 2, [TABBY, PARK])


def test_decisions_move_the_cursor_then_the_file(store: Store) -> None:
    two_files(store)
    session = ReviewSession(store, "Ann")
    session.start()
    assert session.total == 2 and session.current.file.mid == "M1"
    session.move(1)
    session.decide(DecisionAction.APPROVE)  # Q144
    assert session.current.cursor == 2  # the next open candidate
    session.decide(DecisionAction.REJECT)  # Q5
    assert session.current.cursor == 0  # wrapped to the only open one
    session.decide(DecisionAction.SKIP)  # Q146
    assert session.current.file.mid == "M2"
    states = pair_states(store)
    assert states[(1, "Q144")] == ("approved", 0) and states[(1, "Q5")] == ("rejected", 0)
    assert states[(1, "Q146")] == ("proposed", 0)
    counts = session.counts
    assert (counts.approved, counts.rejected, counts.skipped, counts.files) == (1, 1, 1, 2)


def test_undo_goes_back_to_the_earlier_file_and_returns(store: Store) -> None:
    two_files(store)
    session = ReviewSession(store, "Ann")
    session.start()
    for _ in range(3):
        session.decide(DecisionAction.APPROVE)
    assert session.current.file.mid == "M2"
    session.move(1)
    session.undo()  # the last approval was Q5 on M1
    assert session.current.file.mid == "M1" and session.current.cursor == 2
    assert pair_states(store)[(1, "Q5")] == ("proposed", 0)
    session.decide(DecisionAction.APPROVE_PROMINENT)
    assert session.current.file.mid == "M2" and session.current.cursor == 1  # where it was left
    assert pair_states(store)[(1, "Q5")] == ("approved", 1)
    assert (session.counts.approved, session.counts.prominent, session.counts.undone) == (2, 1, 1)
    assert "undone 1" in session.counts.summary("Ann")


def test_skip_the_rest_of_a_file_is_one_undo_step(store: Store) -> None:
    two_files(store)
    session = ReviewSession(store, "Ann")
    session.start()
    session.decide(DecisionAction.REJECT)
    session.skip_file()
    assert session.current.file.mid == "M2" and session.counts.skipped == 2
    session.undo()
    assert session.current.file.mid == "M1" and session.current.marks == ["rejected", "", ""]
    assert [r[2] for r in decision_rows(store)] == ["reject"]


def test_a_skipped_file_is_not_shown_again_in_the_session(store: Store) -> None:
    two_files(store)
    session = ReviewSession(store, "Ann")
    session.start()
    session.skip_file()
    session.skip_file()
    assert session.finished
    session.skip_file()  # nothing shown: nothing happens
    assert session.counts.files == 2
    # A new session sees the skipped pairs again: skip is temporary.
    again = ReviewSession(store, "Bob")
    again.start()
    assert again.current.file.mid == "M1"


def test_a_pair_decided_elsewhere_meanwhile_is_marked_not_overwritten(store: Store) -> None:
    two_files(store)
    session = ReviewSession(store, "Ann")
    session.start()
    store.record_decision(1, "Q146", DecisionAction.REJECT, "Bob", "web")
    session.decide(DecisionAction.APPROVE)
    assert session.current.marks[0] == "already rejected by Bob elsewhere"
    assert session.current.cursor == 1
    assert pair_states(store)[(1, "Q146")] == ("rejected", 0) and session.counts.approved == 0


def test_another_reviewers_approval_is_never_replaced_from_the_terminal(store: Store) -> None:
    """Bob approves while the pair is on Ann's screen; Ann's reject, approve,
    prominent or skip is refused with who decided what, and nothing of hers is recorded."""
    two_files(store)
    actions = (DecisionAction.REJECT, DecisionAction.APPROVE_PROMINENT, DecisionAction.APPROVE,
               DecisionAction.SKIP)
    sessions = [ReviewSession(store, "Ann") for _ in actions]
    for session in sessions:
        session.start()  # each shows M1 with the cat waiting and selected
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Bob", "web")
    for session, action in zip(sessions, actions):
        assert session.current.file.candidates[0].qid == "Q146"
        session.decide(action)
        assert session.current.marks[0] == "already approved by Bob elsewhere"
        assert "decided elsewhere meanwhile (approved by Bob): nothing of yours recorded" in session.message
        assert session.counts == SessionCounts(files=1)
        # The screen the reviewer looks at says so too.
        assert "[already approved by Bob elsewhere]" in render(session)
    assert pair_states(store)[(1, "Q146")] == ("approved", 0)
    assert decision_rows(store) == [(1, "Q146", "approve", "Bob", "web")]


def test_terminal_loop_tells_the_reviewer_and_changes_nothing(store: Store, monkeypatch) -> None:
    """The same through the terminal loop: Bob approves between Ann's screen and her key."""
    # The loop wraps its messages to the terminal's width: pin it, so the line asserted below
    # does not depend on where the suite runs (a pytest-xdist worker inherits COLUMNS=80).
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "24")
    two_files(store)

    def keys():
        store.record_decision(1, "Q146", DecisionAction.APPROVE, "Bob", "web")
        yield "3"
        yield "q"

    out = io.StringIO()
    counts = run_review(ReviewSession(store, "Ann"), keys(), out)
    assert ">> Q146 was decided elsewhere meanwhile (approved by Bob): nothing of yours recorded" in out.getvalue()
    assert counts.rejected == 0
    assert pair_states(store)[(1, "Q146")] == ("approved", 0)
    assert decision_rows(store) == [(1, "Q146", "approve", "Bob", "web")]


def test_undo_of_a_pair_the_writer_took_is_refused(store: Store) -> None:
    add_file(store, 1, [CAT])
    add_file(store, 2, [DOG])
    session = ReviewSession(store, "Ann")
    session.start()
    session.decide(DecisionAction.APPROVE)
    (edit,) = store.claim_approved(1, "writer")
    store.record_edit(edit.candidate_id, "b1", Written(revid=9), T0)
    session.undo()
    assert "cannot undo Q146" in session.message and session.counts.undone == 0
    assert pair_states(store)[(1, "Q146")] == ("written", 0)


def test_filters_apply_to_the_session(store: Store) -> None:
    add_file(store, 1, [CAT, DOG], uploader="Alice")
    add_file(store, 2, [HUMAN], uploader="Bob")
    session = ReviewSession(store, "Ann", ReviewFilter(uploader="Bob"))
    session.start()
    assert session.current.file.mid == "M2" and session.total == 1


def test_terminal_loop_renders_and_counts(store: Store) -> None:
    two_files(store)
    out = io.StringIO()
    opened = []
    session = ReviewSession(store, "Ann", api_url="http://127.0.0.1:8765/w/api.php")
    keys = ["down", "1", "o", "g", "3", "3", "?", "x", "n", "u", "u", "q", "1"]
    counts = run_review(session, keys, out, open_url=lambda url: opened.append(url) or True)
    text = out.getvalue()
    assert opened == ["http://127.0.0.1:8765/wiki/File:Example_1.jpg"]
    assert ">> approved Q144 (dog)" in text and ">> rejected Q5 (human)" in text
    assert "thumbnail:   https://upload.wikimedia.org/thumb/1/330px-x.jpg" in text
    assert "categories:  Cats in Berlin" in text and "description: A cat on a sofa" in text
    assert "#1  Q146" in text and "0.910  house cat - domesticated feline" in text
    assert "unknown key 'x'" in text and "approve as prominent" in text
    assert "\x1b[2J" not in text  # not a TTY: no screen clearing
    # n skipped Q146, then two undos took back the skip and the rejection; q stopped before "1".
    assert (counts.approved, counts.rejected, counts.skipped, counts.undone) == (1, 0, 0, 2)
    assert pair_states(store)[(1, "Q5")] == ("proposed", 0)


def test_render_shows_marks_and_the_end(store: Store) -> None:
    add_file(store, 1, [CAT, DOG])
    session = ReviewSession(store, "Ann")
    session.start()
    session.decide(DecisionAction.APPROVE_PROMINENT)
    screen = render(session, width=120)
    assert "[prominent]" in screen and "> #2  Q144" in screen
    session.decide(DecisionAction.REJECT)
    assert render(session).startswith("No more files to review")


def test_line_keys_and_words() -> None:
    assert line_tokens("down\n") == ["down", "enter"]
    assert line_tokens("g 12\n") == ["g", "1", "2", "enter"]
    assert list(LineKeys(io.StringIO("1\nundo\n"))) == ["1", "enter", "u", "enter", "q"]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_terminal_keys_decode_arrows_and_control_keys() -> None:
    master, slave = os.openpty()

    class Tty:
        def fileno(self) -> int:
            return slave

    try:
        with TerminalKeys(Tty()) as keys:  # type: ignore[arg-type]
            # Written once cbreak mode is on, as a reviewer's key presses would be; Ctrl-D
            # arrives as a byte then (Ctrl-C is a signal: the CLI catches KeyboardInterrupt).
            os.write(master, b"\x1b[Bj1g\r\x1bOA\t\x1b[5~\x04")
            tokens = iter(keys)
            got = [next(tokens) for _ in range(9)]
        assert got == ["down", "j", "1", "g", "enter", "up", "down", "escape", "q"]
    finally:
        os.close(master)
        os.close(slave)
