"""`wikivel-bot report`: the HTML page and the wikitext parse, and their numbers trace back to
the results file (recomputed here with core.metrics straight from the JSON lines)."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Tuple

import mwparserfromhell
import pytest
from click.testing import CliRunner

from tests.liveeval_support import ancestors, compared, worked_example, write_jsonl
from wikivel_bot.cli import main
from wikivel_bot.core.agreement import count_table, fleiss
from wikivel_bot.core.metrics import diversity_recall_at_k, mean, precision_at_k, recall_at_k
from wikivel_bot.evaluation import build_sheet, write_sheet
from wikivel_bot.evaluation.report import percent
from wikivel_bot.liveeval.calibrate import calibrate_results
from wikivel_bot.liveeval.records import read_results

VOID = {"meta", "img", "br", "hr", "link", "input"}


class Page(HTMLParser):
    """Checks that every element is closed in order; collects tables (by the h2 before them)
    and image sources."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: List[str] = []
        self.tables: Dict[str, List[List[str]]] = {}
        self.images: List[str] = []
        self.heading = ""
        self._text: List[str] = []
        self._row: List[str] = []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag == "h2":
            self._in_h2, self._text = True, []
        elif tag in ("td", "th"):
            self._text = []
        elif tag == "tr":
            self._row = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1:]}>"
        self.stack.pop()
        if tag == "h2":
            self._in_h2, self.heading = False, "".join(self._text)
            self.tables.setdefault(self.heading, [])
        elif tag in ("td", "th"):
            self._row.append("".join(self._text).strip())
        elif tag == "tr":
            self.tables[self.heading].append(self._row)

    def handle_data(self, data):
        self._text.append(data)


def wiki_tables(text: str) -> Dict[str, List[List[str]]]:
    """{caption: rows of cell texts} of every wikitable."""
    tables: Dict[str, List[List[str]]] = {}
    for table in mwparserfromhell.parse(text).filter_tags(matches=lambda n: n.tag == "table", recursive=False):
        caption = ""
        rows = []
        for node in table.contents.nodes:
            if getattr(node, "tag", None) == "tr":
                rows.append([c.contents.strip_code(normalize=True).strip()
                             for c in node.contents.filter_tags(matches=lambda n: n.tag in ("td", "th"))])
        caption_text = str(table.contents).split("|+", 1)[1].split("\n", 1)[0]
        caption = mwparserfromhell.parse(caption_text).strip_code(normalize=True).strip()
        tables[caption] = rows
    return tables


def results_file(tmp_path: Path) -> Path:
    a, b = worked_example()
    miss = compared(3, [("Q5", 0.99), ("Q729", 0.2)], ["Q146"], uploaded="2024-05-03T07:00:00Z")  # hop 2 only
    return write_jsonl(tmp_path / "results.jsonl", [a, b, miss])


def rated_sheets(tmp_path: Path, results: Path) -> Tuple[List[Path], List[List[str]]]:
    rankings = {json.loads(x)["file"]: json.loads(x)["items"] for x in results.read_text().splitlines()}
    rows = build_sheet(rankings, sample=3, top=2)
    paths, ratings = [], []
    choices = [["CC", "CC", "OR"], ["CC", "CI", "OR"]]  # two raters; third column cycles
    for rater, pattern in enumerate(choices):
        path = tmp_path / f"sheet{rater}.csv"
        with path.open("w", newline="") as handle:
            write_sheet(rows, handle)
        lines = list(csv.reader(path.open(newline="")))
        for index, line in enumerate(lines[1:]):
            line[7] = pattern[index % 3]
        with path.open("w", newline="") as handle:
            csv.writer(handle).writerows(lines)
        paths.append(path)
        ratings.append([pattern[i % 3] for i in range(len(rows))])
    return paths, ratings


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Dict[str, object]:
    tmp = tmp_path_factory.mktemp("report")
    results = results_file(tmp)
    document = calibrate_results(read_results(results), target=0.9, min_support=1)
    thresholds = tmp / "thresholds.json"
    thresholds.write_text(json.dumps(document))
    sheets, ratings = rated_sheets(tmp, results)
    out = tmp / "out"
    run = CliRunner().invoke(main, ["report", "--results", str(results), "--thresholds", str(thresholds),
                                    "--ratings", str(sheets[0]), str(sheets[1]), "--out", str(out), "--k", "1,5"])
    assert run.exit_code == 0, run.output
    return {"results": results, "out": out, "ratings": ratings, "document": document, "stdout": run.stdout}


def expected_cells(results: Path, hops: int) -> Dict[str, str]:
    """P@k, R@k, DivR@k recomputed from the JSON lines with core.metrics, as table cells."""
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    cells = {}
    for name, metric in (("P", precision_at_k), ("R", recall_at_k), ("DivR", diversity_recall_at_k)):
        for k in (1, 5):
            value = mean(metric(d["items"], d["truth"], k, ancestors, hops) for d in lines)
            cells[f"{name}@{k}"] = percent(value)
    return cells


