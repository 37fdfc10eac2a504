"""The human-evaluation kit of the paper's §5.2: rating sheets out, ratings in, Table 5 back.

1. :func:`build_sheet` samples files from ranked predictions and lists their top predictions,
   one row per (file, rank, QID), with the item's label and description and the items the
   file already depicts when known; :func:`write_sheet` writes it as CSV with an empty
   ``rating`` column.
2. Each rater fills ``rating`` with one of (codes or the words, any case):

   =====  =====================  ==================================================
   CC     completely correct     the file depicts exactly this
   TG     too generic            right, but a more specific item fits (*human* for a portrait)
   OR     only related           associated with what is depicted, not depicted
   CI     completely incorrect   wrong
   IDK    I don't know           the rater cannot tell
   =====  =====================  ==================================================

3. :func:`read_sheets` reads one CSV per rater (rows may be re-ordered, not changed) and
   reports every bad or missing rating with its sheet and line; :func:`summarize` gives the
   share of each rating over all raters for ranks ≤ k (k = 1, 5, 10) and Fleiss' kappa over
   the predictions of those ranks.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple, Union

from wikivel_bot.core.agreement import count_table, fleiss
from wikivel_bot.errors import UsageError
from wikivel_bot.evaluation.report import Table, percent
from wikivel_bot.types import is_mid, is_qid

RATINGS: Tuple[str, ...] = ("CC", "TG", "OR", "CI", "IDK")
RATING_NAMES: Dict[str, str] = {
    "CC": "completely correct",
    "TG": "too generic",
    "OR": "only related",
    "CI": "completely incorrect",
    "IDK": "I don't know",
}
# Words a rater may type instead of the code; the paper's Table 5 says "too general".
_ALIASES: Dict[str, str] = {code.lower(): code for code in RATINGS}
_ALIASES.update({name.lower(): code for code, name in RATING_NAMES.items()})
_ALIASES.update({"too general": "TG", "i dont know": "IDK", "i don’t know": "IDK", "don't know": "IDK"})

SHEET_COLUMNS: Tuple[str, ...] = ("file", "rank", "qid", "label", "description", "depicted", "url", "rating",
                                  "comment")
REQUIRED_COLUMNS: Tuple[str, ...] = ("file", "rank", "qid", "rating")
SUMMARY_KS: Tuple[int, ...] = (1, 5, 10)
_LISTED = 20  # problems listed per sheet before "... and N more"

Key = Tuple[str, int, str]  # (file, rank, qid): one prediction to rate


class SheetError(UsageError):
    """Rating sheets that cannot be scored; ``problems`` lists every one as ``PATH:LINE: ...``."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(f"{len(self.problems)} problem(s) in the rating sheets: {self.problems[0]}{more}")


@dataclass(frozen=True)
class SheetRow:
    """One prediction to rate.

    :param file: the file (``M123`` or a title); :param rank: 1-based rank; :param qid: the item;
    :param label: item label; :param description: item description;
    :param depicted: what the file already depicts ("Q146 house cat; ..."); :param url: the file page.
    """

    file: str
    rank: int
    qid: str
    label: str = ""
    description: str = ""
    depicted: str = ""
    url: str = ""


def file_url(file: str) -> str:
    """The Commons page of ``M123`` or ``File:X.jpg`` (raters open it to look at the image)."""
    if is_mid(file):
        return f"https://commons.wikimedia.org/entity/{file}"
    title = file if file.startswith("File:") else f"File:{file}"
    return "https://commons.wikimedia.org/wiki/" + title.replace(" ", "_")


def build_sheet(
    rankings: Mapping[str, Sequence[str]],
    sample: int,
    top: int = 10,
    seed: int = 0,
    label_set: Any = None,
    truth: Optional[Mapping[str, Sequence[str]]] = None,
) -> List[SheetRow]:
    """Rows for ``sample`` random files (or all, if fewer) and their ``top`` predictions.

    :param rankings: file -> ranked QIDs; files with an empty ranking are not sampled.
    :param sample: number of files.
    :param top: predictions per file (the paper showed 10).
    :param seed: the same seed and input give the same sheet.
    :param label_set: a label set (``label_of``/``description_of``, or a LabelSetView) for texts.
    :param truth: file -> items it already depicts, shown so raters see what is known.
    """
    if sample < 1 or top < 1:
        raise UsageError("--sample and --top must be at least 1")
    # Sorted first so the draw depends on the seed and the set of files, not on file order.
    files = sorted(file for file, items in rankings.items() if items)
    chosen = random.Random(seed).sample(files, min(sample, len(files)))
    rows = []
    for file in chosen:
        depicted = "; ".join(_name(label_set, q) for q in (truth or {}).get(file, ()))
        for rank, qid in enumerate(rankings[file][:top], start=1):
            label, description = _texts(label_set, qid)
            rows.append(SheetRow(file, rank, qid, label, description, depicted, file_url(file)))
    return rows


