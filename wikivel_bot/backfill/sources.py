"""Where a backfill's titles come from: title lists, a category, a time range, the dumps.

The ``image`` table SQL dump is read by ``imagedump`` (one Ray task per dump file).

Title lists (``--titles``, and the dumps' ns-6 title list ``commonswiki-*-all-titles-in-ns6.gz``)
are read by Ray Data itself (``read_text``, line by line, on the workers) so a 100-million-line
file never passes through the driver; categories and time ranges are listed by the wiki on
the driver. The MediaInfo dump gives the page ids that already have P180, which the
read/filter stage then skips without queueing.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import json
import logging
import re
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Iterator, List, Optional, Set, Tuple

from wikivel_bot.errors import UsageError

log = logging.getLogger(__name__)
_ID = re.compile(rb'"id"\s*:\s*"M(\d+)"')


@dataclass(frozen=True)
class Sources:
    """What to backfill (any combination; at least one).

    :param titles_files: files with one ``File:`` title per line (``.gz``/``.bz2`` read too);
        the dumps' ns-6 title list is such a file (titles without prefix, underscores).
    :param category: a category name, walked to ``depth`` levels of subcategories.
    :param since: with ``until``, all files whose current version was uploaded between them.
    :param mediainfo_dump: the Commons MediaInfo JSON dump: files with P180 there are skipped.
    :param image_dumps: the ``image`` table SQL dump (``commonswiki-*-image.sql.gz``):
        its images (see ``imagedump``).
    """

    titles_files: tuple = ()
    category: str = ""
    depth: int = 0
    since: Optional[datetime] = None
    until: Optional[datetime] = None
    mediainfo_dump: str = ""
    image_dumps: tuple = ()

    def check(self) -> None:
        """UsageError naming the problem when nothing is selected or a file is missing."""
        if not (self.titles_files or self.image_dumps or self.category or self.since or self.until):
            raise UsageError("nothing to backfill: give --titles FILE, --image-dump FILE, --category NAME "
                             "or --since/--until")
        for path in (list(self.titles_files) + list(self.image_dumps)
                     + ([self.mediainfo_dump] if self.mediainfo_dump else [])):
            if not Path(path).is_file():
                raise UsageError(f"{path}: no such file")

    def check_contents(self) -> None:
        """UsageError for a title list that is damaged or not UTF-8 (:func:`check_title_file`);
        reads each list once, so it runs once per backfill, before Ray and the model start."""
        for path in self.titles_files:
            check_title_file(path)


    def listed(self, site: Any, notes: Optional[List[str]] = None) -> Iterator[str]:
        """The titles the wiki lists (category members, uploads in the time range).

        :param notes: gets one line for a source that lists no file (an empty category, a
            time range without uploads), so a run that reads nothing says why.
        :raises UsageError: the category does not exist (no page and no members).
        """
        from wikivel_bot.commons.listings import category_files, category_exists, files_uploaded_between

        said = notes if notes is not None else []
        if self.category:
            found = 0
            for title in category_files(site, self.category, self.depth):
                found += 1
                yield title
            if not found:
                exists, name = category_exists(site, self.category)
                if not exists:
                    raise UsageError(f"--category {self.category}: {name} does not exist")
                said.append(f"{name} has no files" + (f" (subcategories to depth {self.depth} included)"
                                                      if self.depth else ""))
        if self.since or self.until:
            found = 0
            for title in files_uploaded_between(site, self.since, self.until):
                found += 1
                yield title
            if not found:
                said.append("no file was uploaded in the --since/--until range")


def open_text(path: str) -> IO[bytes]:
    """A dump or list file, decompressed by its suffix."""
    if path.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


# Bytes decompressed and decoded at a time while checking a title list.
CHECK_CHUNK = 1 << 20
# Bad lines named in the error (the count says how many more).
BAD_LINES_SHOWN = 5


def check_title_file(path: str) -> None:
    """Read a title list once, to the end, before Ray starts: a damaged ``.gz``/``.bz2`` or
    a file that is not UTF-8 (a list saved as Latin-1) is one line naming the file and, for
    the encoding, the bad lines by number, rather than a worker's traceback mid-run. Titles
    on Commons are UTF-8, and guessing another encoding would queue wrong titles, so such a
    file is refused, with how to convert it. Streams: memory stays at one chunk.

    :raises UsageError: the file cannot be decompressed or is not UTF-8.
    """
    kind = "gzip" if path.endswith(".gz") else "bzip2" if path.endswith(".bz2") else ""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    line, tail = 1, b""
    bad: List[int] = []
    scanning = False  # after the first decoding error: line by line, to number the bad ones
    try:
        with open_text(path) as handle:
            while True:
                chunk = handle.read(CHECK_CHUNK)
                if not chunk:
                    break
                if scanning:
                    line, tail = _bad_lines(tail + chunk, line, bad)
                    continue
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError:
                    scanning = True
                    line, tail = _bad_lines(tail + chunk, line, bad)
                    continue
                line += chunk.count(b"\n")
                tail = chunk[chunk.rfind(b"\n") + 1:]
            if scanning:
                _bad_lines(tail + b"\n", line, bad)
            else:
                decoder.decode(b"", final=True)
    except UnicodeDecodeError:  # the file ends inside a character
        bad.append(line)
    except (OSError, EOFError, zlib.error) as exc:
        # gzip.BadGzipFile and a truncated .bz2 are OSError/EOFError; the reason in one line.
        what = f"not a readable {kind} file" if kind else "cannot be read"
        raise UsageError(f"--titles {path}: {what} ({' '.join(str(exc).split()) or type(exc).__name__}); "
                         "give a plain-text title list, or an intact .gz or .bz2 of one") from None
    if bad:
        shown = ", ".join(map(str, bad[:BAD_LINES_SHOWN]))
        more = f" and {len(bad) - BAD_LINES_SHOWN} more" if len(bad) > BAD_LINES_SHOWN else ""
        raise UsageError(f"--titles {path}: not UTF-8 at line{'s' if len(bad) > 1 else ''} {shown}{more} "
                         "(title lists are UTF-8: convert it, e.g. iconv -f latin1 -t utf-8)")


def _bad_lines(data: bytes, line: int, bad: List[int]) -> Tuple[int, bytes]:
    """Numbers of the complete lines in ``data`` that are not UTF-8 appended to ``bad``;
    returns the next line's number and the incomplete last line."""
    *whole, rest = data.split(b"\n")
    for raw in whole:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(line)
        line += 1
    return line, rest


