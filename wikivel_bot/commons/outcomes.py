"""What the fetcher says about a file besides a :class:`~wikivel_bot.types.MediaFile`.

Kept free of pywikibot so ``pipeline.py`` can tell the outcomes apart without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from wikivel_bot.types import MediaFile


@dataclass(frozen=True)
class Unavailable:
    """Nothing to link: deleted, not an image, corrupt, too large (→ ``unavailable``)."""

    reason: str


@dataclass(frozen=True)
class Ineligible:
    """A rule refused the file after fetching: protected, ``{{nobots}}``, … (→ ``ineligible``)."""

    reason: str


@dataclass(frozen=True)
class Deferred:
    """A transient failure (the media server kept failing): try the file again later."""

    reason: str


FetchOutcome = Union[MediaFile, Unavailable, Ineligible, Deferred]
