"""Which files the bot works on: the eligibility rules from ``Settings.poll``.

Pure functions over :class:`FileFacts` (what the API said about a file), used twice: by the
poller on new uploads, and by the fetcher again just before linking (a file may have gained
depicts statements, categories, protection or ``{{nobots}}`` since it was polled).

A refusal is a reason string ``"<kind>: <detail>"``; the kind (before the colon) is what the
counters group by, the detail is for the operator reading ``status``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Iterable, Optional, Tuple

from wikivel_bot.commons.wikitext import normalise_name
from wikivel_bot.config import PollSettings

# Reason kinds. Ineligible (a rule said no):
DELETED = "deleted"
MIME = "mime type"
TOO_SMALL = "too small"
UPLOADER = "uploader opted out"
CATEGORY = "category opted out"
TEMPLATE = "template opted out"
HAS_DEPICTS = "already depicts"
PROTECTED = "protected"
NOBOTS = "bots excluded"
# Unavailable (nothing to link):
NOT_IMAGE = "not an image"
CORRUPT = "corrupt"
NO_THUMBNAIL = "no thumbnail"
TOO_LARGE = "too large"
BOMB = "decompression bomb"

# Vector images render at any size, so their nominal size says nothing.
SCALABLE_MIMES = frozenset({"image/svg+xml"})
# MediaWiki media types the linker can look at (SVG is a DRAWING, rendered to PNG).
IMAGE_MEDIATYPES = frozenset({"BITMAP", "DRAWING"})
# Edit protection a bot account (autoconfirmed) still passes.
HARMLESS_PROTECTION = frozenset({"", "autoconfirmed"})


@dataclass(frozen=True)
class FileFacts:
    """What the API says about one file, as far as the rules need it.

    :param categories: all categories, hidden ones included, without ``Category:``.
    :param depicts: P180 statements that count (see ``mediainfo.depicts_count``).
    :param protection_levels: levels of the page's edit protection (``sysop``, ...).
    :param bots_allowed: False when ``{{bots}}``/``{{nobots}}`` exclude the bot.
    :param templates: templates used on the description page, as MediaWiki compares names
        (only known when the wikitext was read, i.e. at the fetch stage).
    """

    exists: bool = True
    mime: str = ""
    mediatype: str = ""
    width: int = 0
    height: int = 0
    uploader: str = ""
    categories: Tuple[str, ...] = ()
    depicts: int = 0
    protection_levels: Tuple[str, ...] = ()
    bots_allowed: bool = True
    templates: Tuple[str, ...] = ()


def reason(kind: str, detail: str) -> str:
    """A refusal as stored in the queue: ``"<kind>: <detail>"``."""
    return f"{kind}: {detail}"


def reason_kind(text: str) -> str:
    """The kind of a refusal (the part before the first colon)."""
    return text.split(":", 1)[0].strip()


def refuse_upload(facts: FileFacts, settings: PollSettings) -> Optional[str]:
    """Why the poller must not queue this upload for linking, or None when it is eligible.

    Rules in order: deleted, MIME type, minimum size, opted-out uploader, opted-out
    category, already ≥ ``max_existing_depicts`` depicts statements (0 disables that rule).
    """
    if not facts.exists:
        return reason(DELETED, "the file was deleted before it was polled")
    if facts.mime not in settings.mime_types:
        return reason(MIME, facts.mime or "unknown")
    if facts.mime not in SCALABLE_MIMES and (
        facts.width < settings.min_width or facts.height < settings.min_height
    ):
        return reason(
            TOO_SMALL,
            f"{facts.width}x{facts.height} px (minimum {settings.min_width}x{settings.min_height})",
        )
    if facts.uploader and normalise_name(facts.uploader, "User:") in _names(settings.skip_uploaders, "User:"):
        return reason(UPLOADER, normalise_name(facts.uploader, "User:"))
    skipped = _names(settings.skip_categories, "Category:")
    for category in facts.categories:
        name = normalise_name(category, "Category:")
        if name in skipped:
            return reason(CATEGORY, name)
    if settings.max_existing_depicts > 0 and facts.depicts >= settings.max_existing_depicts:
        return reason(HAS_DEPICTS, f"{facts.depicts} statements (limit {settings.max_existing_depicts})")
    return None


def refuse_fetched(facts: FileFacts, settings: PollSettings, skip_templates: Iterable[str] = ()) -> Optional[str]:
    """Why a fetched file must not be linked, or None: the upload rules once more, then
    opted-out templates (``Settings.safety.skip_templates``: personality rights, "no AI"
    opt-outs), edit protection the bot cannot pass and ``{{bots}}``/``{{nobots}}``.
    A file that is not an image at all is *unavailable* rather than ineligible; see
    :func:`unusable`."""
    found = refuse_upload(facts, settings)
    if found:
        return found
    opted_out = {template_key(t) for t in skip_templates if t.strip()}
    for template in facts.templates:
        if template_key(template) in opted_out:
            return reason(TEMPLATE, "{{" + normalise_name(template) + "}}")
    levels = [lvl for lvl in facts.protection_levels if lvl not in HARMLESS_PROTECTION]
    if levels:
        return reason(PROTECTED, f"edit protection ({', '.join(sorted(set(levels)))})")
    if not facts.bots_allowed:
        return reason(NOBOTS, "{{bots}}/{{nobots}} on the description page exclude this bot")
    return None


def unusable(facts: FileFacts, max_pixels: int = 0) -> Optional[str]:
    """Why there is nothing to link at all, or None: deleted, not an image (PDF, video,
    audio), or a bitmap whose size is a decompression bomb.

    :param max_pixels: largest width × height accepted for bitmaps; 0 = no limit.
    """
    if not facts.exists:
        return reason(DELETED, "the file no longer exists")
    if facts.mediatype and facts.mediatype not in IMAGE_MEDIATYPES:
        return reason(NOT_IMAGE, f"{facts.mime or 'unknown type'} ({facts.mediatype.lower()})")
    if max_pixels and facts.mime not in SCALABLE_MIMES and facts.width * facts.height > max_pixels:
        return reason(BOMB, f"{facts.width}x{facts.height} px (limit {max_pixels:,} px)")
    return None


def template_key(name: str) -> str:
    """A template name as compared by the opt-out rule: no ``Template:``, spaces, any case."""
    return normalise_name(name, "Template:").casefold()


def _names(values: Iterable[str], prefix: str) -> FrozenSet[str]:
    return frozenset(normalise_name(v, prefix) for v in values if v.strip())
