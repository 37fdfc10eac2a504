"""``wikivel-bot evaluate``: reading JSONL, scoring with hop credit, and the real CLI."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import pytest
from click.testing import CliRunner, Result

from wikivel_bot.cli import main
from wikivel_bot.errors import UsageError
from wikivel_bot.evaluation import evaluation_table, html_page, read_records, score_rankings

# house cat, dog -> mammal (1 hop) -> animal (2 hops); Obama, Biden -> human (1 hop).
HIERARCHY: Dict[str, Dict[str, int]] = {
    "Q146": {"Q7377": 1, "Q729": 2},
    "Q144": {"Q7377": 1, "Q729": 2},
    "Q76": {"Q5": 1},
    "Q6279": {"Q5": 1},
}
RECORDS: List[Dict[str, Any]] = [
    {"qid": "Q729", "label": "animal"},
    {"qid": "Q7377", "label": "mammal", "p279": ["Q729"]},
    {"qid": "Q146", "label": "house cat", "description": "domesticated feline", "p279": ["Q7377"]},
    {"qid": "Q144", "label": "dog", "p279": ["Q7377"]},
    {"qid": "Q5", "label": "human"},
    {"qid": "Q76", "label": "Barack Obama", "p31": ["Q5"]},
    {"qid": "Q6279", "label": "Joe Biden", "p31": ["Q5"]},
]

TRUTH: List[Dict[str, Any]] = [
    {"file": "M1", "items": ["Q146", "Q144"]},  # house cat and dog
    {"file": "M2", "items": ["Q76"]},  # Obama
    {"file": "M3", "items": []},  # nothing depicted: not scored
    {"file": "M4", "items": ["Q146"]},  # no prediction line: scored as an empty ranking
]
PREDICTIONS: List[Dict[str, Any]] = [
    {"file": "M1", "items": ["Q5", "Q729", "Q144", "Q7377", "Q146"]},  # the metrics docstring's example
    {"file": "M2", "items": ["Q5", "Q76"], "scores": [0.3, 0.2]},
    {"file": "M9", "items": ["Q146"]},  # no truth: listed, not scored
]


class TinyLabelSet:
    """Just enough of LabelSetView for hop credit and sheet texts."""

    qids = [r["qid"] for r in RECORDS]
    labels = [r["label"] for r in RECORDS]
    descriptions = [r.get("description", "") for r in RECORDS]

    def index_of(self, qid: str) -> Optional[int]:
        return self.qids.index(qid) if qid in self.qids else None

    def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]:
        return {a: h for a, h in HIERARCHY.get(qid, {}).items() if h <= max_hops}


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> Dict[str, Path]:
    return {
        "truth": write_jsonl(tmp_path / "truth.jsonl", TRUTH),
        "predictions": write_jsonl(tmp_path / "predictions.jsonl", PREDICTIONS),
    }


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# -- hand-computed expectations (files scored: M1, M2, M4) ------------------------------------
# hop 0: M1 dog at 3, cat at 5; M2 Obama at 2; M4 nothing.
#   R@1 = 0;  R@5 = (1 + 1 + 0) / 3;  DivR@5 = (2/2 + 1/1 + 0) / 3
#   mAP@5 = ((1/3 + 2/5)/2 + (1/2)/1 + 0) / 3 = (0.366667 + 0.5) / 3 = 0.288889
#   MRR = (1/3 + 1/2 + 0) / 3 = 0.277778
#   P@5 = (2/5 + 1/2 (M2 gives two predictions, one right) + 0) / 3 = 0.3
# hop 1: M2 human at rank 1 and Obama at 2 are both correct: AP@5 = (1/1 + 2/2) / max(1, 2) = 1;
#   M1 dog at 3, mammal at 4, cat at 5 are correct (any relevant item counts, §4.4):
#   AP@5 = (1/3 + 2/4 + 3/5) / max(2, 3) = 0.477778 (see test_metrics).
#   R@1 = (0 + 1 + 0) / 3;  mAP@5 = (0.477778 + 1 + 0) / 3 = 0.492593;  MRR = (1/3 + 1 + 0) / 3
# hop 2: M1 animal at 2 too: AP@5 = (1/2 + 2/3 + 3/4 + 4/5) / 4 = 0.679167
#   mAP@5 = (0.679167 + 1 + 0) / 3 = 0.559722;  MRR = (1/2 + 1 + 0) / 3 = 0.5
EXPECTED = {
    0: {"R@1": 0.0, "R@5": 2 / 3, "DivR@5": 2 / 3, "mAP@5": 0.288889, "MRR": 0.277778, "P@5": 0.3},
    1: {"R@1": 1 / 3, "mAP@5": 0.492593, "MRR": 4 / 9},
    2: {"R@1": 1 / 3, "mAP@5": 0.559722, "MRR": 0.5},
}


def check(scores: Mapping[str, Mapping[str, float]], hops: List[int]) -> None:
    for level in hops:
        for name, value in EXPECTED[level].items():
            assert scores[str(level)][name] == pytest.approx(value, abs=1e-6), (level, name)


def test_evaluate_without_hops_through_the_cli(files: Dict[str, Path]) -> None:
    result = run("evaluate", "--predictions", str(files["predictions"]), "--truth", str(files["truth"]),
                 "--k", "1,5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hops"] == [0] and data["files_scored"] == 3
    check(data["scores"], [0])
    assert data["missing_rankings"] == {"count": 1, "examples": ["M4"]}
    assert data["unscored_rankings"] == {"count": 1, "examples": ["M9"]}
    assert data["empty_truth"] == {"count": 1, "examples": ["M3"]}


def test_evaluate_table_names_what_was_not_scored(files: Dict[str, Path]) -> None:
    result = run("evaluate", "--predictions", str(files["predictions"]), "--truth", str(files["truth"]))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("| hops"))
    assert [c.strip() for c in header.strip("|").split("|")][:4] == ["hops", "R@1", "R@5", "R@10"]
    row = next(line for line in lines if line.startswith("| 0 "))
    # R@5 = 66.7 %, mAP@5 = 28.9 %
    assert "66.7" in row and "28.9" in row
    assert any("1 truth files had no prediction line" in line and "M4" in line for line in lines)
    assert any("1 predicted files have no truth line" in line and "M9" in line for line in lines)


def test_evaluate_with_hop_credit_from_a_label_set(files: Dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    import wikivel_bot.labels

    monkeypatch.setattr(wikivel_bot.labels, "load_label_set", lambda path: TinyLabelSet())
    (tmp_path / "labels").mkdir()
    result = run("evaluate", "--predictions", str(files["predictions"]), "--truth", str(files["truth"]),
                 "--labels", str(tmp_path / "labels"), "--k", "1,5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hops"] == [0, 1, 2, 3]  # the default with a label set
    check(data["scores"], [0, 1, 2])
    assert data["unknown_truth_items"] == 0


def test_evaluate_with_a_real_label_set_directory(files: Dict[str, Path], tmp_path: Path) -> None:
    from wikivel_bot.labels import label_set_from_records, write_label_set

    labels = write_label_set(label_set_from_records(RECORDS), tmp_path / "labels")
    result = run("evaluate", "--predictions", str(files["predictions"]), "--truth", str(files["truth"]),
                 "--labels", str(labels), "--hops", "0..2", "--k", "1,5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hops"] == [0, 1, 2]
    check(data["scores"], [0, 1, 2])


def test_a_bad_line_is_named_with_file_and_line(files: Dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"file": "M1", "items": ["Q146"]}\n\n{"file": "M2", "items": ["cat"]}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["evaluate", "--predictions", str(bad), "--truth", str(files["truth"])])
    assert result.exit_code == 2
    assert f"{bad}:3: item 1 ('cat') is not a QID" in result.output
    assert "Traceback" not in result.output


def test_hops_need_a_label_set(files: Dict[str, Path]) -> None:
    result = CliRunner().invoke(main, ["evaluate", "--predictions", str(files["predictions"]),
                                       "--truth", str(files["truth"]), "--hops", "1"])
    assert result.exit_code == 2 and "needs a label set" in result.output
    result = CliRunner().invoke(main, ["evaluate", "--predictions", str(files["predictions"]),
                                       "--truth", str(files["truth"]), "--k", "0,5"])
    assert result.exit_code == 2 and "--k" in result.output


def test_html_and_output_file(files: Dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = run("evaluate", "--predictions", str(files["predictions"]), "--truth", str(files["truth"]),
                 "--format", "html", "--out", str(out))
    assert result.exit_code == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<th>DivR@10</th>" in page and "<td>66.7</td>" in page


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ('["M1"]', "expected an object"),
        ('{"items": []}', '"file" must be'),
        ('{"file": "M1"}', '"items" must be a list'),
        ('{"file": "M1", "items": ["Q0"]}', "not a QID"),
        ('{"file": "M1", "items": ["Q1", "Q1\\nQ2"]}', "item 2 .* not a QID"),
        ('{"file": "M1", "items": ["Q1"], "scores": [1, 2]}', "one number per item"),
    ],
)
def test_reader_errors(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"file": "M0", "items": []}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match=f"x.jsonl:2: .*{message}"):
        read_records(path)


def test_reader_refuses_a_file_given_twice_and_reads_gzip(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dup.jsonl", [{"file": "M1", "items": []}, {"file": "M1", "items": ["Q1"]}])
    with pytest.raises(UsageError, match="dup.jsonl:2: file 'M1' already given on line 1"):
        read_records(path)
    packed = tmp_path / "p.jsonl.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(PREDICTIONS[1]) + "\n")
    record = read_records(packed)["M2"]
    assert record.items == ("Q5", "Q76") and record.scores == (0.3, 0.2) and record.line == 1


def test_score_rankings_streams_and_rejects_repeats() -> None:
    truth = {row["file"]: row["items"] for row in TRUTH}
    report = score_rankings(((r["file"], r["items"]) for r in PREDICTIONS), truth, ks=(1, 5), hops=(0,))
    assert report.files_scored == 3
    assert report.scores[0]["mAP@5"] == pytest.approx(0.288889, abs=1e-6)
    table = evaluation_table(report)
    assert table.headers[:3] == ["hops", "R@1", "R@5"] and table.rows[0][0] == "0"
    assert "<table>" in html_page([table])
    with pytest.raises(UsageError, match="ranked twice"):
        score_rankings([("M1", ["Q1"]), ("M1", ["Q2"])], truth)
