"""The community-trial report counts the suggestions the safety rules withheld, by rule."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tests.liveeval_support import worked_example
from wikivel_bot.core.safety import PEOPLE, SENSITIVE
from wikivel_bot.liveeval.records import FileResult
from wikivel_bot.liveeval.report import write_report


def test_report_counts_withheld_suggestions_by_rule(tmp_path: Path) -> None:
    a, b = worked_example()
    a = dataclasses.replace(a, withheld={PEOPLE: 3, SENSITIVE: 1})
    b = dataclasses.replace(b, withheld={PEOPLE: 2})
    # The results file keeps the counts; a line written before they existed reads as {}.
    again = FileResult.from_json(json.loads(json.dumps(a.to_json())))
    assert again.withheld == {PEOPLE: 3, SENSITIVE: 1}
    old = {k: v for k, v in b.to_json().items() if k != "withheld"}
    assert FileResult.from_json(old).withheld == {}
    written = write_report([a, b], tmp_path / "report")
    summary = json.loads(written["summary.json"].read_text())
    assert summary["withheld"] == {"zero-shot": {PEOPLE: 5, SENSITIVE: 1}}
    wiki = written["report.wiki"].read_text()
    assert "zero-shot: suggestions withheld by the safety rules" in wiki
    assert "| named person || 5 || 2" in wiki and "| sensitive class || 1 || 1" in wiki
    html = written["report.html"].read_text()
    assert "suggestions withheld by the safety rules" in html
