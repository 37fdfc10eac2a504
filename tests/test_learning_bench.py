"""bench/learning.py (Naive CLIP's heads) and bench/learning_pair.py (the cascade's pair model)
run end to end on a small budget (SYNTHETIC) and print every part of their report: one run's
rounds for the three strategies, the summary over the grid of seeds with its intervals, the
judge's rule beside the rule before, the corrupted and the poisoned challengers; and the raw
results of every run are written beside the command that made them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--rounds", "2", "--per-round", "90", "--epochs", "2", "--seeds", "0", "--train-seeds", "0,1", "--jobs", "1"]


def _check(out: str, raw: Path) -> None:
    assert "SYNTHETIC" in out and "CPU:" in out and "command: nice -n 10 .venv/bin/python bench/" in out
    for strategy in ("no learning", "queue order", "uncertainty"):
        assert f"| {strategy} | 2 |" in out, out
    assert "2 runs (data seeds 0 × training seeds 0,1); mean ± 95 % t-interval" in out
    assert "The judge's rule, on the same" in out and "Corrupted challengers" in out
    assert "| approve-all | 4 |" in out and "| flip-all | 4 |" in out
    header, *runs = [json.loads(line) for line in raw.read_text().splitlines()]
    assert header["synthetic"] and header["command"].startswith("nice -n 10 .venv/bin/python bench/")
    assert [(r["data_seed"], r["train_seed"]) for r in runs] == [(0, 0), (0, 1)]
    rounds = runs[0]["strategies"]["queue order"]
    assert len(rounds) == 2 and {"precision", "recall", "R@1", "utility"} <= set(rounds[-1]["running"])
    assert len(runs[0]["poisoned"]["flip-all"]) == 2


def test_the_learning_bench_reports_every_strategy(tmp_path) -> None:
    raw = tmp_path / "heads.jsonl"
    out = subprocess.run([sys.executable, "bench/learning.py", *SMALL, "--raw", str(raw)], cwd=ROOT,
                         capture_output=True, text=True, timeout=900, check=True).stdout
    _check(out, raw)
    assert "zero-shot R@1" in out
    # The summary again from the raw results alone: the same tables, without running anything.
    again = subprocess.run([sys.executable, "bench/learning.py", "--from-raw", str(raw)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300, check=True).stdout

    def summary(text: str) -> str:
        return text.split("### The running model")[1].split("Poisoning by")[0]
    assert "summarised again from" in again and summary(again) == summary(out)


def test_the_pair_learning_bench_reports_every_strategy(tmp_path) -> None:
    """bench/learning_pair.py (the cascade's pair model) on a tiny budget: every part of its report."""
    raw = tmp_path / "pair.jsonl"
    out = subprocess.run([sys.executable, "bench/learning_pair.py", *SMALL, "--raw", str(raw)], cwd=ROOT,
                         capture_output=True, text=True, timeout=900, check=True).stdout
    _check(out, raw)
    assert "first-stage R@1" in out
