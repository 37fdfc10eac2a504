"""Structured log lines: one line per event, ``key=value`` pairs, easy to grep and to parse.

    2026-11-21T06:40:01Z INFO stage=link outcome=linked file=M10001 candidates=7

The stages call :func:`event`; where the lines go (stderr, a file, journald) is the
daemon's or the operator's choice through the standard ``logging`` configuration.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from wikivel_bot.core.secrets import redact_secrets
from wikivel_bot.core.timestamps import TIMESTAMP_FORMAT

LOGGER_NAME = "wikivel_bot.events"
log = logging.getLogger(LOGGER_NAME)


def event(stage: str, outcome: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event of ``stage`` (poll, fetch, link, write, daemon) with its outcome."""
    if not log.isEnabledFor(level):
        return
    parts = [f"stage={stage}", f"outcome={outcome}"]
    parts += [f"{key}={_value(value)}" for key, value in fields.items() if value is not None]
    log.log(level, redact_secrets(" ".join(parts)))


def _value(value: Any) -> str:
    text = str(value)
    if not text or any(c in text for c in ' "=\n\t'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'
    return text


class UtcFormatter(logging.Formatter):
    """``2026-11-21T06:40:01Z LEVEL message``: UTC, because the wiki's times are UTC."""

    converter = time.gmtime  # type: ignore[assignment]  # typeshed narrows the signature

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(message)s", datefmt=TIMESTAMP_FORMAT)


def configure_logging(verbose: int = 0) -> None:
    """Send wikivel-bot's logs to stderr, one line each (``-v`` adds pywikibot's own INFO)."""
    handler = logging.StreamHandler()
    handler.setFormatter(UtcFormatter())
    root = logging.getLogger("wikivel_bot")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
    root.propagate = False
    logging.getLogger("apscheduler").setLevel(logging.WARNING if verbose == 0 else logging.INFO)