def write_sheet(rows: Sequence[SheetRow], out: TextIO) -> None:
    """Write ``rows`` as CSV with empty ``rating`` and ``comment`` columns.

    :param rows: from :func:`build_sheet`.
    :param out: a text stream opened with ``newline=""``.
    """
    writer = csv.writer(out)
    writer.writerow(SHEET_COLUMNS)
    for row in rows:
        writer.writerow([row.file, row.rank, row.qid, row.label, row.description, row.depicted, row.url, "", ""])


def parse_rating(text: str) -> Optional[str]:
    """``"cc"``, ``"Completely correct"`` -> ``"CC"``; None when not a rating."""
    return _ALIASES.get(" ".join(text.replace("’", "'").split()).lower())


@dataclass
class RatedSheet:
    """One rater's sheet: ``ratings[(file, rank, qid)] = "CC"``; ``lines`` says where each is."""

    path: str
    ratings: Dict[Key, str] = field(default_factory=dict)
    lines: Dict[Key, int] = field(default_factory=dict)


def read_sheet(path: Union[str, Path]) -> Tuple[RatedSheet, List[str]]:
    """Read one rater's CSV; returns the sheet and its problems (``PATH:LINE: ...``).

    :param path: a sheet written by :func:`write_sheet` and filled in.
    """
    sheet = RatedSheet(str(path))
    problems: List[str] = []
    try:
        # utf-8-sig: spreadsheet programs often save a byte-order mark.
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                return sheet, [f"{path}: empty file"]
            columns = {name.strip().lower(): i for i, name in enumerate(header)}
            absent = [c for c in REQUIRED_COLUMNS if c not in columns]
            if absent:
                return sheet, [f"{path}:1: missing column(s) {', '.join(absent)}"]
            end = reader.line_num
            for cells in reader:
                line, end = end + 1, reader.line_num
                if not any(c.strip() for c in cells):
                    continue
                _read_row(sheet, cells, columns, line, problems)
    except FileNotFoundError:
        return sheet, [f"{path}: no such file"]
    except (UnicodeDecodeError, csv.Error) as exc:
        return sheet, [f"{path}: not a readable CSV file ({exc})"]
    if not sheet.ratings and not problems:
        problems.append(f"{path}: no rows")
    return sheet, problems


def _read_row(sheet: RatedSheet, cells: List[str], columns: Dict[str, int], line: int, problems: List[str]) -> None:
    def cell(name: str) -> str:
        index = columns[name]
        return cells[index].strip() if index < len(cells) else ""

    where = f"{sheet.path}:{line}"
    file, rank_text, qid, rating_text = cell("file"), cell("rank"), cell("qid"), cell("rating")
    if not file or not (rank_text.isascii() and rank_text.isdigit()) or int(rank_text) < 1 or not is_qid(qid):
        problems.append(f"{where}: file, rank and qid must be as exported (got {file!r}, {rank_text!r}, {qid!r})")
        return
    key = (file, int(rank_text), qid)
    if key in sheet.lines:
        problems.append(f"{where}: {file} rank {rank_text} {qid} already rated on line {sheet.lines[key]}")
        return
    rating = parse_rating(rating_text)
    if rating is None:
        what = "no rating" if not rating_text else f"rating {rating_text!r} is not one of {'/'.join(RATINGS)}"
        problems.append(f"{where}: {what} for {file} rank {rank_text} {qid}")
        return
    sheet.ratings[key] = rating
    sheet.lines[key] = line


def read_sheets(paths: Sequence[Union[str, Path]]) -> List[RatedSheet]:
    """Read one sheet per rater and check they rate the same predictions.

    :param paths: CSV files, one per rater.
    :raises SheetError: listing every bad, missing or extra rating with its sheet and line.
    """
    if not paths:
        raise UsageError("no rating sheets given")
    sheets, problems = [], []
    for path in paths:
        sheet, found = read_sheet(path)
        sheets.append(sheet)
        problems += _capped(found, str(path))
    if not problems:
        reference = sheets[0]
        for sheet in sheets[1:]:
            found = [f"{sheet.path}: no rating for {f} rank {r} {q} (line {reference.lines[(f, r, q)]} of "
                     f"{reference.path})" for (f, r, q) in reference.ratings if (f, r, q) not in sheet.ratings]
            found += [f"{sheet.path}:{sheet.lines[key]}: {key[0]} rank {key[1]} {key[2]} is not in {reference.path}"
                      for key in sheet.ratings if key not in reference.ratings]
            problems += _capped(found, sheet.path)
    if problems:
        raise SheetError(problems)
    return sheets


