"""Streaming readers for the Wikidata and Commons MediaInfo JSON dumps.

Both dumps are one JSON array with one entity per line (``[``, then ``{...},`` lines, then
``]``), compressed with bzip2 or gzip or not at all; the format is told by the file's magic
bytes, not its name. The reader hands out **blocks** of whole lines (a few MB each) so memory
stays constant whatever the dump's size; ``parallel.map_blocks`` spreads their parsing over
worker processes.

Decompressors, fastest sound one first:

* bzip2: ``indexed_bzip2`` (parallel, C++) when installed, else the standard ``bz2`` module.
  bzip2 is slow (~45 MB/s per core), so the parallel one pays off as soon as there are cores.
* gzip: the standard ``gzip`` module (zlib, ~600 MB/s per core, a few MB of memory), which
  keeps up with two or three parsing workers; with ``threads >= 4`` ``rapidgzip`` (parallel)
  when installed. rapidgzip buffers hundreds of MB, which is not worth it below that.

``decompressor="stdlib"`` forces the standard modules, ``"parallel"`` the parallel ones
whatever the thread count (where installed). A truncated or corrupt archive raises
:class:`~wikivel_bot.errors.DumpError` saying how far the read got. Some decompressors do not
notice a cut-off stream (rapidgzip returns what it has), so the reader also checks the JSON
array's structure: a dump that opened with ``[`` must end with ``]``.
"""

from __future__ import annotations

import bz2
import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, cast

from wikivel_bot.errors import DumpError

BLOCK_BYTES = 4 << 20
DECOMPRESSORS = ("auto", "parallel", "stdlib")
_RAPIDGZIP_THREADS = 4
_PIECE_BYTES = 256 << 10
# A bytes regex for speed (it scans raw dump lines); ASCII digits only, like types.is_qid.
_ENTITY_ID = re.compile(rb'"id"\s*:\s*"([QPLM][1-9][0-9]*)"')
_BZ2_MAGIC = b"BZh"
_GZIP_MAGIC = b"\x1f\x8b"



def detect_compression(path: Path) -> str:
    """``"bz2"``, ``"gzip"`` or ``"plain"`` from the file's first bytes."""
    with open(path, "rb") as handle:
        head = handle.read(3)
    if head.startswith(_BZ2_MAGIC):
        return "bz2"
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    return "plain"


class _CountingFile:
    """A raw file whose position tells the progress bar how much compressed input was read."""

    def __init__(self, path: Path) -> None:
        self._handle = open(path, "rb")

    def read(self, size: int = -1) -> bytes:
        return self._handle.read(size)

    def readinto(self, buffer: Any) -> int:
        return self._handle.readinto(buffer)

    def tell(self) -> int:
        return self._handle.tell()

    def close(self) -> None:
        self._handle.close()

    # gzip/bz2 probe these.
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self._handle.closed


