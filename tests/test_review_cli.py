"""`wikivel-bot review approve|approve-prominent|reject|skip` through the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from tests.db_support import open_store
from tests.review_support import CAT, DOG, HUMAN, add_file, decision_rows, pair_states
from wikivel_bot.cli import main
from wikivel_bot.queue import migrate


def _queue(url: str) -> Iterator[tuple]:
    store = open_store(url)
    if url.startswith("sqlite"):
        migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG, HUMAN], title="File:Cat on a sofa.jpg")
    yield url, store
    store.close()


@pytest.fixture
def queue(db_url: str) -> Iterator[tuple]:
    """(url, store) of a queue the CLI can open by URL, with one linked file M1 (every
    backend a second process can reach)."""
    if db_url == "sqlite://":
        pytest.skip("the CLI opens its own engine: an in-memory database would be a new, empty one")
    yield from _queue(db_url)


@pytest.fixture
def sqlite_queue(tmp_path: Path) -> Iterator[tuple]:
    """The same on a SQLite file, for tests of the command line rather than the database."""
    yield from _queue(f"sqlite:///{tmp_path / 'q.sqlite'}")


def run(url: str, *args: str, env: dict = None):
    return CliRunner().invoke(main, ["--db-url", url, *args], env=env)


def test_single_decisions(queue) -> None:
    url, store = queue
    result = run(url, "review", "approve-prominent", "--file", "M1", "--item", "Q146", "--reviewer", "Ann")
    assert result.exit_code == 0, result.output
    assert "M1 Q146: approve_prominent by Ann" in result.output
    result = run(url, "review", "reject", "--file", "File:Cat on a sofa.jpg", "--item", "Q144", "--item", "q5",
                 env={"WIKIVEL_REVIEW_REVIEWER": "Bob"})
    assert result.exit_code == 0, result.output
    # Skip is "not now" for a proposed pair; a pair never proposed has nothing to skip.
    result = run(url, "review", "--reviewer", "Cy", "skip", "--file", "m1", "--item", "Q42")
    assert result.exit_code == 1
    assert result.output.strip() == "error: M1 Q42 was never proposed: there is nothing to skip"
    assert pair_states(store) == {
        (1, "Q146"): ("approved", 1), (1, "Q144"): ("rejected", 0), (1, "Q5"): ("rejected", 0),
    }
    assert [(r[2], r[3], r[4]) for r in decision_rows(store)] == [
        ("approve_prominent", "Ann", "cli"), ("reject", "Bob", "cli"), ("reject", "Bob", "cli"),
    ]


def test_a_rejection_cannot_be_approved_from_the_cli(queue) -> None:
    url, store = queue
    assert run(url, "review", "reject", "--file", "M1", "--item", "Q5", "--reviewer", "Ann").exit_code == 0
    result = run(url, "review", "approve", "--file", "M1", "--item", "Q5", "--reviewer", "Ann")
    assert result.exit_code == 1
    assert result.output.strip() == "error: cannot approve M1 Q5: it is already rejected by Ann"


def test_another_reviewers_approval_is_not_replaced_from_the_cli(queue) -> None:
    url, store = queue
    assert run(url, "review", "approve", "--file", "M1", "--item", "Q146", "--reviewer", "Ann").exit_code == 0
    result = run(url, "review", "reject", "--file", "M1", "--item", "Q146", "--reviewer", "Bob")
    assert result.exit_code == 1
    assert result.output.strip() == ("error: M1 Q146 is approved by Ann: only an operator may override another "
                                     "reviewer's decision; nothing changed")
    assert pair_states(store)[(1, "Q146")] == ("approved", 0)
    assert [(r[2], r[3]) for r in decision_rows(store)] == [("approve", "Ann")]


@pytest.mark.parametrize("args, code, message", [
    (["approve", "--file", "M1", "--item", "Q146"], 2, "who is reviewing? pass --reviewer NAME"),
    (["approve", "--file", "M9", "--item", "Q146", "--reviewer", "Ann"], 1, "file M9 is not in the queue"),
    (["approve", "--file", "Cat.jpg", "--item", "Q146", "--reviewer", "Ann"], 2, "--file takes an M-id"),
    (["approve", "--file", "M1", "--item", "146", "--reviewer", "Ann"], 2, "not a Wikidata item id: '146'"),
    (["--since", "soon", "--reviewer", "Ann"], 2, "not a date: 'soon'"),
    ([], 2, "who is reviewing?"),
])
def test_user_mistakes_are_one_line(sqlite_queue, args, code, message) -> None:
    url, store = sqlite_queue
    result = run(url, "review", *args)
    assert result.exit_code == code
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and message in line
    assert pair_states(store)[(1, "Q146")] == ("proposed", 0)


@pytest.mark.parametrize("item", ["Q²", "Q١٢", "Q０", "Q0", "Q01"])
def test_an_item_id_in_other_digits_is_refused_and_nothing_is_stored(sqlite_queue, item: str) -> None:
    # str.isdigit() is True for "²" and Arabic-Indic digits; an item id is ASCII Q[1-9][0-9]*.
    url, store = sqlite_queue
    before = pair_states(store)
    result = run(url, "review", "approve", "--file", "M1", "--item", "Q146", "--item", item, "--reviewer", "Ann")
    assert result.exit_code == 2
    assert result.output.strip() == f"error: not a Wikidata item id: {item!r} (expected Q followed by digits)"
    assert decision_rows(store) == [] and pair_states(store) == before


def test_review_without_a_terminal_reads_lines(sqlite_queue) -> None:
    """stdin is not a TTY here: each line is a key; end of input quits with the summary."""
    url, store = sqlite_queue
    result = CliRunner().invoke(main, ["--db-url", url, "review", "--reviewer", "Ann"], input="down\n3\nn\n")
    assert result.exit_code == 0, result.output
    assert ">> rejected Q144 (dog)" in result.output
    assert result.output.strip().splitlines()[-1] == (
        "review session (Ann): approved 0, prominent 0, rejected 1, skipped 2, undone 0 - 1 file shown")
    assert pair_states(store)[(1, "Q144")] == ("rejected", 0)


def test_min_score_defaults_to_the_linker_setting(sqlite_queue, tmp_path: Path) -> None:
    url, store = sqlite_queue
    config = tmp_path / "wikivel.toml"
    config.write_text("[linker]\nmin_score = 0.8\n")
    result = CliRunner().invoke(main, ["--config", str(config), "--db-url", url, "review", "--reviewer", "Ann"],
                                input="q\n")
    assert "Q146" in result.output and "Q144" in result.output and "Q5 " not in result.output
    result = CliRunner().invoke(main, ["--config", str(config), "--db-url", url, "review", "--reviewer", "Ann",
                                       "--min-score", "0"], input="q\n")
    assert "Q5 " in result.output
