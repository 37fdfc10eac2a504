"""Pure rules of human review: filters, decision words, page URLs, spreadsheet-safe cells.

Everything here is standard library only, so the terminal review, the exports, the import of
offline decisions and (later) a web page share one definition of what a reviewer sees and
what a decision word means. The value types the review queries return live here too: they
are plain data, free of SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Dict, Iterable, Optional, Sequence, Tuple
from urllib.parse import quote, urlsplit

from wikivel_bot.core.evidence_view import ShownEvidence
from wikivel_bot.core.safety import ItemCheck
from wikivel_bot.core.titles import page_name
from wikivel_bot.errors import UsageError
from wikivel_bot.types import CandidateState, DecisionAction, Depiction, is_qid, mid_of

# Export formats (``wikivel-bot export --format``), in the order the help lists them.
EXPORT_FORMATS = ("csv", "jsonl", "quickstatements", "wikitext")

# The words accepted in the `decision` column of an exported CSV (case-insensitive).
# Aliases because patrollers type what they think ("yes", "no"), and spreadsheets offer
# what was exported before ("approved").
DECISION_WORDS: Dict[str, DecisionAction] = {
    "approve": DecisionAction.APPROVE,
    "approved": DecisionAction.APPROVE,
    "yes": DecisionAction.APPROVE,
    "prominent": DecisionAction.APPROVE_PROMINENT,
    "approve-prominent": DecisionAction.APPROVE_PROMINENT,
    "approve_prominent": DecisionAction.APPROVE_PROMINENT,
    "reject": DecisionAction.REJECT,
    "rejected": DecisionAction.REJECT,
    "no": DecisionAction.REJECT,
    "skip": DecisionAction.SKIP,
}

# Spreadsheet programs run cells starting with these as formulas ("CSV injection"); text
# cells that start with one get a leading apostrophe in CSV exports.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

# File page bases of the wikis `site.name` can name (used when `site.api_url` is empty).
SITE_BASES = {
    "commons": "https://commons.wikimedia.org/wiki/",
    "commons:commons": "https://commons.wikimedia.org/wiki/",
    "commons:test": "https://test-commons.wikimedia.org/wiki/",
    "commons:beta": "https://commons.wikimedia.beta.wmflabs.org/wiki/",
}


@dataclass(frozen=True)
class ReviewFilter:
    """Which files and candidates a review session or an export covers.

    :param states: candidate states to include (review: proposed only).
    :param min_score: candidates scoring below are left out; pairs without a score (added
        by a reviewer) are never left out by it.
    :param category: only files in this category (``Category:`` prefix optional).
    :param uploader: only files uploaded by this user (``User:`` prefix optional).
    :param linker: only candidates proposed by this linker (``zero-shot``, ...).
    :param since: only files uploaded at or after this time (naive UTC).
    :param until: only files uploaded before this time (naive UTC, exclusive).
    :param page_ids: only these files (the audit's and import's ``--file``).
    :param safety: the safety rules as configured now (``core.safety.item_check``): a
        queued pair (proposed or approved) whose item they withhold is left out, whatever
        the rules were when it was suggested; None re-checks nothing.
    """

    states: Tuple[CandidateState, ...] = (CandidateState.PROPOSED,)
    min_score: Optional[float] = None
    category: str = ""
    uploader: str = ""
    linker: str = ""
    since: Optional[datetime] = None
    until: Optional[datetime] = None
    page_ids: Tuple[int, ...] = ()
    safety: Optional[ItemCheck] = field(default=None, compare=False)


@dataclass(frozen=True)
class ReviewCandidate:
    """One (file, item) pair as a reviewer sees it."""

    candidate_id: int
    qid: str
    score: Optional[float]
    rank: Optional[int]
    linker: str
    state: CandidateState
    prominent: bool = False
    reviewer: str = ""
    label: str = ""
    description: str = ""
    notes: Tuple[str, ...] = ()
    # Made with random weights (a smoke run): the suggestion means nothing.
    random_weights: bool = False
    # Cascade linker: the image's share α of the file side (the rest is the file's text).
    alpha: Optional[float] = None
    # A verifier's calibrated match probability.
    probability: Optional[float] = None
    # Why it was suggested: the file's own evidence, or "image only" (core.evidence_view).
    evidence: ShownEvidence = ShownEvidence()
    # An edit for this pair was sent then and its answer never came: the wiki may still
    # apply it (the writer re-reads the file until it is settled; commons.writer.unsettled).
    unsettled_since: Optional[datetime] = None


@dataclass(frozen=True)
class ReviewFile:
    """A file with the candidates a session or an export shows for it."""

    file_id: int
    page_id: int
    title: str
    uploader: str = ""
    uploaded_at: Optional[datetime] = None
    thumb_url: str = ""
    description: str = ""
    categories: Tuple[str, ...] = ()
    depicts: Tuple[Depiction, ...] = ()
    candidates: Tuple[ReviewCandidate, ...] = field(default_factory=tuple)
    # How many suggestions each safety rule withheld for the file: (rule, n) pairs
    # (core.safety.RULES). Counts only: the queue never keeps which items they were.
    withheld: Tuple[Tuple[str, int], ...] = ()

    @property
    def mid(self) -> str:
        return mid_of(self.page_id)

    def withheld_by_rule(self) -> Dict[str, int]:
        """{safety rule: suggestions withheld} for this file."""
        counts: Dict[str, int] = {}
        for rule, n in self.withheld:
            counts[rule] = counts.get(rule, 0) + n
        return counts


# Pairs still on their way to Commons: what the current safety rules may take back.
QUEUED_STATES = (CandidateState.PROPOSED, CandidateState.APPROVED)


def without_withheld(review_file: ReviewFile, safety: Optional[ItemCheck]) -> ReviewFile:
    """``review_file`` without the queued pairs whose item the current safety rules
    withhold, given the evidence stored with each pair (a person the file's evidence ties it
    to stays, as when suggested). Decided pairs (written, rejected, ...) are history and stay."""
    if safety is None:
        return review_file
    kept = tuple(c for c in review_file.candidates
                 if c.state not in QUEUED_STATES or not safety(c.qid, c.evidence.sources).withheld)
    return review_file if len(kept) == len(review_file.candidates) else replace(review_file, candidates=kept)


def parse_decision(word: str) -> Optional[DecisionAction]:
    """The action a decision word stands for; None for an empty cell (no decision).

    :param word: the cell as typed; case and surrounding spaces do not matter.
    :raises ValueError: an unknown word (the message lists the accepted ones).
    """
    key = word.strip().lower()
    if not key:
        return None
    try:
        return DECISION_WORDS[key]
    except KeyError:
        raise ValueError(
            f"unknown decision word {word.strip()!r} (use approve, prominent, reject, skip or leave it empty)"
        ) from None


def parse_time_bound(text: str, end: bool = False) -> datetime:
    """A ``--since``/``--until`` value as naive UTC.

    A bare date (``2026-11-01``) means the start of that day for ``--since`` and the end of
    it for ``--until`` (so ``--until`` is inclusive of the day named); a full ISO time is
    taken as given, UTC unless it names an offset.

    :param text: ``YYYY-MM-DD`` or an ISO 8601 date and time.
    :param end: True for an upper bound (the result is exclusive).
    :raises UsageError: not a date.
    """
    value = text.strip()
    try:
        if len(value) == 10:
            day = datetime.strptime(value, "%Y-%m-%d")
            return day + timedelta(days=1) if end else day
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"not a date: {text!r} (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS)") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def normalize_name(text: str, prefix: str) -> str:
    """A page or user name as MediaWiki compares it: no namespace prefix, underscores as
    spaces, single spaces, first letter upper case (``$wgCapitalLinks`` on Commons)."""
    return page_name(text, (prefix + ":",))


def category_matches(wanted: str, categories: Iterable[str]) -> bool:
    """True when ``wanted`` is one of the file's categories (MediaWiki's name rules)."""
    target = normalize_name(wanted, "Category")
    return any(normalize_name(c, "Category") == target for c in categories)


def file_title(title: str) -> str:
    """The title with its ``File:`` namespace, as links and QuickStatements need it."""
    name = normalize_name(title, "File")
    return f"File:{name}"


def file_page_url(title: str, api_url: str = "", site_name: str = "commons") -> str:
    """The URL of a file's description page.

    :param title: the page title, with or without ``File:``.
    :param api_url: ``site.api_url``; when set, the page lives on that wiki. Wikimedia-style
        wikis (``/w/api.php``) use ``/wiki/Title``; any other script path uses
        ``index.php?title=``, which every MediaWiki answers whatever its article path.
    :param site_name: ``site.name`` (commons, commons:test, commons:beta) when no API URL.
    """
    # MediaWiki's wfUrlencode leaves these readable in page URLs.
    encoded = quote(file_title(title).replace(" ", "_"), safe=";@$!*(),/~:")
    if api_url:
        parts = urlsplit(api_url)
        script = parts.path.rsplit("/", 1)[0] if parts.path.endswith(".php") else parts.path.rstrip("/")
        origin = f"{parts.scheme}://{parts.netloc}"
        if script == "/w":
            return f"{origin}/wiki/{encoded}"
        return f"{origin}{script}/index.php?title={encoded}"
    base = SITE_BASES.get(site_name.strip().lower(), SITE_BASES["commons"])
    return base + encoded


def candidate_order(candidates: Sequence[ReviewCandidate]) -> Tuple[ReviewCandidate, ...]:
    """The order a reviewer sees candidates in: the linker's rank, then score, then QID.

    Sorted here rather than in SQL because backends disagree on where NULLs sort, and pairs
    a reviewer added have neither rank nor score (they go last).
    """
    def key(c: ReviewCandidate) -> tuple:
        return (
            c.rank is None, c.rank if c.rank is not None else 0,
            -(c.score if c.score is not None else float("-inf")), int(c.qid[1:]) if is_qid(c.qid) else 0,
        )

    return tuple(sorted(candidates, key=key))


def next_open(decided: Sequence[bool], current: int) -> Optional[int]:
    """The index of the next candidate without a decision, after ``current``, wrapping.

    :param decided: one flag per candidate, in display order.
    :param current: the index just decided (or the cursor).
    :return: None when every candidate has one.
    """
    n = len(decided)
    for step in range(1, n + 1):
        index = (current + step) % n
        if not decided[index]:
            return index
    return None


def spreadsheet_safe(text: str) -> str:
    """A text cell that a spreadsheet will not run as a formula."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def format_score(score: Optional[float]) -> str:
    """Scores as reviewers read them: three decimals, or empty for a reviewer-added pair."""
    return "" if score is None else f"{score:.3f}"


