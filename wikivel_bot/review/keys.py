"""Keys for the terminal review: single keys from a terminal, or lines from a pipe.

Both sources yield the same tokens, so the review loop does not care where keys come from:

* a printable key as itself (``"1"``, ``"s"``, ``"g"``, ``"4"``),
* ``"up"``, ``"down"``, ``"left"``, ``"right"`` for the arrow keys,
* ``"enter"``, ``"escape"``, and ``"q"`` for Ctrl-C / Ctrl-D (quit cleanly, with the summary).

A terminal is put in *cbreak* mode (termios via :mod:`tty`): no line buffering, no echo, but
output processing and signals stay as they are, so the screen still renders ``\\n`` as a new
line and Ctrl-Z still suspends. Full raw mode would also turn those off.
"""

from __future__ import annotations

import codecs
import os
import select
from contextlib import contextmanager
from typing import IO, Iterator, List, Optional

# How long to wait for the rest of an escape sequence after ESC: a terminal sends an arrow
# key's bytes together; a lone ESC (the reviewer pressed Escape) gets no follow-up.
ESCAPE_WAIT_S = 0.05

_ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left"}
# Words a line-mode user (or a script piping commands) may type instead of keys.
_WORDS = {
    "up": "up", "down": "down", "quit": "q", "exit": "q", "undo": "u", "skip": "s",
    "next": "n", "open": "o", "help": "?", "approve": "1", "prominent": "2", "reject": "3",
}


class TerminalKeys:
    """Single key presses from a terminal; use as a context manager around the session.

    :param stream: the terminal (``sys.stdin``); must be a TTY.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.fd = stream.fileno()
        self._saved: Optional[list] = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")

    def __enter__(self) -> "TerminalKeys":
        import termios
        import tty

        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()

    def _restore(self) -> None:
        import termios

        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Normal terminal mode for a while (a console browser opened with ``o`` needs it)."""
        import tty

        self._restore()
        try:
            yield
        finally:
            if self._saved is not None:
                tty.setcbreak(self.fd)

    def __iter__(self) -> Iterator[str]:
        while True:
            byte = os.read(self.fd, 1)
            if not byte:
                yield "q"  # the terminal went away
                return
            if byte == b"\x1b":
                yield _escape(self._sequence())
                continue
            if byte in (b"\x03", b"\x04"):
                yield "q"
                continue
            if byte in (b"\r", b"\n"):
                yield "enter"
                continue
            if byte == b"\t":
                yield "down"
                continue
            text = self._decoder.decode(byte)
            if text and text.isprintable():
                yield text

    def _sequence(self) -> bytes:
        rest = b""
        while len(rest) < 6 and select.select([self.fd], [], [], ESCAPE_WAIT_S)[0]:
            chunk = os.read(self.fd, 1)
            if not chunk:
                break
            rest += chunk
            # CSI and SS3 sequences end with a letter or ~.
            if len(rest) >= 2 and (chr(rest[-1]).isalpha() or rest[-1:] == b"~"):
                break
        return rest


class LineKeys:
    """Keys typed as lines (stdin is a pipe or a file): each character is a key, or a line
    may be a word (``down``, ``undo``, ``quit``...). End of input quits.

    :param stream: where the lines come from.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __enter__(self) -> "LineKeys":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextmanager
    def suspended(self) -> Iterator[None]:
        yield

    def __iter__(self) -> Iterator[str]:
        for line in self.stream:
            yield from line_tokens(line)
        yield "q"


def line_tokens(line: str) -> List[str]:
    """The keys one typed line stands for: a word, or its characters, then ``enter``."""
    text = line.strip()
    if text.lower() in _WORDS:
        return [_WORDS[text.lower()], "enter"]
    return [ch for ch in text if not ch.isspace()] + ["enter"]


def open_keys(stream: IO[str]) -> "TerminalKeys | LineKeys":
    """Single keys when ``stream`` is a terminal, else line input."""
    try:
        interactive = stream.isatty()
        import termios  # noqa: F401  (absent on Windows: fall back to lines)
    except (AttributeError, ValueError, ImportError):
        interactive = False
    return TerminalKeys(stream) if interactive else LineKeys(stream)


def _escape(sequence: bytes) -> str:
    # ESC [ A (normal cursor mode) and ESC O A (application mode) are both arrows.
    if len(sequence) == 2 and sequence[:1] in (b"[", b"O") and chr(sequence[1]) in _ARROWS:
        return _ARROWS[chr(sequence[1])]
    return "escape"
