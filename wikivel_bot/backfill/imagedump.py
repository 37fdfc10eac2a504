"""Titles from the Commons ``image`` table dump (``commonswiki-YYYYMMDD-image.sql.gz``).

The dump is mysqldump output: a ``CREATE TABLE `image` (...)`` header, then lines of
``INSERT INTO `image` VALUES (...),(...);`` with about a megabyte of tuples each, 100M+
rows in all. It is read as bytes, one statement line at a time (the ``img_metadata`` blobs
need not be valid UTF-8), and only the file name is decoded. Column positions come from the
dump's own ``CREATE TABLE`` (MediaWiki's order since 1.35 otherwise:
``img_name, img_size, img_width, img_height, img_metadata, img_bits, img_media_type,
img_major_mime, …``). Only images are kept (``img_media_type`` BITMAP or DRAWING; where it
is NULL, ``img_major_mime`` ``image``). A damaged tuple is skipped and counted, and the
reader goes on with the next one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

from wikivel_bot.backfill.sources import open_text
from wikivel_bot.errors import UsageError

# MediaWiki's image table since 1.35 (maintenance/tables.sql; the dump's CREATE TABLE wins).
DEFAULT_COLUMNS = ("img_name", "img_size", "img_width", "img_height", "img_metadata", "img_bits",
                   "img_media_type", "img_major_mime", "img_minor_mime", "img_description_id", "img_actor",
                   "img_timestamp", "img_sha1")
IMAGE_TYPES = (b"BITMAP", b"DRAWING")
DAMAGED = "damaged dump row"
NOT_AN_IMAGE = "not an image"
# Starts a row that is settled already (its reason follows); no title starts so.
SETTLED = "\x00"
# Titles per block handed to the pipeline (the read/filter stage re-batches them).
ROWS_PER_BLOCK = 1000
# The header (comments, CREATE TABLE) is a few dozen lines; an image dump says so by then.
HEADER_LINES = 200
INSERT = b"INSERT INTO `image` VALUES "
_CREATE = re.compile(rb"CREATE TABLE `image` \(")
_COLUMN = re.compile(rb"^\s*`(\w+)`\s")
# One SQL value: a quoted string (backslash escapes, as mysqldump writes them) or a bare token.
_VALUE = rb"(?:'(?:[^'\\]|\\.)*'|[^,()']*)"
_TUPLE = re.compile(rb"\((" + _VALUE + rb"(?:," + _VALUE + rb")*)\)", re.S)
_ONE = re.compile(_VALUE, re.S)
_UNESCAPE = {b"0": b"\0", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"Z": b"\x1a", b"b": b"\b"}
_ESCAPE = re.compile(rb"\\(.)", re.S)


@dataclass(frozen=True)
class Layout:
    """Where the fields the reader needs sit in a tuple, and how many a tuple has."""

    name: int
    media_type: int
    major_mime: int
    columns: int


@dataclass
class DumpCounts:
    """Rows of one pass: every tuple is exactly one of kept, other media, damaged."""

    kept: int = 0
    other: int = 0
    damaged: int = 0
    by_type: Dict[str, int] = field(default_factory=dict)


def layout_of(path: str) -> Layout:
    """The tuple layout from the dump's header.

    :raises UsageError: the file is not an ``image`` table dump (one line naming it).
    """
    columns: List[str] = []
    creating = seen_insert = False
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle):
                if _CREATE.search(line):
                    creating = True
                elif creating:
                    match = _COLUMN.match(line)
                    if match:
                        columns.append(match.group(1).decode("ascii"))
                    elif line.lstrip().startswith((b"PRIMARY", b"KEY", b"UNIQUE", b")")):
                        creating = False
                if line.startswith(INSERT):
                    seen_insert = True
                    break
                if number >= HEADER_LINES and not columns:
                    break
    except (OSError, EOFError) as exc:
        raise UsageError(f"{path}: cannot read the image dump: {exc}") from None
    if not columns and not seen_insert:
        raise UsageError(f"{path}: not an image table dump (no CREATE TABLE or INSERT INTO `image`; "
                         "expected commonswiki-YYYYMMDD-image.sql.gz)")
    columns = columns or list(DEFAULT_COLUMNS)
    missing = [c for c in ("img_name", "img_media_type", "img_major_mime") if c not in columns]
    if missing:
        raise UsageError(f"{path}: the image table has no {', '.join(missing)} column")
    return Layout(columns.index("img_name"), columns.index("img_media_type"), columns.index("img_major_mime"),
                  len(columns))


def unquote(value: bytes) -> Optional[bytes]:
    """A SQL value as bytes: quotes and backslash escapes removed; None for NULL."""
    if value == b"NULL":
        return None
    if value.startswith(b"'"):
        return _ESCAPE.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(1)), value[1:-1])
    return value


def insert_tuples(line: bytes) -> Iterator[Optional[List[bytes]]]:
    """The tuples of one ``INSERT INTO `image` VALUES`` line as lists of raw values; None
    for a damaged tuple (the reader then skips to the next ``),(``)."""
    pos, end = len(INSERT), len(line.rstrip(b"\r\n; "))
    while pos < end:
        match = _TUPLE.match(line, pos)
        if match is not None and (match.end() >= end or line[match.end():match.end() + 1] == b","):
            yield _values(match.group(1))
            pos = match.end() + 1
            continue
        yield None
        after = line.find(b"),(", pos)
        if after < 0:
            return
        pos = after + 2


def _values(body: bytes) -> List[bytes]:
    """Split a tuple's body (``_TUPLE`` checked its shape) at the commas between values."""
    out: List[bytes] = []
    pos = 0
    while True:
        match = _ONE.match(body, pos)
        out.append(match.group(0))  # type: ignore[union-attr]  # a value always matches
        pos = match.end() + 1  # type: ignore[union-attr]
        if pos > len(body):
            return out


