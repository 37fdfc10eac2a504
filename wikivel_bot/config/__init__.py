"""Typed, frozen settings: one commented block of defaults, validated overrides.

Sources, later ones winning: the defaults, a TOML file (``--config PATH``, or
``wikivel.toml`` in the working directory when present), then ``WIKIVEL_<SECTION>_<KEY>``
environment variables (``WIKIVEL_DB_URL``, ``WIKIVEL_WRITE_DRY_RUN=true``,
``WIKIVEL_POLL_SKIP_UPLOADERS=a,b``). An unknown key or a wrong type fails at load time with
the key's name and where it came from, before anything touches the wiki or the database.

* ``sections`` — :class:`Settings` and its sections, every key with its type and default;
* ``loading`` — :func:`load_settings` (reading, coercing and range-checking the sources) and
  :func:`settings_as_toml`.

pywikibot's own settings (account, put_throttle, maxlag) stay in its ``user-config.py``.
Callers import from here; the two modules import each other's names directly, never this one.
"""

from __future__ import annotations

from wikivel_bot.config.loading import load_settings, settings_as_toml, settings_sources
from wikivel_bot.config.sections import (
    BackfillSettings,
    CascadeSettings,
    DaemonSettings,
    DbSettings,
    EvidenceSettings,
    FetchSettings,
    LabelsSettings,
    LearningSettings,
    LinkerSettings,
    PollSettings,
    ReviewSettings,
    SafetySettings,
    Settings,
    SiteSettings,
    WebSettings,
    WriteSettings,
)

__all__ = [
    "BackfillSettings",
    "CascadeSettings",
    "DaemonSettings",
    "DbSettings",
    "EvidenceSettings",
    "FetchSettings",
    "LabelsSettings",
    "LearningSettings",
    "LinkerSettings",
    "PollSettings",
    "ReviewSettings",
    "SafetySettings",
    "Settings",
    "SiteSettings",
    "WebSettings",
    "WriteSettings",
    "load_settings",
    "settings_as_toml",
    "settings_sources",
]
