"""The §5.2 human-evaluation kit: export a sheet, three raters fill it, score it (CLI)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from click.testing import CliRunner, Result

from tests.test_evaluation import TinyLabelSet, write_jsonl
from wikivel_bot.cli import main
from wikivel_bot.evaluation.human import build_sheet, file_url, parse_rating

PREDICTIONS: List[Dict[str, Any]] = [
    {"file": "M1", "items": ["Q146", "Q7377", "Q729"]},
    {"file": "M2", "items": ["Q5", "Q76", "Q6279"]},
    {"file": "M3", "items": ["Q144", "Q146", "Q5"]},
    {"file": "M4", "items": ["Q729", "Q5", "Q144"]},
    {"file": "M5", "items": []},  # nothing to rate: never sampled
]
TRUTH: List[Dict[str, Any]] = [{"file": f"M{i}", "items": ["Q146"]} for i in range(1, 5)]

# Ratings per rater by (position of the file in the sheet, rank).
RATINGS: Dict[str, Dict[tuple, str]] = {
    "r1": {(0, 1): "CC", (1, 1): "CC", (2, 1): "CI", (0, 2): "OR", (1, 2): "IDK", (2, 2): "CI"},
    "r2": {(0, 1): "completely correct", (1, 1): "cc", (2, 1): "OR", (0, 2): "OR", (1, 2): "CI", (2, 2): "CI"},
    "r3": {(0, 1): "CC", (1, 1): "TG", (2, 1): "CI", (0, 2): "OR", (1, 2): "IDK", (2, 2): "CC"},
}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def sheet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import wikivel_bot.labels

    monkeypatch.setattr(wikivel_bot.labels, "load_label_set", lambda path: TinyLabelSet())
    (tmp_path / "labels").mkdir()
    predictions = write_jsonl(tmp_path / "p.jsonl", PREDICTIONS)
    truth = write_jsonl(tmp_path / "t.jsonl", TRUTH)
    out = tmp_path / "sheet.csv"
    result = invoke("human-eval", "export", "--predictions", str(predictions), "--sample", "3", "--top", "2",
                    "--seed", "7", "--labels", str(tmp_path / "labels"), "--truth", str(truth), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "6 predictions of 3 files to rate" in result.output
    return out


def read_rows(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fill(sheet: Path, out: Path, rater: str, reverse: bool = False) -> Path:
    """A rater's copy of the sheet with the rating column filled (optionally re-sorted)."""
    rows = read_rows(sheet)
    order = list(dict.fromkeys(row["file"] for row in rows))
    for row in rows:
        row["rating"] = RATINGS[rater][(order.index(row["file"]), int(row["rank"]))]
    if reverse:  # a rater who sorted the spreadsheet differently
        rows.reverse()
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


def test_export_writes_a_deterministic_sheet_with_texts(sheet: Path) -> None:
    rows = read_rows(sheet)
    assert list(rows[0]) == ["file", "rank", "qid", "label", "description", "depicted", "url", "rating", "comment"]
    assert len(rows) == 6 and {row["rank"] for row in rows} == {"1", "2"}
    assert all(row["rating"] == "" for row in rows)
    assert "M5" not in {row["file"] for row in rows}
    cat = next(row for row in rows if row["qid"] == "Q146")
    assert (cat["label"], cat["description"]) == ("house cat", "domesticated feline")
    assert all(row["depicted"] == "Q146 house cat" for row in rows)
    assert rows[0]["url"] == f"https://commons.wikimedia.org/entity/{rows[0]['file']}"
    # The same seed draws the same files in the same order; the draw ignores input order.
    rankings = {r["file"]: r["items"] for r in PREDICTIONS}
    again = build_sheet(dict(reversed(list(rankings.items()))), sample=3, top=2, seed=7)
    assert [(r.file, r.rank, r.qid) for r in again] == [(r["file"], int(r["rank"]), r["qid"]) for r in rows]


