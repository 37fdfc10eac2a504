"""Everything the linker and the writer need about queued files, 50 files per API request.

One ``action=query`` per batch returns, for every file: the thumbnail URL at a standard
step, the non-hidden categories, the description page (description text, ``{{nobots}}``),
the MediaInfo entity (existing P180 items and ranks) and the latest revision id, and the
page protection. :func:`fetch_media` turns that into :class:`MediaFile` values or reasons.

:class:`Fetcher` is the queue stage on top: it applies the eligibility rules once more
(a file may have changed since it was polled) and downloads each thumbnail through the
:class:`~wikivel_bot.commons.thumbnails.ThumbnailClient` to prove it decodes, so corrupt
files are recorded with a reason here rather than crashing a linker batch later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, Optional, Sequence, Tuple, Union

from wikivel_bot.commons import evidence_refs, filters, mediainfo, wikitext
from wikivel_bot.commons.files import FileEntry, query_files
from wikivel_bot.commons.outcomes import Deferred, FetchOutcome, Ineligible, Unavailable
from wikivel_bot.commons.thumbnails import (
    DEFAULT_MAX_PIXELS,
    ThumbnailClient,
    check_step,
)
from wikivel_bot.config import FetchSettings, PollSettings, SafetySettings, Settings
from wikivel_bot.core.evidence import DEFAULT_IDENTIFIER_RULES, IdentifierRule
from wikivel_bot.errors import ConfigError, FileUnavailable, UsageError
from wikivel_bot.types import MediaFile


def fetch_media(
    site: Any,
    titles: Sequence[str],
    *,
    thumb_width: int = 330,
    languages: Sequence[str] = ("en",),
    batch_size: int = 50,
) -> Dict[str, Union[MediaFile, str]]:
    """{title as given: MediaFile, or the reason it is unavailable}.

    No thumbnail is downloaded; protected and ``{{nobots}}`` files are returned as
    MediaFile with ``protected``/``bots_allowed`` set (whether to skip them is the caller's
    rule, see :class:`Fetcher`).

    :param site: a pywikibot site.
    :param titles: ``File:…`` titles (any spelling the wiki normalises; redirects followed).
    :param thumb_width: a standard thumbnail step.
    :param languages: description language fallback, first wins.
    :param batch_size: titles per request (≤ 50).
    :raises WikiError: the API failed. :raises UsageError: a non-standard width.
    """
    found = _fetch(site, {"titles": list(titles)}, thumb_width, languages, batch_size)
    return {str(entry.key): media for entry, media in found}


def fetch_media_by_ids(
    site: Any,
    page_ids: Sequence[int],
    *,
    thumb_width: int = 330,
    languages: Sequence[str] = ("en",),
    batch_size: int = 50,
) -> Dict[int, Union[MediaFile, str]]:
    """:func:`fetch_media` by page id: a file that was moved keeps its id, a file deleted and
    uploaded again under the same name does not (its MediaInfo id changed too)."""
    found = _fetch(site, {"page_ids": list(page_ids)}, thumb_width, languages, batch_size)
    return {int(entry.key): media for entry, media in found}


def _fetch(site: Any, which: Dict[str, Any], thumb_width: int, languages: Sequence[str],
           batch_size: int) -> Iterator[Tuple[FileEntry, Union[MediaFile, str]]]:
    """The body of both fetchers: ``which`` is ``query_files``' ``titles`` or ``page_ids``."""
    check_step(thumb_width)
    username = site.username()
    for entry in _entries(site, which, thumb_width, batch_size):
        yield entry, media_or_reason(entry, languages, username)


def _entries(site: Any, which: Dict[str, Any], thumb_width: int, batch_size: int) -> Iterator[FileEntry]:
    """The one request shape of this module: ``which`` files (``titles`` or ``page_ids``) with
    a thumbnail URL at ``thumb_width`` and what the rules read (wikitext, protection)."""
    return query_files(site, **which, thumb_width=thumb_width, with_wikitext=True, batch_size=batch_size)


def media_or_reason(
    entry: FileEntry,
    languages: Sequence[str],
    username: Optional[str] = None,
    max_pixels: int = 0,
    facts: Optional[filters.FileFacts] = None,
    identifier_rules: Optional[Sequence[IdentifierRule]] = DEFAULT_IDENTIFIER_RULES,
) -> Union[MediaFile, str]:
    """A MediaFile from one file entry, or why there is nothing to link.

    :param facts: ``entry.facts(username)`` when the caller has it already.
    :param identifier_rules: the identifier-template table for the evidence references
        (``Settings.evidence.identifier_rules``); None reads no references (evidence off).
    """
    facts = facts or entry.facts(username)
    why = filters.unusable(facts, max_pixels)
    if why:
        return why
    thumb = entry.info.get("thumburl") or ""
    if not thumb:
        return filters.reason(filters.NO_THUMBNAIL, "the API gave no thumbnail URL")
    text = wikitext.description(entry.text, languages)
    if not text:
        # No {{Information}} description: the structured-data caption says the same kind of thing.
        text = wikitext.pick_language(mediainfo.captions(entry.entity), languages)[0]
    return MediaFile(
        page_id=entry.page_id,
        title=entry.title,
        thumb_url=thumb,
        description=text,
        categories=entry.categories(hidden=False),
        depicts=mediainfo.depicts_of(entry.entity),
        revid=entry.revid,
        protected=any(level not in filters.HARMLESS_PROTECTION for level in facts.protection_levels),
        bots_allowed=facts.bots_allowed,
        references=() if identifier_rules is None else evidence_refs.references(entry.text, identifier_rules),
    )