def image_titles(path: str, layout: Layout, counts: Optional[DumpCounts] = None) -> Iterator[Tuple[str, str]]:
    """(``File:`` title, "") for every image row of the dump, streamed, and ("", reason)
    for every other row (another media type, a damaged tuple), so the caller counts every
    row of the dump where it counts the rest."""
    counts = counts if counts is not None else DumpCounts()
    with open_text(path) as handle:
        for line in handle:
            if not line.startswith(INSERT):
                continue
            for values in insert_tuples(line):
                if values is None or len(values) != layout.columns:
                    counts.damaged += 1
                    yield "", f"{DAMAGED}: a tuple of {path} could not be read"
                    continue
                media_type = unquote(values[layout.media_type])
                major = unquote(values[layout.major_mime])
                name = unquote(values[layout.name])
                if not name:
                    counts.damaged += 1
                    yield "", f"{DAMAGED}: a tuple of {path} has no file name"
                    continue
                if media_type in IMAGE_TYPES or (media_type is None and major == b"image"):
                    counts.kept += 1
                    yield "File:" + name.decode("utf-8", "replace").replace("_", " "), ""
                else:
                    kind = (media_type or major or b"?").decode("ascii", "replace")
                    counts.by_type[kind] = counts.by_type.get(kind, 0) + 1
                    counts.other += 1
                    yield "", f"{NOT_AN_IMAGE}: {kind} in the image dump"


def dump_rows(path: str, layout: Layout, size: int = ROWS_PER_BLOCK) -> Iterator[Dict[str, List[str]]]:
    """The dump as blocks of ``{"text": [...]}`` rows for the pipeline: titles, and for the
    rows that are not images a line starting with :data:`SETTLED` and the reason."""
    block: List[str] = []
    for title, reason in image_titles(path, layout):
        block.append(title or SETTLED + reason)
        if len(block) >= size:
            yield {"text": block}
            block = []
    if block:
        yield {"text": block}


def is_image_dump(path: str) -> bool:
    """Whether a file name is that of the image table dump (``…-image.sql[.gz|.bz2]``)."""
    return re.search(r"-image\.sql(\.gz|\.bz2)?$", path) is not None
