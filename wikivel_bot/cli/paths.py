"""Checking an output path before hours of work: can we create files there at all?"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from wikivel_bot.errors import UsageError


def check_writable(path: Path, option: str = "--out") -> None:
    """Raise UsageError unless files can be created at ``path`` (a file or a folder to be).

    The nearest folder that exists is probed by creating (and removing) a temporary file:
    permission bits do not tell the truth for root, ``/proc`` or read-only mounts.

    :param path: where the command will write.
    :param option: the option's name, for the message.
    """
    path = Path(path).expanduser()
    probe = path if path.is_dir() else path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{option} {path}: {probe} is a file, not a folder")
    try:
        handle, name = tempfile.mkstemp(prefix=".wikivel-probe-", dir=probe)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write in {probe} ({exc.strerror or exc})") from None
    os.close(handle)
    os.unlink(name)