@dataclass
class Fetcher:
    """The fetch stage: MediaFile, or why a file is unavailable / ineligible / deferred.

    :param site: a pywikibot site.
    :param fetch: ``Settings.fetch`` (thumbnail width, batch size).
    :param poll: ``Settings.poll`` (the eligibility rules, applied again).
    :param languages: description language fallback (``Settings.site.languages``).
    :param thumbnails: downloads each thumbnail once to prove it decodes; None skips that.
    :param max_pixels: decompression-bomb limit on the original's size.
    :param skip_templates: opt-out templates (``Settings.safety.skip_templates``).
    :param identifier_rules: ``Settings.evidence.identifier_rules``; None when evidence is off.
    """

    site: Any
    fetch_settings: FetchSettings = field(default_factory=FetchSettings)
    poll_settings: PollSettings = field(default_factory=PollSettings)
    languages: Tuple[str, ...] = ("en",)
    thumbnails: Optional[ThumbnailClient] = None
    max_pixels: int = DEFAULT_MAX_PIXELS
    skip_templates: Tuple[str, ...] = SafetySettings().skip_templates
    # The evidence references' identifier table; None = evidence off (no references read).
    identifier_rules: Optional[Tuple[IdentifierRule, ...]] = DEFAULT_IDENTIFIER_RULES

    def __post_init__(self) -> None:
        try:
            check_step(self.fetch_settings.thumb_width)
        except UsageError as exc:
            raise ConfigError(f"fetch.thumb_width: {exc}") from None

    @classmethod
    def from_settings(cls, site: Any, settings: Settings, thumbnails: Optional[ThumbnailClient] = None) -> "Fetcher":
        """A fetcher with the settings' sections (and a thumbnail client built from them)."""
        client = thumbnails or ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
        return cls(site, settings.fetch, settings.poll, tuple(settings.site.languages), client,
                   skip_templates=tuple(settings.safety.skip_templates),
                   identifier_rules=settings.evidence.identifier_rules if settings.evidence.enabled else None)

    @property
    def batch_size(self) -> int:
        """Files per API request."""
        return max(1, min(self.fetch_settings.batch_size, 50))

    def fetch(self, page_ids: Iterable[int]) -> Dict[int, FetchOutcome]:
        """{page id: outcome} for every id asked.

        :raises WikiError: the API failed (no outcome is known then).
        """
        entries = _entries(self.site, {"page_ids": list(page_ids)}, self.fetch_settings.thumb_width, self.batch_size)
        return {int(key): outcome for key, outcome in self.outcomes(entries).items()}

    def query(self, titles: Sequence[str]) -> Iterable[FileEntry]:
        """File entries for ``titles`` with everything :meth:`outcomes` needs (the backfill
        asks by title; one request per :attr:`batch_size` titles)."""
        return _entries(self.site, {"titles": list(titles)}, self.fetch_settings.thumb_width, self.batch_size)

    def outcomes(self, entries: Iterable[FileEntry]) -> Dict[Any, FetchOutcome]:
        """{entry key: outcome} for entries from ``query_files(..., with_wikitext=True)``
        at this fetcher's thumbnail width: the eligibility rules and thumbnail check."""
        username = self.site.username()
        outcomes: Dict[Any, FetchOutcome] = {}
        to_check: Dict[Any, MediaFile] = {}
        for entry in entries:
            key = entry.key
            facts = entry.facts(username)
            media = media_or_reason(entry, self.languages, username, self.max_pixels, facts, self.identifier_rules)
            if isinstance(media, str):
                outcomes[key] = Unavailable(media)
                continue
            why = filters.refuse_fetched(facts, self.poll_settings, self.skip_templates)
            if why:
                outcomes[key] = Ineligible(why)
                continue
            to_check[key] = media
        outcomes.update(self._check_thumbnails(to_check))
        return outcomes

    def _check_thumbnails(self, files: Dict[Any, MediaFile]) -> Dict[Any, FetchOutcome]:
        if self.thumbnails is None or not files:
            return dict(files)
        results = self.thumbnails.get_many([m.thumb_url for m in files.values()])
        out: Dict[Any, FetchOutcome] = {}
        for key, media in files.items():
            result = results[media.thumb_url]
            if isinstance(result, FileUnavailable):
                out[key] = Unavailable(str(result))
            elif isinstance(result, Exception):
                out[key] = Deferred(str(result))
            else:
                out[key] = media
        return out