# What a pair's state means to someone who wants to decide it again (import messages).
_HANDLED = {
    CandidateState.WRITTEN: "written to Commons",
    CandidateState.WRITE_SKIPPED: "skipped by the writer (see `wikivel-bot audit`)",
    CandidateState.WRITE_FAILED: "failed to write (see `wikivel-bot audit`)",
    CandidateState.REVERTED: "written and reverted",
}

APPLY, UNCHANGED, REFUSE = "apply", "unchanged", "refuse"


def offline_verdict(
    state: Optional[CandidateState],
    prominent: bool,
    last_action: Optional[DecisionAction],
    action: DecisionAction,
) -> Tuple[str, str]:
    """What importing ``action`` on a pair does, given where the pair stands now.

    A decision that already holds is ``unchanged`` (so importing the same file twice changes
    nothing); one the queue's rules forbid is ``refused`` with the reason; anything else is
    applied. Rejections stay permanent: an offline "approve" never overrides one.

    :param state: the pair's state; None when the item was never proposed for the file.
    :param prominent: the pair's prominent flag.
    :param last_action: the newest decision recorded on the pair.
    :param action: the decision in the imported row.
    :return: (APPLY | UNCHANGED | REFUSE, reason; empty for APPLY).
    """
    if action is DecisionAction.SKIP:
        if state is None:
            return REFUSE, "the item was never proposed for this file, so there is nothing to skip"
        if state is CandidateState.PROPOSED:
            if last_action is DecisionAction.SKIP:
                return UNCHANGED, "already skipped"
            return APPLY, ""
        return UNCHANGED, f"already {_phrase(state)}; skip does not change a decision"
    if action is DecisionAction.REJECT:
        if state in (None, CandidateState.PROPOSED, CandidateState.APPROVED):
            return APPLY, ""
        if state is CandidateState.REJECTED:
            return UNCHANGED, "already rejected"
        hint = "; remove it with `wikivel-bot revert`" if state is CandidateState.WRITTEN else ""
        return REFUSE, f"already {_phrase(state)}{hint}"
    wanted = action is DecisionAction.APPROVE_PROMINENT
    rank = "prominent" if prominent else "normal rank"
    if state in (None, CandidateState.PROPOSED):
        return APPLY, ""
    if state is CandidateState.REJECTED:
        return REFUSE, "rejected earlier: a rejection is permanent for the file"
    if state is CandidateState.APPROVED:
        return (UNCHANGED, f"already approved ({rank})") if wanted == prominent else (APPLY, "")
    if state is CandidateState.REVERTED:
        return REFUSE, "already written and reverted; it cannot be approved again"
    if wanted == prominent:
        return UNCHANGED, f"already approved and {_phrase(state)}"
    return REFUSE, f"already {_phrase(state)} with {rank}; the rank can no longer change here"


