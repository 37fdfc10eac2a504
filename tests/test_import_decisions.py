"""`wikivel-bot import-decisions`: offline decisions from an exported CSV, good rows and bad."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from tests.db_support import open_store
from tests.review_support import CAT, DOG, HUMAN, PARK, T0, TABBY, add_file, decision_rows, pair_states
from wikivel_bot.cli import main
from wikivel_bot.queue import migrate
from wikivel_bot.types import DecisionAction, Written


def prepare(url: str):
    store = open_store(url)
    if url.startswith("sqlite"):
        migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG, HUMAN])
    add_file(store, 2, [TABBY, PARK])
    # The park was approved and written to Commons before the spreadsheet came back.
    store.record_decision(2, "Q22698", DecisionAction.APPROVE, "Bob", "terminal")
    (edit,) = store.claim_approved(1, "writer")
    store.record_edit(edit.candidate_id, "batch-1", Written(revid=77), T0)
    return store


@pytest.fixture
def queue(db_url: str, tmp_path: Path) -> Iterator[tuple]:
    if db_url == "sqlite://":
        pytest.skip("the CLI opens its own engine: an in-memory database would be a new, empty one")
    store = prepare(db_url)
    yield db_url, store
    store.close()


@pytest.fixture
def sqlite_queue(tmp_path: Path) -> Iterator[tuple]:
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    store = prepare(url)
    yield url, store
    store.close()


def export_csv(url: str, path: Path) -> list:
    result = CliRunner().invoke(main, ["--db-url", url, "export", "--state", "all", "--out", str(path)])
    assert result.exit_code == 0, result.output
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_rows(path: Path, rows: list, fields) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def import_file(url: str, path: Path, *extra: str):
    return CliRunner().invoke(main, ["--db-url", url, "import-decisions", str(path), *extra])


def test_good_and_bad_rows_then_a_reimport(queue, tmp_path: Path) -> None:
    url, store = queue
    sheet = tmp_path / "review.csv"
    rows = export_csv(url, sheet)
    fields = list(rows[0])
    decided = {("M1", "Q146"): "Prominent", ("M1", "Q144"): " reject ", ("M1", "Q5"): "skip",
               ("M2", "Q1050479"): "approve", ("M2", "Q22698"): "reject"}
    for row in rows:
        row["decision"] = decided.get((row["mid"], row["qid"]), "")
    blank = {k: "" for k in fields}
    rows += [
        {**blank, "mid": "M999", "qid": "Q146", "decision": "approve"},
        {**blank, "mid": "M1", "qid": "Q12x", "decision": "approve"},
        {**blank, "mid": "M1", "qid": "Q146", "decision": "maybe"},
        {**blank, "mid": "X1", "qid": "Q146", "decision": "reject"},
        {**blank, "mid": "M1", "qid": "Q146", "decision": "reject"},
    ]
    write_rows(sheet, rows, fields)
    # Header is line 1; rows in export order: M1 Q146, Q144, Q5, M2 Q1050479, Q22698, then ours.
    result = import_file(url, sheet, "--reviewer", "Ann")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "line 6: M2 Q22698: already written to Commons; remove it with `wikivel-bot revert`",
        "line 7: unknown file M999 (not in the queue)",
        "line 8: bad QID 'Q12x' (expected Q followed by digits)",
        "line 9: unknown decision word 'maybe' (use approve, prominent, reject, skip or leave it empty)",
        "line 10: bad M-id 'X1' (expected M followed by the page id)",
        "line 11: M1 Q146 is already decided on line 2 of this file",
        "applied 4 (approve 1, approve_prominent 1, reject 1, skip 1); unchanged 0; no decision 0; refused 6",
    ]
    after_first = pair_states(store)
    assert after_first[(1, "Q146")] == ("approved", 1) and after_first[(1, "Q144")] == ("rejected", 0)
    assert after_first[(1, "Q5")] == ("proposed", 0) and after_first[(2, "Q1050479")] == ("approved", 0)
    assert after_first[(2, "Q22698")] == ("written", 0)
    decisions = decision_rows(store)
    assert [d for d in decisions if d[3] == "Ann"] == [
        (1, "Q146", "approve_prominent", "Ann", "import"), (1, "Q144", "reject", "Ann", "import"),
        (1, "Q5", "skip", "Ann", "import"), (2, "Q1050479", "approve", "Ann", "import"),
    ]
    # The same file again: nothing applied twice, the same rows refused.
    again = import_file(url, sheet, "--reviewer", "Ann")
    assert again.exit_code == 1
    assert again.output.splitlines()[-1] == (
        "applied 0; unchanged 4; no decision 0; refused 6")
    assert pair_states(store) == after_first and decision_rows(store) == decisions


def test_a_clean_reimport_says_nothing_changed(sqlite_queue, tmp_path: Path) -> None:
    url, store = sqlite_queue
    sheet = tmp_path / "review.csv"
    rows = export_csv(url, sheet)
    for row in rows:
        row["decision"] = {"Q146": "approve", "Q144": "no"}.get(row["qid"], "")
    write_rows(sheet, rows, list(rows[0]))
    first = import_file(url, sheet, "--reviewer", "Ann")
    assert first.exit_code == 0, first.output
    assert first.output.strip() == "applied 2 (approve 1, reject 1); unchanged 0; no decision 3; refused 0"
    second = CliRunner().invoke(main, ["-v", "--db-url", url, "import-decisions", str(sheet), "--reviewer", "Ann"])
    assert second.exit_code == 0
    assert second.output.splitlines() == [
        "line 2: unchanged: M1 Q146: already approved (normal rank)",
        "line 3: unchanged: M1 Q144: already rejected",
        "applied 0; unchanged 2; no decision 3; refused 0 - nothing changed: every decision in the file was "
        "already applied",
    ]
    assert len(decision_rows(store)) == 3  # Bob's approval of the park plus Ann's two


def test_spreadsheet_dialects_and_multiline_cells(sqlite_queue, tmp_path: Path) -> None:
    """A byte-order mark, semicolons, upper case, a title instead of an M-id, and a quoted
    cell over two lines (line numbers count the file's lines, not the rows)."""
    url, store = sqlite_queue
    sheet = tmp_path / "excel.csv"
    sheet.write_bytes(
        "\ufeffMID;Title;QID;Notes;Decision\r\n"
        ';File:Example 1.jpg;Q146;"two\r\nlines";APPROVE\r\n'
        "M1;;Q144;;Reject\r\n"
        "M1;;Q5;;later\r\n".encode("utf-8")
    )
    result = import_file(url, sheet, "--reviewer", "Ann")
    assert result.exit_code == 1
    assert result.output.splitlines()[0].startswith("line 5: unknown decision word 'later'")
    assert pair_states(store)[(1, "Q146")] == ("approved", 0) and pair_states(store)[(1, "Q144")] == ("rejected", 0)


@pytest.mark.parametrize("content, args, message", [
    ("mid,qid\nM1,Q146\n", ["--reviewer", "Ann"], "the CSV header lacks decision"),
    ("", ["--reviewer", "Ann"], "the file is empty"),
    ("mid,qid,decision\nM1,Q146,approve\n", [], "who is reviewing?"),
])
def test_unusable_files_are_one_line_errors(sqlite_queue, tmp_path: Path, content, args, message) -> None:
    url, store = sqlite_queue
    sheet = tmp_path / "bad.csv"
    sheet.write_text(content)
    result = import_file(url, sheet, *args)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and message in line
    assert pair_states(store)[(1, "Q146")] == ("proposed", 0)


def test_import_from_standard_input(sqlite_queue) -> None:
    url, store = sqlite_queue
    text = io.StringIO()
    text.write("mid,qid,decision\nM1,Q5,prominent\n")
    result = CliRunner().invoke(main, ["--db-url", url, "import-decisions", "-", "--reviewer", "Ann"],
                                input=text.getvalue())
    assert result.exit_code == 0, result.output
    assert pair_states(store)[(1, "Q5")] == ("approved", 1)


LONG_DESCRIPTION = 300_000  # characters: real on Commons, beyond csv's default field limit (131,072)


def test_a_file_with_a_300000_character_description_round_trips(queue, tmp_path: Path) -> None:
    """What export writes, import reads back: a description longer than Python's default CSV
    field limit is exported whole and the decisions on its row are applied."""
    url, store = queue
    description = "Lighthouse at dusk, from the pier. " * (LONG_DESCRIPTION // 35 + 1)
    add_file(store, 3, [CAT, DOG], description=description[:LONG_DESCRIPTION])
    sheet = tmp_path / "review.csv"
    rows = export_csv(url, sheet)
    long_rows = [row for row in rows if row["mid"] == "M3"]
    assert [len(row["file_description"]) for row in long_rows] == [LONG_DESCRIPTION] * 2
    for row in rows:
        row["decision"] = {("M3", "Q146"): "approve", ("M3", "Q144"): "reject"}.get((row["mid"], row["qid"]), "")
    write_rows(sheet, rows, list(rows[0]))
    result = import_file(url, sheet, "--reviewer", "Ann")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith("applied 2 (approve 1, reject 1); unchanged 0;")
    states = pair_states(store)
    assert states[(3, "Q146")] == ("approved", 0) and states[(3, "Q144")] == ("rejected", 0)
    assert [d for d in decision_rows(store) if d[3] == "Ann"] == [
        (3, "Q146", "approve", "Ann", "import"), (3, "Q144", "reject", "Ann", "import")]


def test_a_field_beyond_the_bound_refuses_its_row_and_stops(sqlite_queue, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The raised limit is still a limit: a field beyond it is one refused row naming its line
    (the rows before it are applied, nothing after it is read, since the reader cannot be
    trusted past an over-long quoted cell) and the import exits non-zero."""
    from wikivel_bot.review import importer

    # The real bound: above the largest wiki page (2 MiB of wikitext), a few MiB at most.
    assert 2 * 1024 * 1024 < importer.MAX_FIELD_CHARS <= 16 * 1024 * 1024
    assert importer.MAX_LINE_CHARS >= importer.MAX_FIELD_CHARS
    help_text = " ".join(CliRunner().invoke(main, ["import-decisions", "--help"]).output.split())
    assert f"up to {importer.MAX_FIELD_CHARS // 2**20} MiB of text" in help_text  # the help tells the bound
    assert "Exits 1 when some rows were refused" in help_text
    monkeypatch.setattr(importer, "MAX_FIELD_CHARS", 1000)
    url, store = sqlite_queue
    sheet = tmp_path / "hostile.csv"
    sheet.write_text("mid,qid,file_description,decision\n"
                     "M1,Q146,short,approve\n"
                     f'M1,Q144,"{"x" * 1500}\nstill inside",reject\n'
                     "M1,Q5,short,skip\n", encoding="utf-8")
    result = import_file(url, sheet, "--reviewer", "Ann")
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        "line 3: a field of this row is longer than 1,000 characters; the rest of the file was not read",
        "applied 1 (approve 1); unchanged 0; no decision 0; refused 1",
    ]
    states = pair_states(store)
    assert states[(1, "Q146")] == ("approved", 0)
    assert states[(1, "Q144")] == ("proposed", 0) and states[(1, "Q5")] == ("proposed", 0)


def test_an_endless_line_is_refused_without_reading_it_whole(sqlite_queue, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A line is read with a bound too, so one without an end never has to fit in memory."""
    from wikivel_bot.review import importer

    monkeypatch.setattr(importer, "MAX_LINE_CHARS", 2000)
    url, store = sqlite_queue
    sheet = tmp_path / "endless.csv"
    sheet.write_text("mid,qid,decision\nM1,Q146,approve\nM1,Q144," + "r" * 5000 + "\n", encoding="utf-8")
    result = import_file(url, sheet, "--reviewer", "Ann")
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[0] == (
        "line 3: a line of this row is longer than 2,000 characters; the rest of the file was not read")
    assert pair_states(store)[(1, "Q146")] == ("approved", 0)


def test_a_file_not_utf8_at_its_end_is_refused_whole(sqlite_queue, tmp_path: Path) -> None:
    """The import reads a line at a time, but checks the whole file's encoding first: a
    Latin-1 byte on the last line refuses the file before any row is applied."""
    url, store = sqlite_queue
    sheet = tmp_path / "latin1.csv"
    sheet.write_bytes("mid,qid,notes,decision\nM1,Q146,,approve\nM1,Q144,Café,reject\n".encode("latin-1"))
    result = import_file(url, sheet, "--reviewer", "Ann")
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    offset = sheet.read_bytes().index(b"\xe9")
    assert line == f"error: {sheet} is not UTF-8 text (invalid continuation byte at byte {offset}): save it as UTF-8 CSV"
    assert pair_states(store)[(1, "Q146")] == ("proposed", 0)