class DumpStream:
    """A decompressed byte stream of one dump file, with the compressed position for progress.

    :param path: the dump file.
    :param threads: threads a parallel decompressor may use.
    :param decompressor: ``"auto"``, ``"parallel"`` or ``"stdlib"`` (see the module docstring).
    """

    def __init__(self, path: Path, threads: int = 1, decompressor: str = "auto") -> None:
        if decompressor not in DECOMPRESSORS:
            raise ValueError(f"decompressor must be one of {', '.join(DECOMPRESSORS)}, not {decompressor!r}")
        self.path = Path(path)
        try:
            self.size = self.path.stat().st_size
            self.compression = detect_compression(self.path)
        except OSError as exc:
            raise DumpError(f"{path}: cannot read the dump: {exc.strerror or exc}") from None
        self._raw: Optional[_CountingFile] = None
        self._parallel: Any = None
        self._delivered = 0
        # BZ2File, GzipFile, a parallel decompressor or the raw file: all have read/close.
        self._stream: Any
        threads = max(1, threads)
        parallel_gzip = decompressor == "parallel" or (decompressor == "auto" and threads >= _RAPIDGZIP_THREADS)
        if self.compression == "bz2" and decompressor != "stdlib" and _module("indexed_bzip2"):
            import indexed_bzip2

            self.backend = "indexed_bzip2"
            self._parallel = indexed_bzip2.open(str(self.path), parallelization=threads)
            self._stream = self._parallel
        elif self.compression == "gzip" and parallel_gzip and _module("rapidgzip"):
            import rapidgzip

            self.backend = "rapidgzip"
            self._parallel = rapidgzip.open(str(self.path), parallelization=threads)
            self._stream = self._parallel
        else:
            self._raw = _CountingFile(self.path)
            if self.compression == "bz2":
                self.backend = "bz2"
                self._stream = bz2.BZ2File(cast(Any, self._raw))
            elif self.compression == "gzip":
                self.backend = "gzip"
                self._stream = gzip.GzipFile(fileobj=cast(Any, self._raw))
            else:
                self.backend = "plain"
                self._stream = self._raw

    def read(self, size: int) -> bytes:
        try:
            data = self._stream.read(size)
        except Exception as exc:
            if self._parallel is None:
                raise
            # The parallel decompressors fail early and vaguely (they read ahead): go on
            # with the standard module from where we were, so that a real truncation is
            # reported at the line where the data really ends.
            self._fall_back(exc)
            data = self._stream.read(size)
        self._delivered += len(data)
        return data

    def _fall_back(self, exc: BaseException) -> None:
        self._parallel.close()
        self._parallel = None
        self._raw = _CountingFile(self.path)
        opener = bz2.BZ2File if self.compression == "bz2" else gzip.GzipFile
        self._stream = opener(cast(Any, self._raw))
        standard = "bz2" if self.compression == "bz2" else "gzip"
        self.backend = f"{standard} (after {self.backend}: {exc or type(exc).__name__})"
        remaining = self._delivered
        while remaining > 0:
            skipped = self._stream.read(min(remaining, 1 << 24))
            if not skipped:
                break
            remaining -= len(skipped)

    def finish(self) -> None:
        """Check, once the stream is exhausted, that the whole archive was decompressed.

        rapidgzip ends a cut-off stream without an error, so its output is checked against
        the gzip trailer (ISIZE: the size modulo 2**32). A mismatch (a truncated file, or a
        multi-member gzip whose trailer covers only the last member) is settled by the
        standard module, which raises EOFError for a truncated archive.
        """
        if self.backend != "rapidgzip":
            return
        with open(self.path, "rb") as handle:
            handle.seek(max(0, self.size - 4))
            isize = int.from_bytes(handle.read(4), "little")
        if self.size >= 18 and isize == self._delivered % (1 << 32):
            return
        total = 0
        with gzip.open(self.path, "rb") as check:
            while True:
                data = check.read(1 << 24)
                if not data:
                    break
                total += len(data)
        if total != self._delivered:
            raise OSError(f"rapidgzip returned {self._delivered} bytes, gzip {total}")

    def compressed_position(self) -> int:
        """Bytes of the file consumed so far (an estimate for parallel decompressors)."""
        if self._raw is not None:
            return self._raw.tell()
        try:
            # Both parallel decompressors count in bits.
            return int(self._parallel.tell_compressed()) // 8
        except Exception:  # pragma: no cover - progress only
            return 0

    def close(self) -> None:
        # The parallel decompressors must be closed explicitly: their threads abort the
        # interpreter at exit otherwise.
        self._stream.close()
        if self._raw is not None:
            self._raw.close()

    def __enter__(self) -> "DumpStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _module(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class Block:
    """Whole lines of a dump; ``first_line`` is the 1-based number of the first one."""

    first_line: int
    data: bytes


