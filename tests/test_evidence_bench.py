"""The evidence bench (``bench/evidence.py``) on a tiny synthetic set: its table is whole, and
evidence that is always right cannot make rank 1 worse.

Tiny sizes (100 files, one epoch per model, the tiny random-init open_clip model): the figures
are SYNTHETIC and mean nothing by themselves. What must hold whatever the training did: when
every file carries a linked category naming what it depicts and no evidence is misleading,
the evidence model learns that evidence is right, so each file's first suggestion with
evidence is depicted — R@1 with evidence is at least R@1 of the image alone, for every linker.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")

from wikivel_bot.evaluation.runs.evidence import (  # noqa: E402
    COLUMNS,
    EVIDENCE_ALONE,
    IMAGE_ONLY,
    LINKERS,
    WITH_EVIDENCE,
    EvidenceBenchOptions,
    comparison_markdown,
    run_evidence_bench,
)


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    options = EvidenceBenchOptions(files=100, seed=0, shares={"category": 1.0, "misleading": 0.0}, epochs=1,
                                   cascade_epochs=1, candidates=10, threads=1, precision="fp32")
    return run_evidence_bench(tmp_path_factory.mktemp("evidence-bench"), options)


def test_the_table_has_every_row_and_column(honest):
    expected = [(name, mode) for name in LINKERS for mode in (IMAGE_ONLY, WITH_EVIDENCE)]
    assert [(r["linker"], r["mode"]) for r in honest.rows] == expected + [("evidence", EVIDENCE_ALONE)]
    for row in honest.rows:
        assert set(COLUMNS) <= set(row), row["linker"]
        for column in ("R@1", "R@10", "nDCG@5", "recall"):
            assert 0.0 <= row[column] <= 1.0, (row["linker"], row["mode"], column)
    table = comparison_markdown(honest)
    assert table.startswith("SYNTHETIC")
    assert "| linker | evidence | " + " | ".join(COLUMNS) + " |" in table
    for name, mode in expected + [("evidence", EVIDENCE_ALONE)]:
        assert f"| {name} | {mode} | " in table
    assert set(honest.models) == set(LINKERS) and honest.files > 0


def test_evidence_that_is_always_right_never_lowers_rank_one(honest):
    # Every file has a linked category naming its leaf, and none misleads.
    assert honest.shares["category"] == 1.0 and honest.shares["misleading"] == 0.0
    for name in LINKERS:
        image, both = honest.row(name, IMAGE_ONLY), honest.row(name, WITH_EVIDENCE)
        assert both["R@1"] >= image["R@1"], name
        # Nothing is misleading, so there is nothing to keep; items outside the label set are
        # named by evidence only, so the image alone never suggests one.
        assert both["misleading kept"] is None and image["outside label set"] in (0.0, None)
    # Evidence alone proposes only right items here.
    assert honest.row("evidence", EVIDENCE_ALONE)["precision"] == 1.0
