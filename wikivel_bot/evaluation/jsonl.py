"""Reading ranked predictions and ground truth from JSON Lines files.

One line per file, in the same shape for both::

    {"file": "M123", "items": ["Q146", "Q729"]}                  ranked predictions, best first
    {"file": "M123", "items": ["Q146"]}                          ground truth (any order)
    {"file": "M123", "items": ["Q146", "Q729"], "scores": [0.31, 0.27]}   optional scores

``file`` is any non-empty string (a MediaInfo id such as ``M123`` or a title); ``items`` are
QIDs. Other keys are ignored so that other tools' output can carry extra fields. Blank lines
are skipped; a ``.gz`` suffix is read through gzip. Every problem is a
:class:`~wikivel_bot.errors.UsageError` that names the file and the line number.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Dict, Iterator, Optional, Tuple, Union, cast

from wikivel_bot.errors import UsageError
from wikivel_bot.types import QID_REGEX, is_qid

# Item ids one per line, for checking a whole line's items with one regex call (below).
_QID_LINES = re.compile(rf"(?:{QID_REGEX}\n)*")


@dataclass(frozen=True)
class Record:
    """One line of a predictions or truth file.

    :param file: the file it is about (``M123`` or a title).
    :param items: QIDs, ranked best first for predictions.
    :param line: 1-based line number in the source file.
    :param scores: one score per item when the line gave them, else None.
    """

    file: str
    items: Tuple[str, ...]
    line: int
    scores: Optional[Tuple[float, ...]] = None


def _open(path: Path) -> IO[bytes]:
    try:
        if path.suffix == ".gz":
            return cast(IO[bytes], gzip.open(path, "rb"))
        return open(path, "rb")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def iter_records(path: Union[str, Path]) -> Iterator[Record]:
    """Yield the records of a JSON Lines file in file order (repeats are not checked here).

    :param path: the ``.jsonl`` (or ``.jsonl.gz``) file.
    :raises UsageError: ``PATH:LINE: what is wrong`` for the first bad line.
    """
    path = Path(path)
    with _open(path) as handle:
        try:
            for number, raw in enumerate(handle, start=1):
                # Decode line by line so an encoding error still has a line number.
                try:
                    text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
                except UnicodeDecodeError:
                    raise UsageError(f"{path}:{number}: not UTF-8 text") from None
                if text:
                    yield _parse(text, path, number)
        except (OSError, EOFError) as exc:  # a truncated or corrupt .gz
            raise UsageError(f"{path}: cannot be read to the end ({exc})") from None


def read_records(path: Union[str, Path]) -> Dict[str, Record]:
    """All records of a file, keyed by file, in file order.

    :param path: the JSON Lines file.
    :raises UsageError: for a bad line, or a file given on two lines (both line numbers named).
    """
    records: Dict[str, Record] = {}
    for record in iter_records(path):
        first = records.get(record.file)
        if first is not None:
            raise UsageError(f"{path}:{record.line}: file {record.file!r} already given on line {first.line}")
        records[record.file] = record
    return records


def _parse(text: str, path: Path, number: int) -> Record:
    where = f"{path}:{number}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise UsageError(f'{where}: expected an object like {{"file": "M123", "items": ["Q146"]}}')
    file = data.get("file")
    if not isinstance(file, str) or not file.strip():
        raise UsageError(f'{where}: "file" must be a non-empty string')
    items = data.get("items")
    if not isinstance(items, list):
        raise UsageError(f'{where}: "items" must be a list of QIDs')
    # One regex call per line instead of one per item (a line may hold 100 QIDs); only a
    # bad line is searched item by item to name the culprit.
    if items and not _all_qids(items):
        for position, item in enumerate(items, start=1):
            if not is_qid(item):
                raise UsageError(f"{where}: item {position} ({item!r}) is not a QID like Q146")
    scores = data.get("scores")
    parsed_scores: Optional[Tuple[float, ...]] = None
    if scores is not None:
        if not isinstance(scores, list) or len(scores) != len(items):
            raise UsageError(f'{where}: "scores" must be a list with one number per item')
        for position, score in enumerate(scores, start=1):
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise UsageError(f"{where}: score {position} ({score!r}) is not a finite number")
        parsed_scores = tuple(float(s) for s in scores)
    return Record(file=file, items=tuple(items), line=number, scores=parsed_scores)


def _all_qids(items: list) -> bool:
    if not all(type(item) is str for item in items):
        return False
    joined = "\n".join(items)
    # The count rules out an item with a newline of its own passing as two QIDs.
    return joined.count("\n") == len(items) - 1 and _QID_LINES.fullmatch(joined + "\n") is not None
