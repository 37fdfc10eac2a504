"""A quick look at the start of a dump before hours of parsing: is it a JSON array at all?

Wikidata's and Commons' JSON dumps are one JSON array with one entity per line
(``[`` on the first line, ``]`` on the last). An empty file, or some other JSON (an object,
a JSON-lines file, an HTML error page saved by a download tool) would otherwise be read to
the end and give an empty label set without a word; this says so at once, naming the file.
"""

from __future__ import annotations

from pathlib import Path

from wikivel_bot.errors import DumpError
from wikivel_bot.labels.dump_reader import DumpStream

# Enough decompressed bytes to get past leading whitespace.
_PEEK_BYTES = 4096


def check_dump_start(path: Path, kind: str = "wikidata", decompressor: str = "auto") -> None:
    """Raise DumpError unless ``path`` starts like a JSON dump (``[`` after whitespace).

    :param path: the dump (bz2, gzip or plain).
    :param kind: ``wikidata`` or ``mediainfo``, for the message.
    :param decompressor: as for :class:`~wikivel_bot.labels.dump_reader.DumpStream`.
    :raises DumpError: unreadable, empty, or not a JSON array.
    """
    stream = DumpStream(Path(path), threads=1, decompressor=decompressor)
    try:
        head = b""
        while len(head) < _PEEK_BYTES:
            piece = stream.read(_PEEK_BYTES)
            if not piece:
                break
            head += piece
            if head.strip():
                break
    except (OSError, EOFError, ValueError) as exc:
        raise DumpError(f"{path}: cannot read the dump: {exc}") from None
    finally:
        stream.close()
    what = f"a {kind} JSON dump (a JSON array, one entity per line)"
    start = head.lstrip()
    if not start:
        raise DumpError(f"{path} is empty: expected {what}")
    if start[:1] != b"[":
        shown = start[:20].decode("utf-8", "replace").split("\n")[0]
        raise DumpError(f"{path} is not {what}: it starts with {shown!r}, not '['")