def _capped(problems: List[str], path: str) -> List[str]:
    if len(problems) <= _LISTED:
        return problems
    return problems[:_LISTED] + [f"{path}: ... and {len(problems) - _LISTED} more problems"]


@dataclass(frozen=True)
class HumanEvalSummary:
    """Table 5 of the paper for a set of rating sheets.

    :param sheets: the sheet paths (one per rater).
    :param files: files rated.
    :param predictions: predictions rated per rater.
    :param counts: ``{k: {"CC": n, ...}}`` ratings of ranks ≤ k, over all raters.
    :param kappa: ``{k: κ}`` Fleiss' kappa over the predictions of ranks ≤ k; None with one
        rater or when undefined (every rating the same).
    """

    sheets: Tuple[str, ...]
    files: int
    predictions: int
    counts: Dict[int, Dict[str, int]]
    kappa: Dict[int, Optional[float]]

    @property
    def raters(self) -> int:
        return len(self.sheets)

    def share(self, k: int, rating: str) -> float:
        """Fraction of the ratings of ranks ≤ ``k`` that are ``rating``."""
        total = sum(self.counts[k].values())
        return self.counts[k][rating] / total if total else 0.0

    def to_dict(self) -> Dict[str, Any]:
        """Plain data for ``--json`` (shares as fractions)."""
        return {
            "sheets": list(self.sheets),
            "raters": self.raters,
            "files": self.files,
            "predictions": self.predictions,
            "counts": {str(k): dict(v) for k, v in self.counts.items()},
            "shares": {str(k): {r: self.share(k, r) for r in RATINGS} for k in self.counts},
            "fleiss_kappa": {str(k): v for k, v in self.kappa.items()},
        }

    def table(self) -> Table:
        """Rows k = 1, 5, 10; columns CC TG OR CI IDK in %, then κ."""
        rows = [[f"k={k}"] + [percent(self.share(k, r)) for r in RATINGS]
                + ["n/a" if self.kappa[k] is None else f"{self.kappa[k]:.3f}"] for k in self.counts]
        notes = [f"{self.raters} rater(s), {self.files} files, {self.predictions} predictions each",
                 "CC = completely correct, TG = too generic, OR = only related, CI = completely incorrect, "
                 "IDK = I don't know; kappa = Fleiss' kappa over the predictions of ranks <= k"]
        return Table("Human evaluation (%)", ["k", *RATINGS, "kappa"], rows, notes)


def summarize(sheets: Sequence[RatedSheet], ks: Sequence[int] = SUMMARY_KS) -> HumanEvalSummary:
    """Rating shares and agreement at each k for sheets that rate the same predictions.

    :param sheets: from :func:`read_sheets`.
    :param ks: rank cut-offs (the paper: 1, 5, 10).
    """
    if not sheets:
        raise UsageError("no rating sheets given")
    keys = sorted(sheets[0].ratings)
    counts: Dict[int, Dict[str, int]] = {}
    kappa: Dict[int, Optional[float]] = {}
    for k in sorted(set(ks)):
        subjects = [[sheet.ratings[key] for sheet in sheets] for key in keys if key[1] <= k]
        tally = dict.fromkeys(RATINGS, 0)
        for ratings in subjects:
            for rating in ratings:
                tally[rating] += 1
        counts[k] = tally
        value: Optional[float] = None
        if len(sheets) >= 2 and subjects:
            value = fleiss(count_table(subjects, RATINGS)).kappa
            value = None if math.isnan(value) else value
        kappa[k] = value
    return HumanEvalSummary(
        sheets=tuple(s.path for s in sheets),
        files=len({key[0] for key in keys}),
        predictions=len(keys),
        counts=counts,
        kappa=kappa,
    )


def _texts(label_set: Any, qid: str) -> Tuple[str, str]:
    if label_set is None:
        return "", ""
    if hasattr(label_set, "label_of"):
        return label_set.label_of(qid), label_set.description_of(qid)
    index = label_set.index_of(qid)  # a plain LabelSetView
    return ("", "") if index is None else (label_set.labels[index], label_set.descriptions[index])


def _name(label_set: Any, qid: str) -> str:
    label = _texts(label_set, qid)[0]
    return f"{qid} {label}" if label else qid
