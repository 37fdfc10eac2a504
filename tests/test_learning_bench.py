"""bench/learning.py (Naive CLIP's heads) and bench/learning_pair.py (the cascade's pair model)
run end to end on a small budget (SYNTHETIC) and print every part of their report: the
per-round table for the three strategies and the corrupted challengers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def test_the_learning_bench_reports_every_strategy() -> None:
    out = subprocess.run([sys.executable, "bench/learning.py", "--rounds", "2", "--per-round", "90", "--epochs", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, check=True).stdout
    assert "SYNTHETIC" in out and "CPU:" in out
    for strategy in ("no learning", "queue order", "uncertainty"):
        assert f"| {strategy} | 2 |" in out, out
    assert "Corrupted challengers refused:" in out and "Against the final `queue order` model" in out


def test_the_pair_learning_bench_reports_every_strategy() -> None:
    """bench/learning_pair.py (the cascade's pair model) on a tiny budget: every part of its report."""
    out = subprocess.run([sys.executable, "bench/learning_pair.py", "--rounds", "2", "--per-round", "90", "--epochs", "2",
                          "--seeds", "0"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True).stdout
    assert "SYNTHETIC" in out and "CPU:" in out and "### Seed 0 (first-stage R@1" in out
    for strategy in ("no learning", "queue order", "uncertainty"):
        assert f"| {strategy} | 2 |" in out, out
    assert "Corrupted challengers refused:" in out and "Against the final `queue order` model" in out
