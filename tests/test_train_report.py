"""The report's pieces that need no training run: the model-card template and its filling,
and the paper's Table 4 as the report quotes it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wikivel_bot.evaluation.runs.paper_report import (
    PAPER_NAME,
    PAPER_TABLE4,
    TABLE4_COLUMNS,
    TEMPLATE,
    fill_template,
)

ROOT = Path(__file__).resolve().parents[1]


def test_fill_template_replaces_placeholders_and_drops_comments():
    text = "<!-- a note with {{nothing}} -->\n# {{ model }}\n{{split}} split\n"
    assert fill_template(text, {"model": "naive-mlp", "split": "test"}) == "# naive-mlp\ntest split\n"
    with pytest.raises(KeyError, match="unknown"):
        fill_template("{{unknown}}", {})


def test_model_card_template_placeholders_are_all_filled_by_the_report():
    from wikivel_bot.evaluation.runs import paper_report as report

    assert TEMPLATE == ROOT / "docs" / "model-card.md"
    names = set(re.findall(r"\{\{\s*([a-z_]+)\s*\}\}", re.sub(r"<!--.*?-->", "", TEMPLATE.read_text(), flags=re.S)))
    source = Path(report.__file__).read_text()
    body = source[source.index("def card_values"):source.index("def write_report")]
    filled = set(re.findall(r'^\s+"([a-z_]+)": ', body, flags=re.M))
    assert names and names <= filled, names - filled


def test_paper_table4_as_published():
    assert len(TABLE4_COLUMNS) == 9 and TABLE4_COLUMNS[2] == "R@10"
    assert PAPER_TABLE4["MLP Naive CLIP"][:3] == (16.2, 40.5, 51.8)
    assert PAPER_TABLE4["CLIP Fusion"][TABLE4_COLUMNS.index("mAP@10")] == 34.3
    assert PAPER_TABLE4["Top-k baseline"][TABLE4_COLUMNS.index("DivR@10")] == 29.8
    # R@1 = DivR@1 = mAP@1 in every row of the paper (the definitions in core/metrics.py rely on it).
    for values in PAPER_TABLE4.values():
        assert values[0] == values[3] == values[6]
    assert set(PAPER_NAME.values()) <= set(PAPER_TABLE4)
