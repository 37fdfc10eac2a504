"""Helpers for the community-trial tests: a small hierarchy, constructed results, files.

The hierarchy is the worked example of ``core.metrics``::

    Q146 house cat -> Q7377 mammal (1 hop) -> Q729 animal (2 hops)
    Q144 dog       -> Q7377 mammal (1 hop) -> Q729 animal (2 hops)
    Q5 human (no parents here)

Results for calibration and report tests are built with :func:`result` from (score, hop,
category) triples, so every number a test expects can be counted by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from tests.linker_support import MemoryLabelSet
from wikivel_bot.liveeval.calibrate import CALIBRATE, HELD_OUT, split_of
from wikivel_bot.liveeval.compare import compare
from wikivel_bot.liveeval.records import FileResult, RunInfo, Suggestion
from wikivel_bot.types import Depiction, MediaFile

HIERARCHY = MemoryLabelSet(
    items=[("Q146", "house cat", "", ""), ("Q144", "dog", "", ""), ("Q7377", "mammal", "", ""),
           ("Q729", "animal", "", ""), ("Q5", "human", "", "")],
    parents={"Q146": ["Q7377"], "Q144": ["Q7377"], "Q7377": ["Q729"]},
)
CATEGORIES = {"Q146": "animal", "Q144": "animal", "Q7377": "animal", "Q729": "animal", "Q5": "human"}
LABELS = {q: label for q, label, _, _ in HIERARCHY.items}

RUN = RunInfo(site="http://127.0.0.1:1/w/api.php", started="2026-11-20T10:00:00Z", selection="upload log",
              linker="zero-shot", linker_version="zero-shot/v1 test", model="tiny", weights="random",
              random_weights=True, labelset_hash="sha256:abc", labelset_items=5, top_k=10, tool_version="0.1.0")


def ancestors(qid: str) -> Dict[str, int]:
    return HIERARCHY.ancestors(qid, 3)


def media(page_id: int, *qids: str, **flags: object) -> MediaFile:
    """A file page with these human depicts statements."""
    return MediaFile(page_id=page_id, title=f"File:Example {page_id}.jpg",
                     depicts=tuple(Depiction(q) for q in qids), **flags)  # type: ignore[arg-type]


def compared(page_id: int, ranked: Sequence[Tuple[str, float]], truth: Sequence[str],
             run: RunInfo = RUN, uploaded: str = "2024-05-01T08:00:00Z") -> FileResult:
    """:func:`compare` on the test hierarchy, the file carrying ``truth`` as its statements."""
    return compare(f"M{page_id}", ranked, truth, ancestors, media=media(page_id, *truth),
                   category_of=CATEGORIES.get, label_of=LABELS.get, known=lambda q: q in LABELS, run=run,
                   title=f"File:Example {page_id}.jpg", uploaded=uploaded,
                   page_url=f"https://commons.example/wiki/File:Example_{page_id}.jpg",
                   thumb_url=f"https://upload.example/thumb/{page_id}/330px-Example.jpg")


def worked_example() -> Tuple[FileResult, FileResult]:
    """File A: the metrics docstring's example; file B: truth {Q5}, ranked Q5 then Q146."""
    a = compared(1, [("Q5", 0.9), ("Q729", 0.8), ("Q144", 0.7), ("Q7377", 0.6), ("Q146", 0.5)], ["Q146", "Q144"])
    b = compared(2, [("Q5", 0.95), ("Q146", 0.85)], ["Q5"], uploaded="2024-05-02T09:30:00Z")
    return a, b


def result(file: str, suggestions: Iterable[Tuple[float, Optional[int], str]], run: RunInfo = RUN) -> FileResult:
    """A constructed result: one suggestion per (score, hop or None, category), ranked by
    score; the human item is ``Q1`` (the hits are not looked at by calibration)."""
    ordered = sorted(suggestions, key=lambda s: -s[0])
    made = tuple(Suggestion(rank=i + 1, qid=f"Q{100 + i}", score=score, category=category, hop=hop,
                            match="Q1" if hop is not None else "")
                 for i, (score, hop, category) in enumerate(ordered))
    correct = tuple(s.rank for s in made if s.hop == 0)
    hits = {h: (tuple(s.rank for s in made if s.correct(h)), correct[:1]) for h in range(4)}
    return FileResult(file=file, truth=("Q1",), suggestions=made, hits=hits,
                      found={"Q1": tuple(correct[0] if correct else None for _ in range(4))}, run=run)


def files_in(part: str, count: int, holdout: float = 0.5, prefix: str = "M") -> List[str]:
    """The first ``count`` file ids ``M1, M2, ...`` that :func:`split_of` puts in ``part``."""
    assert part in (CALIBRATE, HELD_OUT)
    found: List[str] = []
    number = 1
    while len(found) < count:
        name = f"{prefix}{number}"
        if split_of(name, holdout) == part:
            found.append(name)
        number += 1
    return found


def write_jsonl(path: Path, results: Iterable[FileResult]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for item in results:
            handle.write(json.dumps(item.to_json()) + "\n")
    return path