def depicted_page_ids(path: str) -> Set[int]:
    """Page ids of the files the MediaInfo dump shows with at least one P180 statement.

    The dump is a JSON array with one entity per line; a line is parsed only when it
    mentions P180 at all (most do not), which keeps the pass at disk speed. Damaged lines
    are skipped (and counted in a log line).
    :raises UsageError: nothing in the file could be read as an entity.
    """
    found: Set[int] = set()
    seen = bad = 0
    with open_text(path) as handle:
        for raw in handle:
            line = raw.strip().rstrip(b",")
            if not line or line in (b"[", b"]"):
                continue
            seen += 1
            if b'"P180"' not in line:
                continue
            try:
                entity = json.loads(line)
            except ValueError:
                # A damaged entity (dumps have them) must not end a pass over 100M lines.
                bad += 1
                continue
            statements = entity.get("statements") if isinstance(entity, dict) else None
            match = _ID.search(line)
            if match and isinstance(statements, dict) and statements.get("P180"):
                found.add(int(match.group(1)))
    if bad:
        log.warning("%s: %d damaged entities skipped", path, bad)
    if seen and not found and bad == seen:
        raise UsageError(f"{path}: no readable entity (expected a MediaInfo JSON dump)")
    return found


def has_title(line: str) -> bool:
    """Whether a title list's line names a file: blank lines and ``#`` comments do not
    (they are skipped without a word, not counted as files read)."""
    text = line.strip()
    return bool(text) and not text.startswith("#")


def read_lines(paths: List[str]) -> Iterator[str]:
    """The title lines of title files, comments and blank lines left out (for runs without
    Ray Data's reader, e.g. the benchmark)."""
    for path in paths:
        with open_text(path) as handle:
            for raw in handle:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if has_title(line):
                    yield line