def iter_blocks(
    path: Path,
    *,
    block_bytes: int = BLOCK_BYTES,
    threads: int = 1,
    decompressor: str = "auto",
    progress: bool = False,
    desc: str = "",
    info: Optional[Dict[str, Any]] = None,
) -> Iterator[Block]:
    """Blocks of whole lines of a dump, read with constant memory.

    :param path: the dump (bz2, gzip or plain).
    :param block_bytes: about how many decompressed bytes a block holds.
    :param threads: threads for a parallel decompressor.
    :param decompressor: ``"auto"``, ``"parallel"`` or ``"stdlib"`` (see :class:`DumpStream`).
    :param progress: show a tqdm bar in compressed bytes.
    :param desc: the bar's label.
    :param info: filled with ``compression`` and ``backend`` once the file is open.
    :raises DumpError: truncated or corrupt archive, or a JSON array that is never closed.
    """
    from tqdm import tqdm

    stream = DumpStream(Path(path), threads=threads, decompressor=decompressor)
    if info is not None:
        info.update(compression=stream.compression, backend=stream.backend)
    bar = tqdm(
        total=stream.size,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=desc or Path(path).name,
        disable=not progress,
        leave=False,
    )
    lines = 0
    done = 0
    carry = b""
    opened: Optional[bool] = None
    last_line = b""
    try:
        while True:
            pieces = _read_pieces(stream, block_bytes, lines, carry, last_line)
            if opened is None:
                head = (carry + pieces[0] if pieces else carry).lstrip()
                if head:
                    opened = head[:1] == b"["
            if not pieces:
                break
            # Cut after the last newline of the last piece: one join, no copy of the block.
            cut = pieces[-1].rfind(b"\n")
            if cut < 0:
                carry = b"".join([carry, *pieces])
                continue
            block = b"".join([carry, *pieces[:-1], pieces[-1][: cut + 1]])
            carry = pieces[-1][cut + 1 :]
            tail = _last_line(block)
            if tail:
                last_line = tail
            yield Block(first_line=lines + 1, data=block)
            lines += block.count(b"\n")
            now = stream.compressed_position()
            if now > done:
                bar.update(now - done)
                done = now
        if carry.strip():
            last_line = carry.strip()
            yield Block(first_line=lines + 1, data=carry)
            lines += 1
        if opened and last_line != b"]":
            raise DumpError(
                f"{path}: the dump ends after line {lines} without the closing ']' of its "
                f"JSON array: the file is truncated (all {stream.size} bytes were read)"
            )
        bar.update(max(0, stream.size - done))
    finally:
        bar.close()
        stream.close()


def _read_pieces(stream: DumpStream, block_bytes: int, lines: int, carry: bytes, last_line: bytes) -> List[bytes]:
    # Small reads from archives: when one breaks off, what the failing read had decompressed
    # is lost, so the error can say how far the dump was readable to within one piece.
    piece_bytes = block_bytes if stream.compression == "plain" else _PIECE_BYTES
    pieces: List[bytes] = []
    size = 0
    while size < block_bytes:
        try:
            piece = stream.read(min(piece_bytes, block_bytes - size))
            if not piece:
                stream.finish()
        except (EOFError, OSError, zlib.error, RuntimeError, ValueError) as exc:
            raise _truncated(stream, lines, exc, carry + b"".join(pieces), last_line) from None
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return pieces


def _last_line(block: bytes) -> bytes:
    # The last non-blank line, copying only it (blocks are megabytes).
    end = len(block)
    while end > 0:
        start = block.rfind(b"\n", 0, end - 1) + 1
        line = block[start:end].strip()
        if line:
            return line
        end = start
    return b""


def _truncated(stream: DumpStream, lines: int, exc: BaseException, pending: bytes = b"",
               last_line: bytes = b"") -> DumpError:
    # Lines of the piece being assembled count too: they were read before the failure.
    complete = pending[: pending.rfind(b"\n") + 1]
    lines += complete.count(b"\n")
    last = _ENTITY_ID.search(_last_line(complete) or last_line)
    position = stream.compressed_position()
    share = f", {100.0 * position / stream.size:.1f}%" if stream.size and position else ""
    detail = str(exc) or type(exc).__name__
    where = f"; the last complete entity is {last.group(1).decode()}" if last else ""
    return DumpError(
        f"{stream.path}: the {stream.compression} archive is truncated or corrupt "
        f"({stream.backend}: {detail}); it is readable up to line {lines} "
        f"(about {position} of {stream.size} compressed bytes{share}){where}"
    )
