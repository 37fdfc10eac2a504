"""Decisions without the terminal (``review approve --file M123 --item Q146``) and the
small resolutions every review command needs: the reviewer's name and which file is meant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from wikivel_bot.core.review_rules import normalize_name
from wikivel_bot.errors import NotFound, UsageError
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.store.decisions import RANK_CHANGED, Seen
from wikivel_bot.core.titles import FILE_PREFIXES, check_file_title
from wikivel_bot.types import DecisionAction, is_mid, is_qid, mid_of, page_id_of

# The decisions table's reviewer column.
MAX_REVIEWER_CHARS = 255


@dataclass(frozen=True)
class Decided:
    """A decision recorded by :func:`decide`; ``decision_id`` is what undo takes."""

    page_id: int
    qid: str
    action: DecisionAction
    decision_id: int

    @property
    def mid(self) -> str:
        return mid_of(self.page_id)

    @property
    def in_flight(self) -> str:
        """What the reviewer is told when the pair was being written (else "")."""
        return in_flight_message(self.mid, self.qid, getattr(self.decision_id, "in_flight", ""))


def in_flight_message(mid: str, qid: str, in_flight: str) -> str:
    """"M1 Q2 is being written now; ..." for a decision that landed while its pair was being
    written (``Store.record_decision``'s ``in_flight``), "" otherwise. Recorded all the same:
    if the edit already left, the writer's follow-up makes the wiki agree."""
    if not in_flight:
        return ""
    then = "its rank will be changed" if in_flight == RANK_CHANGED else "it will be removed again"
    return f"{mid} {qid} is being written now; {then} (decision recorded)"


def resolve_reviewer(given: Optional[str], configured: str) -> str:
    """The reviewer's name: ``--reviewer``, else ``review.reviewer``.

    :raises UsageError: neither is set, or the name cannot be a wiki user name. Decisions
        are recorded under this name, and the writer names the approver in its edit summary,
        so a session never starts without one.
    """
    raw = (given if given is not None else configured) or ""
    name = normalize_name(raw, "User") if raw.strip() else ""
    if not name:
        raise UsageError(
            "who is reviewing? pass --reviewer NAME (your Commons user name) "
            "or set review.reviewer (WIKIVEL_REVIEW_REVIEWER)"
        )
    if len(name) > MAX_REVIEWER_CHARS or any(ch in name for ch in "#<>[]|{}\n"):
        raise UsageError(f"not a user name: {raw!r}")
    return name


def resolve_page_id(store: Store, ref: str) -> int:
    """The page id of a file given as ``M123`` or as its title (``File:X.jpg``).

    :raises UsageError: neither form. :raises NotFound: a title not in the queue.
    """
    text = ref.strip()
    if is_mid(text, any_case=True):
        try:
            return page_id_of(text.upper())
        except ValueError as exc:
            raise UsageError(f"--file: {exc}") from None
    if text.lower().startswith(FILE_PREFIXES):
        check_file_title(text)
        found = reviews.page_id_for_title(store, text)
        if found is None:
            raise NotFound(f"file {text!r} is not in the queue")
        return found
    raise UsageError(f"--file takes an M-id (M123) or a title (File:Name.jpg), not {ref!r}")


def decide(
    store: Store,
    file_ref: str,
    qids: Sequence[str],
    action: DecisionAction,
    reviewer: str,
    source: str = "cli",
    *,
    add_unproposed: bool = True,
    seen: Optional[Seen] = None,
    override: bool = False,
) -> List[Decided]:
    """Record ``action`` on (file, item) for each item; the QIDs and the file are checked
    before anything is recorded.

    :param file_ref: ``M123`` or ``File:Name.jpg``.
    :param qids: the items.
    :param add_unproposed: False: an item never proposed for the file is NotFound instead
        of added (see ``Store.record_decision``).
    :param seen: the pairs as the reviewer saw them: each changes only if it still is so.
    :param override: an operator's decision, which may replace another reviewer's.
    :raises UsageError: a bad QID or file reference. :raises NotFound: the file is not
        queued. :raises IllegalTransition: a pair is in a state the decision cannot apply to
        (pairs before it in ``qids`` are recorded by then).
    """
    bad = [q for q in qids if not is_qid(q.strip().upper())]
    if bad:
        raise UsageError(f"not a Wikidata item id: {bad[0]!r} (expected Q followed by digits)")
    page_id = resolve_page_id(store, file_ref)
    done = []
    for qid in dict.fromkeys(q.strip().upper() for q in qids):
        decision_id = store.record_decision(page_id, qid, action, reviewer, source,
                                            add_unproposed=add_unproposed, seen=seen, override=override)
        done.append(Decided(page_id, qid, action, decision_id))
    return done