def _phrase(state: CandidateState) -> str:
    return _HANDLED.get(state, state.value)


# States the writer put a pair in: the statement was written (or removed, or refused) by the
# bot's account, and the pair's reviewer is the one who approved it, never its author.
_BY_THE_BOT = {
    CandidateState.WRITTEN: "written by the bot account",
    CandidateState.REVERTED: "reverted: removed again by the bot account",
    CandidateState.WRITE_SKIPPED: "write_skipped: the bot's re-check did not write it",
    CandidateState.WRITE_FAILED: "write_failed: the bot's edit failed",
}


def state_text(state: CandidateState, reviewer: str = "", prominent: Optional[bool] = False) -> str:
    """A pair's state in a reviewer's words: ``approved (prominent) by Ann``, ``rejected by
    Bob``, ``written by the bot account (prominent), approved by Ann``.

    The reviewer of a pair past approval decided it; the edit is the bot account's. Saying
    "written by Ann" would credit a reviewer with an edit they never made (the review page,
    the terminal review and conflict messages share these words; review.js mirrors them).
    """
    who = reviewer if state is not CandidateState.PROPOSED else ""
    if state in _BY_THE_BOT:
        text = _BY_THE_BOT[state] + (" (prominent)" if prominent and state is CandidateState.WRITTEN else "")
        return text + (f", approved by {who}" if who else "")
    text = state.value + (" (prominent)" if prominent and state is CandidateState.APPROVED else "")
    return text + (f" by {who}" if who else "")


def format_signals(alpha: Optional[float], probability: Optional[float]) -> str:
    """``"P 0.91, image 62% / text 38%"`` for a cascade suggestion; '' when it has neither."""
    parts = []
    if probability is not None:
        parts.append(f"P {probability:.2f}")
    if alpha is not None:
        image = round(100 * alpha)
        parts.append(f"image {image}% / text {100 - image}%")
    return ", ".join(parts)


def unsettled_text(since: Optional[datetime]) -> str:
    """What a reviewer is told of a pair whose edit was sent without an answer, "" if none."""
    if since is None:
        return ""
    return (f"an edit for it was sent at {since:%Y-%m-%d %H:%M} UTC and no answer came: the wiki "
            "may still apply it, and the bot checks the file until it knows; your decision "
            "is what the file ends with")
