"""`wikivel-bot export`: every format parses back, and rejected pairs stay out unless asked."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import mwparserfromhell
import pytest
from click.testing import CliRunner

from tests.db_support import open_store
from tests.review_support import CAT, DOG, HUMAN, PARK, TABBY, add_file
from wikivel_bot.cli import main
from wikivel_bot.core.review_rules import ReviewFilter, file_page_url
from wikivel_bot.errors import UsageError
from wikivel_bot.queue import migrate
from wikivel_bot.queue.reviews import iter_review_files
from wikivel_bot.queue.store import Store
from wikivel_bot.review.export import CSV_COLUMNS, export_states, write_export
from wikivel_bot.types import DecisionAction

NASTY = ("Q7", 0.61, "=cmd|' /C calc'!A0 ]] {{delete}}", "label | with ~~~~ and\nnewline")


def fill(store: Store) -> None:
    """M1: cat approved (prominent), dog rejected, human proposed. M2: tabby approved, park and
    a label full of wikitext and spreadsheet syntax proposed."""
    add_file(store, 1, [CAT, DOG, HUMAN], title="File:Cat on a sofa.jpg", categories=["Cats on sofas", "Sofas"])
    add_file(store, 2, [TABBY, PARK, NASTY], title="File:Tabby in a park.jpg", description="Tabby\nin park")
    store.record_decision(1, "Q146", DecisionAction.APPROVE_PROMINENT, "Ann", "cli")
    store.record_decision(1, "Q144", DecisionAction.REJECT, "Ann", "cli")
    store.record_decision(2, "Q1050479", DecisionAction.APPROVE, "Ann", "cli")


def exported(store: Store, fmt: str, *states: str) -> str:
    out = io.StringIO(newline="")
    files = iter_review_files(store, ReviewFilter(states=export_states(fmt, states)))
    write_export(files, fmt, out, partial(file_page_url), datetime(2026, 11, 2, tzinfo=timezone.utc))
    return out.getvalue()


def test_rejected_pairs_only_when_asked_by_name(store: Store) -> None:
    """Every backend: the default, 'all', and explicit states."""
    fill(store)
    pairs = lambda text: {(r["mid"], r["qid"]) for r in csv.DictReader(io.StringIO(text))}  # noqa: E731
    assert pairs(exported(store, "csv")) == {("M1", "Q5"), ("M2", "Q22698"), ("M2", "Q7")}
    assert ("M1", "Q144") not in pairs(exported(store, "csv", "all"))
    assert len(pairs(exported(store, "csv", "all"))) == 5
    assert pairs(exported(store, "csv", "rejected")) == {("M1", "Q144")}
    assert "Q144" not in exported(store, "jsonl", "all") + exported(store, "wikitext", "all")


def test_csv_has_what_a_patroller_needs(store: Store) -> None:
    fill(store)
    rows = list(csv.DictReader(io.StringIO(exported(store, "csv", "proposed", "approved"))))
    assert tuple(rows[0]) == CSV_COLUMNS
    by_pair = {(r["mid"], r["qid"]): r for r in rows}
    cat = by_pair[("M1", "Q146")]
    assert cat == {
        "mid": "M1", "title": "File:Cat on a sofa.jpg",
        "file_url": "https://commons.wikimedia.org/wiki/File:Cat_on_a_sofa.jpg",
        "thumb_url": "https://upload.wikimedia.org/thumb/1/330px-x.jpg", "qid": "Q146", "label": "house cat",
        "description": "domesticated feline", "score": "0.910", "rank": "1", "state": "approved",
        "prominent": "yes", "linker": "zero-shot", "categories": "Cats on sofas | Sofas",
        "file_description": "A cat on a sofa", "existing_depicts": "", "notes": "", "alpha": "", "probability": "",
        # A row queued before evidence existed: the image alone suggested it.
        "evidence_kind": "image only", "evidence": "image only", "decision": "",
    }
    nasty = by_pair[("M2", "Q7")]
    assert nasty["label"].startswith("'=")  # a spreadsheet shows it, does not run it
    assert nasty["file_description"] == "Tabby in park"


def test_jsonl_records(store: Store) -> None:
    fill(store)
    records = [json.loads(line) for line in exported(store, "jsonl").splitlines()]
    assert [(r["mid"], r["qid"], r["state"]) for r in records] == [
        ("M1", "Q5", "proposed"), ("M2", "Q22698", "proposed"), ("M2", "Q7", "proposed")]
    assert records[0]["categories"] == ["Cats on sofas", "Sofas"] and records[0]["score"] == 0.73
    assert records[2]["label"] == NASTY[2]  # JSON carries the text as it is


def test_quickstatements_lines_are_approved_pairs_only(store: Store) -> None:
    fill(store)
    lines = exported(store, "quickstatements").splitlines()
    assert lines == ["M1|P180|Q146", "M2|P180|Q1050479"]
    assert all(re.fullmatch(r"M\d+\|P180\|Q\d+", line) for line in lines)
    with pytest.raises(UsageError, match="approved pairs only"):
        export_states("quickstatements", ["proposed"])


def test_wikitext_page_parses_with_links_and_thumbnails(store: Store) -> None:
    fill(store)
    code = mwparserfromhell.parse(exported(store, "wikitext", "proposed", "approved"))
    (table,) = [t for t in code.filter_tags() if t.tag == "table"]
    assert 'class="wikitable sortable"' in str(table.attributes[0])
    cells = table.contents.filter_tags(recursive=False)
    assert [str(t.contents).strip() for t in cells if t.tag == "th"] == [
        "File", "Suggested depicts (score)", "Categories"]
    rows = [t for t in cells if t.tag == "tr"]
    assert len(rows) == 2  # one per file
    links = {str(link.title): str(link.text or "") for link in code.filter_wikilinks()}
    assert links["d:Q146"] == "house cat" and links["d:Q22698"] == "park"
    assert links["File:Cat on a sofa.jpg"] == "120px" and ":File:Tabby in a park.jpg" in links
    assert links[":Category:Cats on sofas"] == "Cats on sofas"
    nasty = links["d:Q7"]
    assert "]]" not in nasty and "{{" not in nasty and not code.filter_templates()
    assert "~~~~" not in str(code)
    assert "0.910" in str(rows[0]) and "approved, prominent" in str(rows[0])


@pytest.fixture
def cli_queue(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    fill(store)
    yield url, store
    store.close()


def test_export_command_writes_files_and_stdout(cli_queue, tmp_path: Path) -> None:
    url, _ = cli_queue
    target = tmp_path / "out.csv"
    result = CliRunner().invoke(main, ["--db-url", url, "export", "--out", str(target)])
    assert result.exit_code == 0, result.output
    assert "exported 3 pairs of 2 files (state proposed)" in result.stderr
    assert [r["qid"] for r in csv.DictReader(target.open(newline=""))] == ["Q5", "Q22698", "Q7"]
    assert not list(tmp_path.glob("*.part"))
    result = CliRunner().invoke(main, ["--db-url", url, "export", "--format", "quickstatements"])
    assert result.stdout.splitlines() == ["M1|P180|Q146", "M2|P180|Q1050479"]
    assert "1 prominent approval(s) exported without preferred rank" in result.stderr


def test_export_command_filters_and_limits(cli_queue) -> None:
    url, _ = cli_queue
    runner = CliRunner()
    result = runner.invoke(main, ["--db-url", url, "export", "--format", "jsonl", "--category", "Sofas"])
    assert [json.loads(x)["qid"] for x in result.stdout.splitlines()] == ["Q5"]
    result = runner.invoke(main, ["--db-url", url, "export", "--format", "jsonl", "--state", "all", "--limit", "1"])
    assert {json.loads(x)["mid"] for x in result.stdout.splitlines()} == {"M1"}
    result = runner.invoke(main, ["--db-url", url, "export", "--format", "quickstatements", "--state", "proposed"])
    assert result.exit_code == 2 and "approved pairs only" in result.output


def test_wikitext_shows_labels_beside_qids_also_for_depicts_now(store: Store) -> None:
    """Suggestions read "house cat (Q146)"; the items a file depicts already get their label
    from the label set (here the starter set) instead of a bare QID."""
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.review.item_labels import label_lookup
    from wikivel_bot.types import Depiction

    add_file(store, 3, [CAT], title="File:Lighthouse with a cat.jpg", depicts=[Depiction("Q39715")])
    out = io.StringIO()
    files = iter_review_files(store, ReviewFilter(states=export_states("wikitext", ["proposed"])))
    write_export(files, "wikitext", out, partial(file_page_url), datetime(2026, 11, 2, tzinfo=timezone.utc),
                 label_of=label_lookup(None, default_label_set("")))
    text = out.getvalue()
    assert "[[d:Q146|house cat]] (Q146)" in text
    assert "depicts now: [[d:Q39715|lighthouse]] (Q39715)" in text
    code = mwparserfromhell.parse(text)
    assert {str(link.title): str(link.text) for link in code.filter_wikilinks()}["d:Q39715"] == "lighthouse"
