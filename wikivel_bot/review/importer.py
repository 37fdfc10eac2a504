"""Import of decisions made offline in an exported CSV (the ``decision`` column).

Each row is checked on its own and reported with its line number when it cannot be applied
(unknown file, bad QID, unknown decision word, already written, ...); the good rows are
applied regardless. A decision that already holds is left alone, so importing the same file
twice changes nothing the second time. Spreadsheets re-save CSV files in their own dialect:
a byte-order mark, ``;`` or tab separators and upper-case words are all accepted.

The file is read a line at a time, never whole: a field may hold up to
:data:`MAX_FIELD_CHARS` characters and a line up to :data:`MAX_LINE_CHARS`, so what an export
writes always reads back, and a hostile file cannot make the import hold more than a few
fields' worth of text in memory.
"""

from __future__ import annotations

import codecs
import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, TextIO, Tuple

from wikivel_bot.core.review_rules import APPLY, REFUSE, UNCHANGED, offline_verdict, parse_decision
from wikivel_bot.errors import IllegalTransition, NotFound, UsageError
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction, is_qid, mid_of, page_id_of

REQUIRED_COLUMNS = ("qid", "decision")

# Python's csv module refuses fields over 131,072 characters by default, but a file's
# description on Commons can be longer (300,000 characters occur; a page holds at most 2 MiB
# of wikitext) and export writes it whole, so the default would refuse rows export wrote.
# 8 MiB of characters is four times the largest wiki page and still bounds what one field of
# a hostile file can make us hold. (The limit is the csv module's, process-wide: nothing else
# in the bot reads CSV with long fields, and raising it only lets longer fields through.)
MAX_FIELD_CHARS = 8 * 1024 * 1024
# A physical line holds several fields (title, description, categories, evidence): a line
# longer than this is no export of ours, and reading it whole is what a hostile file wants.
MAX_LINE_CHARS = 4 * MAX_FIELD_CHARS


class _LineTooLong(Exception):
    """A physical line of the file is longer than :data:`MAX_LINE_CHARS` (internal)."""


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
    """:func:`import_decisions` on a file; ``-`` is not handled here (pass a stream).

    The file is checked to be UTF-8 to its end first (a chunk at a time), so a file saved in
    another encoding is refused whole rather than after some of its rows were applied."""
    try:
        _check_utf8(path)
        # utf-8-sig: spreadsheet programs put a byte-order mark in front of UTF-8 CSV.
        with open(path, encoding="utf-8-sig", newline="") as handle:
            return import_decisions(store, handle, reviewer)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8 CSV") from None


def _check_utf8(path: Path) -> None:
    """Raise UnicodeDecodeError (its ``start`` counted from the file's first byte) unless the
    whole file is UTF-8; reads 1 MiB at a time, never the whole file."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    done = 0  # bytes read before this chunk
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(1 << 20)
            pending = len(decoder.getstate()[0])  # a character cut at the last chunk's edge
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                at = done - pending + exc.start
                raise UnicodeDecodeError(exc.encoding, exc.object, at, at + 1, exc.reason) from None
            if not chunk:
                return
            done += len(chunk)


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
    not_a_header = "expected the CSV written by `wikivel-bot export --format csv`"
    try:
        first = stream.readline(MAX_LINE_CHARS + 1).lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the input is not UTF-8 text ({exc.reason}): save it as UTF-8 CSV") from None
    if len(first) > MAX_LINE_CHARS:
        raise UsageError(f"the header line is longer than {MAX_LINE_CHARS:,} characters: {not_a_header}")
    csv.field_size_limit(MAX_FIELD_CHARS)  # see MAX_FIELD_CHARS: export writes longer fields
    reader = csv.reader(_lines(first, stream), delimiter=_delimiter(first))
    try:
        columns = _header(reader)
    except (csv.Error, _LineTooLong, UnicodeDecodeError) as exc:
        raise UsageError(f"the header row cannot be read ({exc or 'a line too long'}): {not_a_header}") from None
    report = ImportReport()
    seen: Dict[Tuple[int, str], int] = {}
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except UnicodeDecodeError as exc:
            # Only a stream gets here (a file is checked whole first): what came before stays.
            report.refused.append(RowNote(line, f"not UTF-8 text ({exc.reason}); the rest of the input was not read"))
            break
        except _LineTooLong:
            report.refused.append(RowNote(line, f"a line of this row is longer than {MAX_LINE_CHARS:,} "
                                                "characters; the rest of the file was not read"))
            break
        except csv.Error as exc:
            if "field limit" in str(exc):
                # Past an over-long quoted field the reader resumes mid-cell: the rows after it
                # cannot be trusted, so the import stops here (what came before stays applied).
                report.refused.append(RowNote(line, f"a field of this row is longer than {MAX_FIELD_CHARS:,} "
                                                    "characters; the rest of the file was not read"))
                break
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


def _lines(first: str, stream: TextIO) -> Iterable[str]:
    """The header line, then the stream's lines, each read with a bound (see
    :data:`MAX_LINE_CHARS`) so one endless line never has to fit in memory."""
    if not first:
        return  # an empty file: csv would read "" as a row of no cells, not as the end
    yield first
    while True:
        line = stream.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) > MAX_LINE_CHARS:
            raise _LineTooLong()
        yield line


def _delimiter(header: str) -> str:
    # The header decides: spreadsheets in many locales save with ";" and some with tabs.
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
