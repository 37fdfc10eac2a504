"""A review session: one reviewer walking the queue file by file, deciding pairs, undoing.

No terminal here: :mod:`wikivel_bot.review.terminal` turns keys into calls on
:class:`ReviewSession` and renders its state, so the same logic can sit behind another front
end (a web page) and is tested without a terminal.

Rules a reviewer can rely on:

* Files come oldest first; a file leaves the session once each of its candidates has a
  decision or a skip, and the session never brings it back (except through undo).
* Skip is temporary: the pair stays ``proposed`` for a later session or another reviewer.
  Reject is permanent for the file (the store's negative memory).
* Undo takes back the newest decision of this session, whichever file it was on, and shows
  that file again; after it, the session returns to the file it was on.
* Counts are net of undos: an undone approval no longer counts as approved, it counts once
  in ``undone``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Tuple

from wikivel_bot.core.review_rules import ReviewFile, ReviewFilter, file_page_url, next_open
from wikivel_bot.errors import DecisionConflict, IllegalTransition, NotFound
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.store.decisions import Seen
from wikivel_bot.review.actions import in_flight_message
from wikivel_bot.types import CandidateState, DecisionAction

# What the reviewer sees next to a candidate after deciding it.
MARKS = {
    DecisionAction.APPROVE: "approved",
    DecisionAction.APPROVE_PROMINENT: "prominent",
    DecisionAction.REJECT: "rejected",
    DecisionAction.SKIP: "skipped",
}


@dataclass
class SessionCounts:
    """Decisions of one session, net of undos."""

    approved: int = 0
    prominent: int = 0
    rejected: int = 0
    skipped: int = 0
    undone: int = 0
    files: int = 0

    def add(self, action: DecisionAction, delta: int = 1) -> None:
        """Count ``delta`` decisions of ``action`` (-1 when one is undone)."""
        name = MARKS[action]
        setattr(self, name, getattr(self, name) + delta)

    def summary(self, reviewer: str = "") -> str:
        """One line for the end of a session."""
        who = f" ({reviewer})" if reviewer else ""
        return (
            f"review session{who}: approved {self.approved}, prominent {self.prominent}, "
            f"rejected {self.rejected}, skipped {self.skipped}, undone {self.undone} "
            f"- {self.files} file{'s' if self.files != 1 else ''} shown"
        )


@dataclass
class FileView:
    """A file as shown in this session: its candidates, what was decided, the cursor."""

    file: ReviewFile
    # Per candidate, in display order: "" while open, else approved/prominent/rejected/
    # skipped, or what another reviewer or the writer made of it meanwhile.
    marks: List[str] = field(default_factory=list)
    cursor: int = 0
    # 1 for the first file the session showed, 2 for the next, ...
    number: int = 0

    def __post_init__(self) -> None:
        if not self.marks:
            self.marks = [""] * len(self.file.candidates)

    @property
    def done(self) -> bool:
        return all(self.marks)


@dataclass(frozen=True)
class _Step:
    """One undoable step: a decision, or the skips of "skip the rest of this file"."""

    file_id: int
    # (candidate index, decision id, action)
    entries: Tuple[Tuple[int, int, DecisionAction], ...]


class ReviewSession:
    """One reviewer's pass over the queue.

    :param store: the queue.
    :param reviewer: recorded with every decision.
    :param flt: which files and candidates to show (candidate states are forced to
        ``proposed``: only pairs waiting for a human are reviewed).
    :param source: recorded with every decision (``terminal``, ``web``).
    :param api_url: ``site.api_url``, for file page URLs of a wiki other than Commons.
    :param site_name: ``site.name``, used when ``api_url`` is empty.
    """

    def __init__(
        self,
        store: Store,
        reviewer: str,
        flt: Optional[ReviewFilter] = None,
        source: str = "terminal",
        api_url: str = "",
        site_name: str = "commons",
        label_of: Optional[Callable[[str], str]] = None,
        order: str = "queue",
        threshold: float = 0.5,
    ) -> None:
        """
        :param label_of: qid -> label, for items shown without one of their own (the
            file's "depicts now"); '' when unknown.
        :param order: ``queue`` (oldest first) or ``uncertainty`` (nearest ``threshold``
            first; ``core.review_order``, docs/learning.md).
        """
        self.store = store
        self.reviewer = reviewer
        self.filter = replace(flt or ReviewFilter(), states=(CandidateState.PROPOSED,))
        self.source = source
        self.api_url = api_url
        self.site_name = site_name
        self.label_of = label_of
        self.counts = SessionCounts()
        self.current: Optional[FileView] = None
        self.message = ""
        self.total = 0  # files waiting when the session started
        self._views: Dict[int, FileView] = {}
        self._frontier = 0  # files.id of the newest file fetched by walking forward
        self._returns: List[int] = []  # files left for an undo, to come back to (LIFO)
        self._history: List[_Step] = []
        self.order, self._threshold = order, threshold

    # -- navigation ----------------------------------------------------------------------

    def start(self) -> None:
        """Count the waiting files and show the first one."""
        self.total = reviews.count_review_files(self.store, self.filter)
        self._advance()
        if self.current is None:
            self.message = "nothing to review with these filters"

    @property
    def finished(self) -> bool:
        """True when no file is left to show (undo may still bring one back)."""
        return self.current is None

    def move(self, delta: int) -> None:
        """Move the cursor ``delta`` candidates down (negative: up), wrapping around."""
        if self.current is not None and self.current.file.candidates:
            n = len(self.current.file.candidates)
            self.current.cursor = (self.current.cursor + delta) % n
            self.message = ""

    def select(self, number: int) -> None:
        """Put the cursor on candidate ``number`` (1-based, as displayed)."""
        if self.current is None:
            return
        if 1 <= number <= len(self.current.file.candidates):
            self.current.cursor = number - 1
            self.message = ""
        else:
            self.message = f"no candidate #{number} (this file has {len(self.current.file.candidates)})"

    def page_url(self) -> str:
        """The current file's description page, or "" when no file is shown."""
        if self.current is None:
            return ""
        return file_page_url(self.current.file.title, self.api_url, self.site_name)

    # -- decisions -----------------------------------------------------------------------

    def decide(self, action: DecisionAction) -> None:
        """Apply ``action`` to the candidate under the cursor, then move to the next open
        candidate, or to the next file when none is left."""
        view = self.current
        if view is None:
            return
        index = view.cursor
        cand = view.file.candidates[index]
        if view.marks[index]:
            self.message = f"{cand.qid} is already {view.marks[index]} (u undoes the last decision)"
            return
        decision_id = self._record(view, index, action)
        if decision_id is None:
            self._after_decision(view, index)
            return
        view.marks[index] = MARKS[action]
        self._history.append(_Step(view.file.file_id, ((index, decision_id, action),)))
        self.counts.add(action)
        self.message = f"{MARKS[action]} {cand.qid}" + (f" ({cand.label})" if cand.label else "")
        self._after_decision(view, index)

    def skip_file(self) -> None:
        """Skip every open candidate of the current file (one undo step) and move on."""
        view = self.current
        if view is None:
            return
        entries = []
        for index, mark in enumerate(view.marks):
            if not mark:
                decision_id = self._record(view, index, DecisionAction.SKIP)
                if decision_id is not None:
                    view.marks[index] = MARKS[DecisionAction.SKIP]
                    entries.append((index, decision_id, DecisionAction.SKIP))
                    self.counts.add(DecisionAction.SKIP)
        if entries:
            self._history.append(_Step(view.file.file_id, tuple(entries)))
        plural = "s" if len(entries) != 1 else ""
        self.message = f"skipped the rest of {view.file.mid} ({len(entries)} candidate{plural})"
        self._advance()

    def undo(self) -> None:
        """Take back the newest decision (or skip-the-rest step) of this session."""
        if not self._history:
            self.message = "nothing to undo in this session"
            return
        step = self._history.pop()
        view = self._views[step.file_id]
        undone, writing = [], []
        for index, decision_id, action in reversed(step.entries):
            try:
                recorded = self.store.undo_decision(decision_id)
            except (IllegalTransition, NotFound):
                # The writer (or another reviewer) moved the pair on since: it stays as it is.
                view.marks[index] = view.marks[index] or "taken"
                self.message = f"cannot undo {view.file.candidates[index].qid}: it was handled meanwhile"
                continue
            # An approval the writer was already writing: say what follows, not a plain "undone".
            writing.append(in_flight_message(view.file.mid, view.file.candidates[index].qid,
                                             getattr(recorded, "in_flight", "")))
            view.marks[index] = ""
            self.counts.add(action, -1)
            self.counts.undone += 1
            undone.append(index)
        if not undone:
            return
        if self.current is not view:
            if self.current is not None:
                self._returns.append(self.current.file.file_id)
            self.current = view
        view.cursor = min(undone)
        qids = ", ".join(view.file.candidates[i].qid for i in sorted(undone))
        self.message = "; ".join([f"undone: {qids} on {view.file.mid} is open again", *filter(None, writing)])

    # -- helpers -------------------------------------------------------------------------

    def _record(self, view: FileView, index: int, action: DecisionAction) -> Optional[int]:
        cand = view.file.candidates[index]
        try:
            # The session shows pairs waiting for review: the decision applies only if the
            # pair still waits, never over what another reviewer decided meanwhile.
            return self.store.record_decision(view.file.page_id, cand.qid, action, self.reviewer, self.source,
                                              seen=Seen(CandidateState.PROPOSED))
        except IllegalTransition as exc:
            # Another reviewer decided it (or the writer took it) while it was on screen.
            if isinstance(exc, DecisionConflict) and exc.state:
                now = Seen(CandidateState(exc.state), exc.reviewer, exc.prominent).describe()
            else:
                state = reviews.pair_status(self.store, view.file.page_id, cand.qid).state
                now = state.value if state else "gone"
            view.marks[index] = f"already {now} elsewhere"
            self.message = f"{cand.qid} was decided elsewhere meanwhile ({now}): nothing of yours recorded"
            return None

    def _after_decision(self, view: FileView, index: int) -> None:
        following = next_open([bool(m) for m in view.marks], index)
        if following is None:
            self._advance()
        else:
            view.cursor = following

    def _advance(self) -> None:
        """Show the next file: one left behind by an undo first, else the next in the queue."""
        while self._returns:
            view = self._views[self._returns.pop()]
            if not view.done:
                self.current = view
                return
        if self.order == "uncertainty":
            from wikivel_bot.queue.learning_queries import next_uncertain_file

            found = next_uncertain_file(self.store, self.filter, self._threshold, after_id=self._frontier,
                                        exclude=tuple(self._views))
        else:
            found = reviews.next_review_file(self.store, self.filter, after_id=self._frontier)
        if found is None:
            self.current = None
            return
        self._frontier = found.file_id
        self.counts.files += 1
        view = FileView(found, number=self.counts.files)
        self._views[found.file_id] = view
        self.current = view
