"""Masking secrets in anything that may be printed: URLs with passwords, password=... pairs.

Used at every edge where text leaves the process (``config show``, the CLI's error line, the
event log), so a database URL such as ``postgresql+psycopg://bot:hunter2@db/queue`` is shown
as ``postgresql+psycopg://bot:***@db/queue`` wherever it travels.
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://user:password@host — the password is everything up to the last "@" before the host
# (passwords may contain "@" or ":" when they were not percent-encoded).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^\s/]*)@")
# password=..., passwd: ..., token=... (driver messages, query strings, DSNs).
_KEY_VALUE = re.compile(
    r"(?P<head>\b(?:password|passwd|pwd|token|secret|api_key|apikey)\b\s*[=:]\s*['\"]?)"
    r"(?P<secret>[^\s'\"&;,)]+)",
    re.IGNORECASE,
)


def redact_secrets(text: str) -> str:
    """``text`` with passwords in URLs and ``password=``-style values replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK + "@", text)
    return _KEY_VALUE.sub(lambda m: m.group("head") + MASK, text)
