"""The documented reproduction check (docs/reproduce.md §1): one command builds, per data seed,
a synthetic dataset in the published layout, reads it back through the published route,
trains and evaluates every model per training seed, keeps each run's raw results, and prints
every Table 4 row as mean ± 95 % interval beside the paper's numbers, labelled synthetic, with
an order between rows only where the paired interval excludes 0.

The aggregation is checked on made-up per-seed numbers (fast); the route end to end is slow.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Dict, List

import pytest

from tests.train_support import invoke
from wikivel_bot.evaluation.runs.paper_report import PAPER_TABLE4, TABLE4_COLUMNS
from wikivel_bot.evaluation.runs.reproduce_summary import summarize
from wikivel_bot.evaluation.seeds import order_between, paired_interval, seed_interval, t95

DOCS = Path(__file__).resolve().parents[1] / "docs"
ROWS = list(PAPER_TABLE4)


def grid(by_data: Dict[int, List[float]]) -> Dict[tuple, float]:
    """{(data seed, training seed): value} from one list of training-seed values per data seed."""
    return {(d, t): v for d, values in by_data.items() for t, v in enumerate(values)}


# -- the statistics, on made-up numbers ------------------------------------------------------

def test_t_quantiles_match_the_published_table() -> None:
    assert t95(1) == 12.706 and t95(2) == 4.303 and t95(14) == 2.145
    assert abs(t95(40) - 2.021) < 5e-4 and abs(t95(120) - 1.980) < 5e-4
    with pytest.raises(ValueError):
        t95(0)


def test_interval_is_taken_over_the_data_seed_means() -> None:
    # Data-seed means 0.20, 0.22, 0.24 (five training seeds each, spread inside each draw).
    values = grid({0: [0.18, 0.22, 0.19, 0.21, 0.20], 1: [0.20, 0.24, 0.22, 0.22, 0.22],
                   2: [0.30, 0.18, 0.24, 0.24, 0.24]})
    found = seed_interval(values)
    half = 4.303 * 0.02 / math.sqrt(3)  # t(2 df) × sd of the three means / sqrt(3)
    assert found.unit == "data seed" and found.units == 3 and found.runs == 15
    assert found.mean == pytest.approx(0.22)
    assert found.low == pytest.approx(0.22 - half) and found.high == pytest.approx(0.22 + half)
    # Treating the 15 runs as independent would be narrower: the nested interval is not that.
    assert found.half_width == pytest.approx(half) and found.half_width > 0.03


def test_one_data_seed_gives_an_interval_over_training_seeds_but_no_order() -> None:
    a = grid({0: [0.30, 0.31, 0.29, 0.30, 0.30]})
    b = grid({0: [0.20, 0.21, 0.19, 0.20, 0.20]})
    assert seed_interval(a).unit == "training seed" and seed_interval(a).low is not None
    order = order_between("A", "B", "R@1", a, b)
    # +10 points on every run, but on one draw of test files: nothing is claimed.
    assert order.difference.low == pytest.approx(0.10) and order.verdict == "none"
    assert "one data seed" in order.reason


def test_an_order_is_claimed_when_the_paired_interval_excludes_zero() -> None:
    # B moves a lot between seeds (its own interval is wide) and A tracks it 3 points higher:
    # the unpaired intervals overlap, the paired one does not.
    b = grid({0: [0.10, 0.30, 0.20, 0.15, 0.25], 1: [0.05, 0.35, 0.20, 0.25, 0.15],
              2: [0.40, 0.10, 0.25, 0.30, 0.20]})
    shift = {0: 0.030, 1: 0.025, 2: 0.035}
    a = {key: value + shift[key[0]] for key, value in b.items()}
    ia, ib = seed_interval(a), seed_interval(b)
    assert ia.low < ib.high  # unpaired: overlapping, would order nothing
    diff = paired_interval(a, b)
    half = 4.303 * 0.005 / math.sqrt(3)
    assert diff.mean == pytest.approx(0.03) and diff.low == pytest.approx(0.03 - half)
    assert order_between("A", "B", "R@1", a, b).verdict == "above"
    assert order_between("B", "A", "R@1", b, a).verdict == "below"


def test_no_order_when_the_paired_interval_holds_zero() -> None:
    b = grid({0: [0.20] * 5, 1: [0.20] * 5, 2: [0.20] * 5})
    shift = {0: 0.05, 1: -0.01, 2: 0.02}  # mean +0.02, sd 0.03: [−0.055, +0.095]
    a = {key: value + shift[key[0]] for key, value in b.items()}
    order = order_between("A", "B", "R@1", a, b)
    assert order.difference.low < 0 < order.difference.high and order.verdict == "none"
    # Identical rows never order each other (a zero-width interval at 0).
    assert order_between("B", "B2", "R@1", b, dict(b)).verdict == "none"


def test_a_single_run_has_no_interval_and_claims_no_order() -> None:
    a, b = {(0, 0): 0.9}, {(0, 0): 0.1}
    assert seed_interval(a).low is None and seed_interval(a).half_width is None
    order = order_between("A", "B", "R@1", a, b)
    assert order.verdict == "none" and "no interval" in order.reason


def test_a_paired_difference_needs_the_same_seeds() -> None:
    with pytest.raises(ValueError, match=r"\(1, 0\)"):
        paired_interval({(0, 0): 0.1, (1, 0): 0.2}, {(0, 0): 0.1})


def raw_run(data_seed: int, train_seed: int, r1: Dict[str, float]) -> dict:
    """A made-up per-seed raw result in the layout the check writes (R@1 given, rest derived)."""
    rows = [{"row": row, "model": row.lower(), "batch": 128 if row == "CLIP Fusion" else None,
             "ours": [r1[row]] + [min(1.0, r1[row] + 0.1 * i) for i in range(1, len(TABLE4_COLUMNS))]}
            for row in ROWS]
    return {"synthetic": True, "command": "wikivel-bot dataset reproduce-synthetic --out x", "data_seed": data_seed,
            "train_seed": train_seed, "files": 117, "columns": list(TABLE4_COLUMNS), "rows": rows,
            "settings": {"files": 1200, "epochs": 15, "batch_size": 128}}


def test_the_table_gives_mean_and_interval_and_only_supported_orders() -> None:
    runs = []
    for d, base in enumerate((0.20, 0.22, 0.24)):
        for t in range(5):
            noise = (t - 2) * 0.01
            r1 = {row: 0.10 for row in ROWS}
            r1["CLIP Fusion"] = base + noise             # far above every other row, on every seed
            r1["MLP Naive CLIP"] = 0.10 + (0.02 if d == 0 else -0.01) + noise  # about level with the rest
            runs.append(raw_run(d, t, r1))
    summary = summarize(runs, {"CLIP Fusion": 1024})
    text = summary.table()
    fusion = next(line for line in text.splitlines() if line.startswith("| CLIP Fusion | synthetic |"))
    assert fusion.split("|")[4].strip() == f"22.0 ± {100 * 4.303 * 0.02 / math.sqrt(3):.1f}"
    orders = {(o.first, o.second, o.metric): o for o in summary.orders}
    assert orders[("Zero-shot", "CLIP Fusion", "R@1")].verdict == "below"
    assert orders[("Zero-shot", "MLP Naive CLIP", "R@1")].verdict == "none"
    assert orders[("Zero-shot", "Random baseline", "R@1")].verdict == "none"  # identical rows
    assert "| Zero-shot − CLIP Fusion | -12.0 [" in text and "second above" in text
    assert "3 data seed means (2 df)" in text and "15 runs at 1,200 files, 15 epochs, batch 128" in text
    data = summary.to_dict()
    assert data["rows"][-1]["ours"]["R@1"]["mean"] == pytest.approx(0.22) and len(data["runs"]) == 15


def test_the_table_of_one_run_claims_no_order() -> None:
    r1 = {row: 0.10 for row in ROWS}
    r1["CLIP Fusion"] = 0.40
    summary = summarize([raw_run(0, 0, r1)], {})
    text = summary.table()
    assert all(o.verdict == "none" for o in summary.orders)
    assert "one run gives no interval, so no order between rows is claimed" in text
    assert "0 of 42 orders claimed" in text and "first above" not in text and "second above" not in text
    fusion = next(line for line in text.splitlines() if line.startswith("| CLIP Fusion | synthetic |"))
    assert fusion.split("|")[4].strip() == "40.0"  # no ± without an interval


def test_runs_of_different_sizes_or_the_same_seeds_make_no_table() -> None:
    r1 = {row: 0.10 for row in ROWS}
    other = raw_run(1, 0, r1)
    other["settings"] = {"files": 1200, "epochs": 30, "batch_size": 128}
    with pytest.raises(ValueError, match="different sizes"):
        summarize([raw_run(0, 0, r1), other], {})
    with pytest.raises(ValueError, match="same"):
        summarize([raw_run(0, 0, r1), raw_run(0, 0, r1)], {})


def test_bad_seed_lists_and_an_empty_summary_are_one_line_errors(tmp_path) -> None:
    for bad in ("x", "1,1", "3-1", ""):
        result = invoke(["dataset", "reproduce-synthetic", "--out", str(tmp_path), "--data-seeds", bad])
        assert result.exit_code != 0 and "--data-seeds takes distinct seeds" in result.output, bad
        assert "Traceback" not in result.output
    result = invoke(["dataset", "reproduce-synthetic", "--out", str(tmp_path), "--summarize"])
    assert result.exit_code != 0 and "no per-seed results" in result.output and str(tmp_path) in result.output


# -- the route end to end ---------------------------------------------------------------------

@pytest.mark.slow
def test_reproduce_synthetic_prints_every_table4_row(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    out = tmp_path / "check"
    args = ["dataset", "reproduce-synthetic", "--out", str(out), "--files", "120", "--epochs", "2",
            "--data-seeds", "0,1", "--train-seeds", "0", "--no-progress"]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("Table 4") and "SYNTHETIC data" in line for line in lines)
    assert set(ROWS) == set(PAPER_TABLE4)  # every row of the paper's Table 4
    for row in ROWS:
        ours = [line for line in lines if line.startswith(f"| {row} | synthetic |")]
        paper = [line for line in lines if line.startswith(f"| {row} | paper |")]
        assert len(ours) == 1 and len(paper) == 1, row
        # The paper's numbers exactly as printed in its Table 4, after its batch size.
        assert paper[0].split("|")[4:13] == [f" {v:.1f} " for v in PAPER_TABLE4[row]]
        assert " ± " in ours[0].split("|")[4]  # two data seeds: an interval
    # The published layout was written and read back (not the synthetic directory itself).
    assert (out / "data-0" / "published" / "commons_images" / "test" / "00.tar").is_file()
    card = json.loads((out / "data-1" / "data" / "card.json").read_text())
    assert card["labels"]["published"] is True
    # Each run's raw results are kept with the command that made them; the summary is theirs.
    raws = {(d, 0): json.loads((out / "raw" / f"data{d}-train0.json").read_text()) for d in (0, 1)}
    for raw in raws.values():
        assert raw["synthetic"] is True and raw["files"] > 0 and raw["cpu"]
        assert raw["command"].startswith(f"wikivel-bot dataset reproduce-synthetic --out {out} --files 120 --epochs 2")
        assert "--data-seeds 0,1 --train-seeds 0" in raw["command"]
        for row in raw["rows"]:  # measured, not copied: a real score vector in [0, 1]
            assert len(row["ours"]) == 9 and all(0.0 <= v <= 1.0 for v in row["ours"])
            assert row["ours"][2] >= row["ours"][0]  # R@10 >= R@1
    assert raws[(0, 0)]["rows"] != raws[(1, 0)]["rows"]  # two draws of data, two results
    results = json.loads((out / "results.json").read_text())
    assert results["synthetic"] is True and results["data_seeds"] == [0, 1]
    for i, row in enumerate(results["rows"]):
        mean = sum(raw["rows"][i]["ours"][0] for raw in raws.values()) / 2
        assert row["ours"]["R@1"]["mean"] == pytest.approx(mean) and row["ours"]["R@1"]["units"] == 2

    # Each row's batch label is the batch its run trained at (the checkpoint's own record),
    # the paper's 1,024 : 256 kept at the default scale (128 : 32).
    from wikivel_bot.linker.checkpoint import load_checkpoint

    def label(row: str, source: str) -> str:
        line = next(line for line in lines if line.startswith(f"| {row} | {source} |"))
        return line.split("|")[3].strip()

    runs = {"MLP Naive CLIP": "naive-mlp", "TE Naive CLIP BS 256": "naive-te",
            "MLP Naive CLIP BS 256": "naive-mlp-bs-small", "CLIP Fusion": "fusion"}
    by_row = {r["row"]: r for r in results["rows"]}
    for row, run in runs.items():
        extra = load_checkpoint(out / "data-0" / "train-0" / "runs" / run / "best.pt").extra
        trained_at = min(int(extra["train"]["batch_size"]), int(extra["data"]["train_rows"]))
        assert by_row[row]["batch"] == trained_at, row
    assert {row: by_row[row]["batch"] for row in runs} == {
        "MLP Naive CLIP": 128, "TE Naive CLIP BS 256": 32, "MLP Naive CLIP BS 256": 32, "CLIP Fusion": 128}
    assert [label(row, "synthetic") for row in runs] == ["128", "32", "32", "128"]
    assert [label(row, "paper") for row in runs] == ["1,024", "256", "256", "1,024"]
    assert label("Zero-shot", "synthetic") == "—" and by_row["Top-k baseline"]["batch"] is None
    # The small-batch MLP row is its own run, not a copy of the default one.
    assert raws[(0, 0)]["rows"][5]["ours"] != raws[(0, 0)]["rows"][3]["ours"]

    # A rerun with the same options trains nothing (the raw results are reused) ...
    table = (out / "report.md").read_text()
    shutil.rmtree(out / "data-0" / "train-0")
    again = invoke(args)
    assert again.exit_code == 0 and "reused" in again.output
    assert not (out / "data-0" / "train-0").exists() and (out / "report.md").read_text() == table
    # ... and the summary is rebuilt from the raw files alone.
    for work in ("data-0", "data-1"):
        shutil.rmtree(out / work)
    (out / "report.md").unlink()
    summary = invoke(["dataset", "reproduce-synthetic", "--out", str(out), "--summarize"])
    assert summary.exit_code == 0 and (out / "report.md").read_text() == table


# -- the figures in docs/reproduce.md ---------------------------------------------------------

def test_the_documented_table_is_the_summary_of_the_kept_raw_results() -> None:
    """docs/reproduce.md §1 prints exactly what the kept per-seed results summarize to, and
    they are at least 5 training seeds on each of 3 data seeds, each with its command."""
    from wikivel_bot.evaluation.runs.reproduce import PAPER_BATCH, read_raw

    kept = DOCS / "results" / "reproduce"
    runs = read_raw(kept)
    by_data: Dict[int, set] = {}
    for run in runs:
        by_data.setdefault(run["data_seed"], set()).add(run["train_seed"])
        assert run["synthetic"] is True and run["cpu"] and run["seconds"] > 0
        assert run["command"].startswith("wikivel-bot dataset reproduce-synthetic --out ")
    assert len(by_data) >= 3 and all(len(seeds) >= 5 for seeds in by_data.values())
    table = summarize(runs, PAPER_BATCH).table()
    assert (kept / "report.md").read_text(encoding="utf-8").endswith(table)
    page = (DOCS / "reproduce.md").read_text(encoding="utf-8")
    for line in table.splitlines():
        if line.startswith("| "):
            assert line in page, line
