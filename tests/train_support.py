"""Helpers for the dataset and training tests: the fixture dumps' label set, a synthetic
dataset, and running the CLI in-process.

The fixture dumps are written by ``tests/fixtures/train/make_fixtures.py``, which also holds
their items (``ITEMS``) and the hand-derived outcomes (``EXPECTED``).
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Sequence

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "train"
MEDIAINFO_DUMP = FIXTURES / "commons-20231107-mediainfo-sample.json.bz2"
PAGES_DUMP = FIXTURES / "commonswiki-20231107-pages-articles-sample.xml.bz2"
MIN_FREQ = 3


def fixture_module() -> Any:
    """``make_fixtures.py`` as a module (ITEMS, EXPECTED, files())."""
    spec = importlib.util.spec_from_file_location("train_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def depicts_counts() -> Dict[str, int]:
    """Direct depicts counts of the fixture MediaInfo dump (deprecated and somevalue skipped)."""
    counts: Counter = Counter()
    for f in fixture_module().files():
        for entry in f["depicts"] or ():
            qid, rank = entry if isinstance(entry, tuple) else (entry, "normal")
            if rank != "deprecated" and qid.startswith("Q"):
                counts[qid] += 1
    return dict(counts)


def fixture_label_set() -> Any:
    """The fixture items with f = 3 (Laika -> dog, Einstein -> human, the trinket dropped)."""
    from wikivel_bot.labels import label_set_from_records

    return label_set_from_records(fixture_module().ITEMS, depicts_counts(), min_freq=MIN_FREQ)


def write_fixture_labels(directory: Path) -> Path:
    """The fixture label set written as an artifact directory."""
    from wikivel_bot.labels import write_label_set

    return write_label_set(fixture_label_set(), directory)


_CACHE: Dict[str, str] = {}


def invoke(args: Sequence[str]) -> Any:
    """Run ``wikivel-bot ARGS`` in-process (click's CliRunner); the result has exit_code/output.

    ``linker.cache_dir`` (label indexes, embeddings) points at a temporary directory, so no
    test writes a cache into the checkout.
    """
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    if "dir" not in _CACHE:
        _CACHE["dir"] = tempfile.mkdtemp(prefix="wikivel-train-cache-")
        atexit.register(shutil.rmtree, _CACHE["dir"], ignore_errors=True)
    env = {"WIKIVEL_LINKER_CACHE_DIR": _CACHE["dir"]}
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


def r_at(results: Dict[str, Any], model: str, metric: str = "R@10", hops: int = 0) -> float:
    """One score from ``results.json`` of ``evaluate --report``."""
    for entry in results["models"]:
        if entry["name"] == model:
            return float(entry["scores"][str(hops)][metric])
    raise KeyError(model)


def manifest_rows(directory: Path) -> List[Dict[str, Any]]:
    """The manifest of a dataset directory as a list of dicts."""
    import pyarrow.parquet as pq

    return pq.read_table(directory / "manifest.parquet").to_pylist()
