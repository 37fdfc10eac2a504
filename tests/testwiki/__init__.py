"""A faithful local test wiki (MediaWiki Action API + Wikibase subset).

Usage::

    from tests.testwiki import TestWiki
    with TestWiki.start() as wiki:
        print(wiki.api_url)

See README.md in this directory for fixtures, fault injection and recording.
"""
from __future__ import annotations

from .faults import Fault, FaultRegistry
from .recording import RecordedEdit, RecordedRequest, Recorder
from .server import TestWiki, UploadResult
from .thumbs import THUMB_STEPS

__all__ = [
           'THUMB_STEPS',
           'Fault',
           'FaultRegistry',
           'RecordedEdit',
           'RecordedRequest',
           'Recorder',
           'TestWiki',
           'UploadResult',
]
