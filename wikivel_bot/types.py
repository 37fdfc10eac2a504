"""Small frozen value types passed between the stages (see docs/architecture.md).

Every arrow of the data flow is a plain function over these; none of them knows about the
database, pywikibot or torch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Optional, Tuple, TypeGuard


def mid_of(page_id: int) -> str:
    """The MediaInfo entity id of a Commons file page: ``M`` + page id."""
    return f"M{int(page_id)}"


# Page ids are stored as signed 64-bit integers (BIGINT); MediaWiki's own are 32-bit.
MAX_PAGE_ID = 2**63 - 1


def is_mid(text: object, *, any_case: bool = False) -> TypeGuard[str]:
    """True for a MediaInfo id: ASCII ``M`` and ASCII digits (``M123``); with ``any_case``
    also ``m123``, as people type it. The one MediaInfo-id check (tests/test_one_of_each.py):
    ``"M²"`` passes ``str.isdigit``, hence the ``isascii``."""
    return (isinstance(text, str) and len(text) >= 2 and (text[0] == "M" or (any_case and text[0] == "m"))
            and text.isascii() and text[1:].isdigit())


def page_id_of(mid: str) -> int:
    """Inverse of :func:`mid_of`; raises ValueError for anything that is not ``M<digits>``
    or whose number is too large to be a page id."""
    if not is_mid(mid, any_case=True):
        raise ValueError(f"not a MediaInfo id: {mid!r} (expected M followed by digits)")
    if len(mid) > 20 or int(mid[1:]) > MAX_PAGE_ID:
        raise ValueError(f"not a MediaInfo id: {mid[:24]!r}{'…' if len(mid) > 24 else ''} is too large for a page id")
    return int(mid[1:])


# The one item-id rule; for embedding in a larger regex (a log line, a file of ids) only.
QID_REGEX = "Q[1-9][0-9]*"


def is_qid(text: object) -> TypeGuard[str]:
    """True for a Wikidata item id: ASCII ``Q`` and a number without a leading zero (``Q146``).

    Nothing else passes: not ``q146``, ``Q0``, ``Q01`` or ``"Q146 "``, and no other script's
    digits (``"Q²"`` and ``"Q١٢"`` pass ``str.isdigit``, hence the ``isascii``). Callers that
    accept ``q146`` from people normalise first. This and :func:`qid_number` are the only
    item-id checks in the package (tests/test_one_of_each.py).
    """
    return (isinstance(text, str) and len(text) >= 2 and text[0] == "Q" and "1" <= text[1] <= "9"
            and text.isascii() and text[1:].isdigit())


def qid_number(text: str) -> int:
    """``"Q146"`` → 146.

    :raises ValueError: ``text`` is not an item id (:func:`is_qid`); the message names it.
    """
    if not is_qid(text):
        raise ValueError(f"not a Wikidata item id: {text!r} (expected Q followed by digits)")
    return int(text[1:])


class FileState(str, enum.Enum):
    """Where a file is in the pipeline. Legal moves live in ``core.states``."""

    DISCOVERED = "discovered"  # seen in the upload log, nothing fetched yet
    FETCHED = "fetched"  # thumbnail URL, text, categories, existing depicts known
    LINKED = "linked"  # candidates saved; waiting for review
    INELIGIBLE = "ineligible"  # filtered out (reason says why); never linked
    UNAVAILABLE = "unavailable"  # deleted, corrupt, not an image (reason says why)


class CandidateState(str, enum.Enum):
    """Where one (file, item) suggestion is. Legal moves live in ``core.states``."""

    PROPOSED = "proposed"  # waiting for a human
    APPROVED = "approved"  # a human said yes; waiting for the writer
    REJECTED = "rejected"  # a human said no: never proposed or written again
    WRITTEN = "written"  # the statement is on Commons (edits row has the revid)
    WRITE_SKIPPED = "write_skipped"  # the writer's re-check said no (reason in edits)
    WRITE_FAILED = "write_failed"  # a permanent error, left for a human
    REVERTED = "reverted"  # the bot removed its own statement again


class DecisionAction(str, enum.Enum):
    """What a reviewer decided about one (file, item) pair."""

    APPROVE = "approve"
    APPROVE_PROMINENT = "approve_prominent"  # written with preferred rank
    REJECT = "reject"
    SKIP = "skip"  # no decision now; the pair stays proposed


class EditOutcome(str, enum.Enum):
    """The result of one write attempt, as stored in the audit table."""

    WRITTEN = "written"
    SKIPPED = "skipped"
    FAILED = "failed"
    DRY_RUN = "dry_run"
    REVERTED = "reverted"


@dataclass(frozen=True)
class Cursor:
    """A position in a log: timestamps are not unique, so the log id breaks ties."""

    timestamp: datetime
    log_id: int


@dataclass(frozen=True)
class Upload:
    """One new file seen in the upload log (or given by a page generator)."""

    page_id: int
    title: str
    timestamp: datetime
    uploader: str = ""
    log_id: int = 0
    sha1: str = ""
    mime: str = ""
    size: int = 0
    width: int = 0
    height: int = 0

    @property
    def mid(self) -> str:
        return mid_of(self.page_id)


@dataclass(frozen=True)
class Depiction:
    """An existing P180 statement on a file."""

    qid: str
    rank: str = "normal"  # normal | preferred | deprecated


@dataclass(frozen=True)
class MediaFile:
    """What the fetcher learned about a file: everything the linker and the writer read."""

    page_id: int
    title: str
    thumb_url: str = ""
    description: str = ""
    categories: Tuple[str, ...] = ()
    depicts: Tuple[Depiction, ...] = ()
    revid: int = 0
    protected: bool = False
    bots_allowed: bool = True
    # Unresolved evidence read from the description page: "link:enwiki:Eiffel Tower",
    # "item:Q243", "id:P359:518452:Rijksmonument" (wikivel_bot.core.evidence); categories
    # are above already.
    references: Tuple[str, ...] = ()

    @property
    def mid(self) -> str:
        return mid_of(self.page_id)


@dataclass(frozen=True)
class Candidate:
    """One proposed depicts item for a file, with the evidence a reviewer needs."""

    qid: str
    score: float
    rank: int
    linker: str
    linker_version: str
    labelset_hash: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    # Cascade linker: the image's share α of the file side (1 - α is the file text's).
    alpha: Optional[float] = None
    # A verifier's calibrated match probability P(match) (None without a verifier).
    probability: Optional[float] = None


@dataclass(frozen=True)
class FileWork:
    """A file row claimed from the queue by a stage."""

    id: int
    page_id: int
    title: str
    state: FileState
    attempts: int = 0
    media: Optional[MediaFile] = None

    @property
    def mid(self) -> str:
        return mid_of(self.page_id)


@dataclass(frozen=True)
class ApprovedEdit:
    """An approved (file, item) pair claimed by the writer."""

    candidate_id: int
    file_id: int
    page_id: int
    title: str
    qid: str
    prominent: bool
    reviewer: str
    attempts: int = 0
    # The file's own text as the queue knows it.
    description: str = ""
    categories: Tuple[str, ...] = ()
    # The file's evidence for this item as stored on the candidate row (``sources``: dicts
    # of ``core.evidence.Evidence``): the writer re-checks the pair against the current
    # safety rules, which allow a person only when evidence ties the file to them.
    evidence: Tuple[Mapping[str, Any], ...] = ()
    # The item's label as the linker stored it with the candidate ("" when unknown): named
    # in the edit summary beside the item id, without a request to Wikidata.
    label: str = ""
    # Edits of this pair recorded as ``written`` before this approval (a statement written,
    # reverted and approved again): part of its statement GUID, which is otherwise the same
    # for every attempt (``commons.writer.edit_group.statement_guid``).
    written_before: int = 0

    @property
    def mid(self) -> str:
        return mid_of(self.page_id)


# ``FollowUp.wanted`` of a statement that is to go (else the rank wanted).
REMOVE = "remove"


def rank_of(prominent: bool) -> str:
    """The Wikibase rank a decision asks for: "prominent" in the Commons UI is preferred rank."""
    return "preferred" if prominent else "normal"


@dataclass(frozen=True)
class Written:
    """The statement was added; ``revid`` is the new revision, ``statement_id`` its GUID.

    ``batch_id``: set when the write was made by an earlier run (recovered after a crash):
    the batch named in that edit's summary, so ``revert --batch`` finds it.
    """

    revid: int
    statement_id: str = ""
    batch_id: str = ""
    # The statement's rank as written ("normal" / "preferred"; "" when unknown).
    rank: str = ""


@dataclass(frozen=True)
class Skipped:
    """The writer decided not to write (already present, nobots, protected, ...)."""

    reason: str


@dataclass(frozen=True)
class Failed:
    """The write failed; ``retry_after`` seconds when it is worth retrying, else None."""

    reason: str
    retry_after: Optional[float] = None


@dataclass(frozen=True)
class DryRun:
    """Simulate mode: what would have been written."""

    summary: str = ""
