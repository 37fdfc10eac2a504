"""QID lists: the shipped P31 blocklist and the operator's own lists (one QID per line)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import FrozenSet, Iterable, List, Union

from wikivel_bot.errors import UsageError
from wikivel_bot.types import qid_number


def parse_qid_lines(lines: Iterable[str], source: str) -> List[int]:
    """Numeric QIDs from lines like ``Q146``, ``Q146<TAB>house cat`` or ``Q146  # note``.

    Blank lines and lines starting with ``#`` are skipped.

    :param source: named in the error for a bad line.
    :raises UsageError: a line that does not start with a QID.
    """
    out: List[int] = []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        token = text.split()[0]
        try:
            out.append(qid_number(token.upper()))  # people type q146 too
        except ValueError:
            raise UsageError(f"{source}, line {number}: {token!r} is not a Wikidata item id (Q...)") from None
    return out


def read_qid_file(path: Union[str, Path]) -> List[int]:
    """Numeric QIDs listed in a file (see :func:`parse_qid_lines`).

    :raises UsageError: unreadable file or a bad line.
    """
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read QID list {path}: {exc.strerror or exc}") from None
    return parse_qid_lines(text.splitlines(), str(path))


@lru_cache(maxsize=1)
def default_p31_blocklist() -> FrozenSet[int]:
    """Classes whose instances are not depictable (``data/non_depictable_p31.tsv``)."""
    text = resources.files("wikivel_bot.labels").joinpath("data/non_depictable_p31.tsv").read_text("utf-8")
    return frozenset(parse_qid_lines(text.splitlines(), "non_depictable_p31.tsv"))


def read_page_id_file(path: Union[str, Path]) -> List[int]:
    """Commons page ids listed one per line (``123`` or ``M123``; ``#`` starts a comment),
    e.g. a dataset's ``splits/train.txt``.

    :raises UsageError: unreadable file or a line that is not a page id.
    """
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read page id list {path}: {exc.strerror or exc}") from None
    out: List[int] = []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        digits = text[1:] if text[:1] in ("M", "m") else text
        if not digits.isdigit():
            raise UsageError(f"{path}:{number}: not a Commons page id: {text!r}")
        out.append(int(digits))
    return out
