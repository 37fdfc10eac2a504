"""Import of decisions made offline in an exported CSV (the ``decision`` column).

Each row is checked on its own and reported with its line number when it cannot be applied
(unknown file, bad QID, unknown decision word, already written, ...); the good rows are
applied regardless. A decision that already holds is left alone, so importing the same file
twice changes nothing the second time. Spreadsheets re-save CSV files in their own dialect:
a byte-order mark, ``;`` or tab separators and upper-case words are all accepted.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, TextIO, Tuple

from wikivel_bot.core.review_rules import APPLY, REFUSE, UNCHANGED, offline_verdict, parse_decision
from wikivel_bot.errors import IllegalTransition, NotFound, UsageError
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction, is_qid, mid_of, page_id_of

REQUIRED_COLUMNS = ("qid", "decision")


@dataclass(frozen=True)
class RowNote:
    """A row that was not applied, and why. ``line`` is the row's first line in the file."""

    line: int
    reason: str


@dataclass
class ImportReport:
    """What an import did: applied decisions by action, unchanged and refused rows."""

    applied: Counter = field(default_factory=Counter)
    unchanged: List[RowNote] = field(default_factory=list)
    refused: List[RowNote] = field(default_factory=list)
    undecided: int = 0  # rows with an empty decision cell

    @property
    def applied_total(self) -> int:
        return sum(self.applied.values())

    @property
    def ok(self) -> bool:
        """True when every row with a decision was applied or already held."""
        return not self.refused

    def summary(self) -> str:
        """One line: counts of applied, unchanged, undecided and refused rows."""
        actions = ", ".join(f"{a.value} {self.applied[a]}" for a in DecisionAction if self.applied[a])
        line = (
            f"applied {self.applied_total}" + (f" ({actions})" if actions else "")
            + f"; unchanged {len(self.unchanged)}; no decision {self.undecided}; refused {len(self.refused)}"
        )
        if self.applied_total == 0 and self.unchanged and not self.refused:
            line += " - nothing changed: every decision in the file was already applied"
        return line


def import_decisions_file(store: Store, path: Path, reviewer: str) -> ImportReport:
    """:func:`import_decisions` on a file; ``-`` is not handled here (pass a stream)."""
    try:
        # utf-8-sig: spreadsheet programs put a byte-order mark in front of UTF-8 CSV.
        with open(path, encoding="utf-8-sig", newline="") as handle:
            return import_decisions(store, handle, reviewer)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8 CSV") from None


def import_decisions(store: Store, stream: TextIO, reviewer: str, source: str = "import") -> ImportReport:
    """Apply the decisions of an exported CSV.

    :param store: the queue.
    :param stream: the CSV text (header row first; ``mid`` or ``title``, ``qid`` and
        ``decision`` columns are needed, others are ignored).
    :param reviewer: recorded with every decision.
    :param source: recorded with every decision.
    :raises UsageError: the file has no usable header (nothing is applied then).
    """
    if not reviewer:
        raise UsageError("importing decisions needs a reviewer name (--reviewer or review.reviewer)")
    text = stream.read().lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    columns = _header(reader)
    report = ImportReport()
    seen: Dict[Tuple[int, str], int] = {}
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            report.refused.append(RowNote(line, f"not readable as CSV: {exc}"))
            continue
        if not any(cell.strip() for cell in row):
            continue
        cells = {name: row[i].strip() if i < len(row) else "" for name, i in columns.items()}
        _import_row(store, line, cells, reviewer, source, seen, report)
    return report


def _import_row(
    store: Store,
    line: int,
    cells: Dict[str, str],
    reviewer: str,
    source: str,
    seen: Dict[Tuple[int, str], int],
    report: ImportReport,
) -> None:
    def refuse(reason: str) -> None:
        report.refused.append(RowNote(line, reason))

    try:
        action = parse_decision(cells.get("decision", ""))
    except ValueError as exc:
        return refuse(str(exc))
    if action is None:
        report.undecided += 1
        return None
    qid = cells.get("qid", "").upper()
    if not is_qid(qid):
        return refuse(f"bad QID {cells.get('qid', '')!r} (expected Q followed by digits)")
    page_id, problem = _page_id(store, cells)
    if page_id is None:
        return refuse(problem)
    key = (page_id, qid)
    if key in seen:
        return refuse(f"{mid_of(page_id)} {qid} is already decided on line {seen[key]} of this file")
    seen[key] = line
    status = reviews.pair_status(store, page_id, qid)
    if not status.file_known:
        return refuse(f"unknown file {mid_of(page_id)} (not in the queue)")
    verdict, reason = offline_verdict(status.state, status.prominent, status.last_action, action)
    if verdict == REFUSE:
        return refuse(f"{mid_of(page_id)} {qid}: {reason}")
    if verdict == UNCHANGED:
        report.unchanged.append(RowNote(line, f"{mid_of(page_id)} {qid}: {reason}"))
        return None
    assert verdict == APPLY
    try:
        store.record_decision(page_id, qid, action, reviewer, source)
    except (IllegalTransition, NotFound, UsageError) as exc:
        # The pair moved between the check and the write (the writer or another reviewer).
        return refuse(str(exc))
    report.applied[action] += 1
    return None


def _page_id(store: Store, cells: Dict[str, str]) -> Tuple[Optional[int], str]:
    mid, title = cells.get("mid", ""), cells.get("title", "")
    if mid:
        try:
            return page_id_of(mid.upper()), ""
        except ValueError:
            return None, f"bad M-id {mid!r} (expected M followed by the page id)"
    if title:
        found = reviews.page_id_for_title(store, title.lstrip("'"))
        return (found, "") if found is not None else (None, f"unknown file {title!r} (not in the queue)")
    return None, "no file: the row has neither an M-id nor a title"


def _delimiter(text: str) -> str:
    # The header decides: spreadsheets in many locales save with ";" and some with tabs.
    header = text.split("\n", 1)[0]
    return max((",", ";", "\t"), key=header.count)


def _header(reader: Iterator[List[str]]) -> Dict[str, int]:
    try:
        row = next(reader)
    except StopIteration:
        raise UsageError("the file is empty: expected the CSV written by `wikivel-bot export --format csv`") from None
    columns: Dict[str, int] = {}
    for i, name in enumerate(row):
        columns.setdefault(name.strip().lower(), i)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing or not ({"mid", "title"} & set(columns)):
        need = ", ".join(missing + ([] if {"mid", "title"} & set(columns) else ["mid (or title)"]))
        raise UsageError(f"the CSV header lacks {need} (found: {', '.join(row) or 'nothing'})")
    return columns
