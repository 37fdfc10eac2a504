"""Plain data records of the test wiki and MediaWiki title normalisation."""
from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

# MediaWiki's first-letter rule (ß stays ß, ǆ becomes ǅ, Georgian stays lower case) taken
# from pywikibot, not from the bot's own copy in wikivel_bot/core/titles.py: a mistake in that
# copy must not also be the test wiki's answer.
from pywikibot.tools import first_upper

from .siteinfo import NAMESPACE_ALIASES, NS_NAMES

# Characters MediaWiki never allows in titles ($wgLegalTitleChars complement).
_ILLEGAL = re.compile(r'[#<>\[\]|{}\x00-\x1f\x7f]')
_NS_LOOKUP: dict[str, int] = {name.lower(): ns for ns, name in NS_NAMES.items()
                              if name}
_NS_LOOKUP.update({alias.lower(): ns for ns, alias in NAMESPACE_ALIASES})
_NS_LOOKUP.update({'project': 4, 'project talk': 5, 'image': 6})


def now_iso() -> str:
    """Current UTC time in MediaWiki's ISO 8601 form (second precision)."""
    return dt.datetime.now(dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


def parse_iso(ts: str) -> dt.datetime:
    """Parse ``2024-05-01T10:00:00Z`` (also MW 14-digit form) into UTC."""
    ts = ts.strip()
    if re.fullmatch(r'\d{14}', ts):
        return dt.datetime.strptime(ts, '%Y%m%d%H%M%S').replace(
            tzinfo=dt.UTC)
    ts = ts.replace('Z', '+00:00')
    value = dt.datetime.fromisoformat(ts)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def iso(value: dt.datetime) -> str:
    """Format a datetime as MediaWiki ISO timestamp."""
    return value.astimezone(dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


class InvalidTitle(ValueError):
    """A title MediaWiki would reject (``invalid`` in query results)."""


def split_title(raw: str) -> tuple[int, str]:
    """Normalise *raw* like MediaWiki's TitleParser: return (ns, full title).

    Underscores become spaces, runs of spaces collapse, a known namespace
    prefix (or alias, case-insensitive) is replaced by its local name and
    the first letter of the page part is upper-cased (``case=first-letter``) by
    MediaWiki's rule, which is not ``str.upper`` (``ßx`` stays ``ßx``).
    """
    title = raw.replace('_', ' ')
    title = re.sub(r'\s+', ' ', title).strip()
    if title.startswith(':'):
        title = title[1:].strip()
    if not title:
        raise InvalidTitle('empty')
    if _ILLEGAL.search(title):
        raise InvalidTitle('illegal characters')
    ns = 0
    if ':' in title:
        prefix, rest = title.split(':', 1)
        key = prefix.strip().lower()
        if key in _NS_LOOKUP and rest.strip():
            ns = _NS_LOOKUP[key]
            title = rest.strip()
    if not title:
        raise InvalidTitle('empty')
    title = first_upper(title)
    prefix = NS_NAMES.get(ns, '')
    return ns, f'{prefix}:{title}' if prefix else title


def strip_ns(title: str) -> str:
    """Return the page part of a full title (``File:A.jpg`` → ``A.jpg``)."""
    ns, full = split_title(title)
    return full.split(':', 1)[1] if ns else full


def hash_path(name: str) -> str:
    """Return MediaWiki's hashed upload directory (``a/ab``) for a file name."""
    digest = hashlib.md5(name.replace(' ', '_').encode('utf-8')).hexdigest()
    return f'{digest[0]}/{digest[:2]}'


@dataclass
class Revision:
    """One page revision with its content slots (role → (model, text))."""

    revid: int
    parentid: int
    timestamp: str
    user: str
    userid: int
    comment: str
    slots: dict[str, tuple[str, str]]
    minor: bool = False
    tags: list[str] = field(default_factory=list)

    def size(self) -> int:
        """Byte length of all slots, as MediaWiki reports ``size``."""
        return sum(len(text.encode('utf-8')) for _, text in self.slots.values())

    def sha1(self) -> str:
        """SHA-1 of the main slot (hex)."""
        return hashlib.sha1(self.slots['main'][1].encode('utf-8')).hexdigest()


@dataclass
class FileInfo:
    """The current version of an uploaded file."""

    name: str                # without namespace, with spaces
    data: bytes
    mime: str
    width: int
    height: int
    timestamp: str
    user: str
    userid: int
    comment: str
    render: bytes | None = None  # PNG rendering for SVG/PDF/video
    mediatype: str = 'BITMAP'
    duration: float | None = None
    pagecount: int | None = None

    @property
    def size(self) -> int:
        """Byte size of the original file."""
        return len(self.data)

    @property
    def sha1(self) -> str:
        """Hex SHA-1 of the bytes (MediaWiki reports hex in the API)."""
        return hashlib.sha1(self.data).hexdigest()

    @property
    def url_name(self) -> str:
        """File name as it appears in URLs (spaces → underscores)."""
        return self.name.replace(' ', '_')


@dataclass
class Page:
    """A wiki page; files carry a :class:`FileInfo`."""

    pageid: int
    ns: int
    title: str
    revisions: list[Revision] = field(default_factory=list)
    protection: list[dict[str, str]] = field(default_factory=list)
    template_categories: list[str] = field(default_factory=list)
    file: FileInfo | None = None
    redirect_to: str | None = None
    touched: str = ''

    @property
    def latest(self) -> Revision:
        """The current revision."""
        return self.revisions[-1]

    @property
    def text(self) -> str:
        """Wikitext of the main slot of the current revision."""
        return self.latest.slots['main'][1]


@dataclass
class LogEvent:
    """One ``logging`` table row."""

    logid: int
    type: str
    action: str
    title: str
    ns: int
    logpage: int
    user: str
    userid: int
    timestamp: str
    comment: str
    params: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


@dataclass
class User:
    """A wiki account; ``botpasswords`` maps app id → password."""

    name: str
    userid: int
    groups: list[str]
    registration: str = '2020-01-01T00:00:00Z'
    editcount: int = 0
    botpasswords: dict[str, str] = field(default_factory=dict)
    # A blocked account (the OAuth profile's ``blocked`` flag), and the admin's reason
    # (``list=users``'s ``blockreason``).
    blocked: bool = False
    block_reason: str = 'Vandalism'
    # A partial block (``list=users``' ``blockpartial``) and its restrictions in MediaWiki's
    # ``list=blocks`` format: ``{"pages": [{"id", "ns", "title"}], "namespaces": [6],
    # "actions": ["upload"]}``. Only with ``blocked``.
    block_partial: bool = False
    block_restrictions: dict[str, Any] = field(default_factory=dict)