def test_every_file_is_written(report) -> None:
    out = report["out"]
    names = {p.name for p in out.iterdir()}
    assert {"report.html", "report.wiki", "summary.json", "precision_recall_by_k.png", "precision_by_score_band.png",
            "by_super_category.png"} <= names
    assert all((out / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names if n.endswith(".png"))


def test_html_parses_and_its_numbers_trace_back_to_the_results(report) -> None:
    text = (report["out"] / "report.html").read_text()
    page = Page()
    page.feed(text)
    page.close()
    assert page.stack == []
    table = page.tables["zero-shot: ranking metrics (%)"]
    header, rows = table[0], {row[0]: row for row in table[1:]}
    for hops in (0, 2):
        want = expected_cells(report["results"], hops)
        got = dict(zip(header, rows[str(hops)]))
        assert {k: got[k] for k in want} == want
    assert rows["0"][header.index("P@1")] == "33.3"  # hand check: only file M2's first suggestion is right
    # Thumbnails of the examples, as links to their file pages; plots inlined.
    assert "https://upload.example/thumb/2/330px-Example.jpg" in page.images  # a hit (Q5 first)
    assert "https://upload.example/thumb/3/330px-Example.jpg" in page.images  # a miss
    assert sum(src.startswith("data:image/png;base64,") for src in page.images) == 3
    assert 'href="https://commons.example/wiki/File:Example_2.jpg"' in text
    # What it was measured on.
    assert "Measured on 3 files of http://127.0.0.1:1/w/api.php" in text
    assert "random weights" in text and "sha256:abc" in text
    assert "uploaded 2024-05-01 08:00:00 UTC to 2024-05-03 07:00:00 UTC" in text


def test_wikitext_parses_with_the_same_tables(report) -> None:
    text = (report["out"] / "report.wiki").read_text()
    code = mwparserfromhell.parse(text)
    assert not code.filter_templates(), "data must never turn into a template"
    tables = wiki_tables(text)
    # {{nobots}} in a cell is shown as text, never transcluded.
    assert "&#123;&#123;nobots&#125;&#125;" in text
    assert tables["zero-shot: the writer's re-check (%)"][4][0] == "page refused ({{nobots}}, protection)"
    html_page = Page()
    html_page.feed((report["out"] / "report.html").read_text())
    for title in ("zero-shot: ranking metrics (%)", "zero-shot: precision by score band (%)",
                  "zero-shot: the writer's re-check (%)", "Calibrated thresholds", "Human evaluation (%)"):
        assert tables[title] == html_page.tables[title], title
    galleries = code.filter_tags(matches=lambda n: n.tag == "gallery")
    assert len(galleries) == 2 and "File:Example 2.jpg|" in str(galleries[0])
    assert "File:Example 3.jpg|human: [[d:Q146|house cat]]" in str(galleries[1])
    assert "[[d:Q5|human]]" in str(galleries[0])
    headings = [h.title.strip_code().strip() for h in code.filter_headings()]
    assert headings[0] == "wikivel-bot: measured precision before the first edit"


def test_summary_json_holds_the_fractions(report) -> None:
    summary = json.loads((report["out"] / "summary.json").read_text())
    linker = summary["linkers"][0]
    assert linker["files"] == 3 and linker["run"]["random_weights"] is True
    want = expected_cells(report["results"], 0)
    assert percent(linker["metrics"]["0"]["P@5"]) == want["P@5"]
    assert summary["thresholds"]["linkers"]["zero-shot"]["threshold"] == \
        report["document"]["linkers"]["zero-shot"]["threshold"]


def test_human_evaluation_shares_and_kappa(report) -> None:
    page = Page()
    page.feed((report["out"] / "report.html").read_text())
    table = page.tables["Human evaluation (%)"]
    header, rows = table[0], {row[0]: row for row in table[1:]}
    # k=1 rows of both raters: rank-1 predictions of the 3 files.
    first = [r for r in zip(*report["ratings"])]
    subjects = [list(pair) for pair, rank in zip(first, [1, 2] * 3) if rank == 1]
    kappa = fleiss(count_table(subjects, ("CC", "TG", "OR", "CI", "IDK"))).kappa
    assert rows["k=1"][header.index("kappa")] == f"{kappa:.3f}"
    cc = sum(r == "CC" for s in subjects for r in s) / (2 * len(subjects))
    assert rows["k=1"][header.index("CC")] == percent(cc)


def test_report_refuses_a_file_that_is_not_results(tmp_path: Path) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"file": "M1", "items": ["Q5"]}\n')
    run = CliRunner().invoke(main, ["report", "--results", str(bad), "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "p.jsonl:1: missing key" in run.output