def test_three_raters_round_trip(sheet: Path, tmp_path: Path) -> None:
    paths = [str(fill(sheet, tmp_path / f"{name}.csv", name, reverse=(name == "r2"))) for name in RATINGS]
    result = invoke("human-eval", "score", *paths, "--k", "1,5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["raters"], data["files"], data["predictions"]) == (3, 3, 6)
    # k = 1: CC 2 + 2 + 1 = 5, TG 1, OR 1, CI 2 of 9 ratings.
    assert data["counts"]["1"] == {"CC": 5, "TG": 1, "OR": 1, "CI": 2, "IDK": 0}
    assert data["shares"]["1"]["CC"] == pytest.approx(5 / 9)
    # Rank 1 subjects: [CC CC CC] P=1; [CC CC TG] P=(4+1-3)/6=1/3; [CI OR CI] P=1/3 -> P̄ = 5/9.
    # P̄_e = (5² + 1 + 1 + 2²) / 9² = 31/81; κ = (45/81 - 31/81) / (50/81) = 14/50 = 0.28.
    assert data["fleiss_kappa"]["1"] == pytest.approx(0.28)
    # k = 5 (both ranks): rank-2 subjects [OR OR OR] 1, [IDK CI IDK] 1/3, [CI CI CC] 1/3 -> P̄ = 5/9;
    # totals CC 6, TG 1, OR 4, CI 5, IDK 2 of 18: P̄_e = (36+1+16+25+4)/324 = 82/324;
    # κ = (180 - 82) / (324 - 82) = 98/242 = 0.404959.
    assert data["counts"]["5"] == {"CC": 6, "TG": 1, "OR": 4, "CI": 5, "IDK": 2}
    assert data["fleiss_kappa"]["5"] == pytest.approx(98 / 242)


def test_score_prints_a_table_5(sheet: Path, tmp_path: Path) -> None:
    paths = [str(fill(sheet, tmp_path / f"{name}.csv", name)) for name in RATINGS]
    result = invoke("human-eval", "score", *paths)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("| k=1 "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["k=1", "55.6", "11.1", "11.1", "22.2", "0.0", "0.280"]


def test_bad_ratings_are_reported_with_sheet_and_line(sheet: Path, tmp_path: Path) -> None:
    good = [str(fill(sheet, tmp_path / f"{name}.csv", name)) for name in ("r1", "r2")]
    bad = tmp_path / "r3.csv"
    rows = read_rows(fill(sheet, bad, "r3"))
    rows[2]["rating"] = "XX"  # line 4 (header is line 1)
    rows[4]["rating"] = ""  # line 6
    with open(bad, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = invoke("human-eval", "score", *good, str(bad))
    assert result.exit_code == 2
    assert f"{bad}:4: rating 'XX' is not one of CC/TG/OR/CI/IDK" in result.output
    assert f"{bad}:6: no rating for" in result.output
    assert "2 problem(s) in the rating sheets" in result.output


def test_sheets_must_rate_the_same_rows(sheet: Path, tmp_path: Path) -> None:
    first = fill(sheet, tmp_path / "r1.csv", "r1")
    second = fill(sheet, tmp_path / "r2.csv", "r2")
    lines = second.read_text(encoding="utf-8").splitlines(keepends=True)
    second.write_text("".join(lines[:-1]), encoding="utf-8")  # drop the last row
    result = invoke("human-eval", "score", str(first), str(second))
    assert result.exit_code == 2
    assert f"{second}: no rating for" in result.output and f"of {first})" in result.output


def test_one_rater_gives_shares_without_kappa(sheet: Path, tmp_path: Path) -> None:
    result = invoke("human-eval", "score", str(fill(sheet, tmp_path / "r1.csv", "r1")), "--json")
    data = json.loads(result.output)
    assert data["fleiss_kappa"] == {"1": None, "5": None, "10": None}
    assert data["counts"]["10"]["CC"] == 2


def test_rating_words_and_urls() -> None:
    assert parse_rating(" Too  General ") == "TG" and parse_rating("I don’t know") == "IDK"
    assert parse_rating("maybe") is None
    assert file_url("Cat 1.jpg") == "https://commons.wikimedia.org/wiki/File:Cat_1.jpg"
