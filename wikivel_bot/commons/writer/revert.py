"""``revert --batch``: remove the statements one write batch added, where nobody changed them.

For each file the batch wrote to, the file's MediaInfo is re-read once and the statements
the batch recorded as written (by their GUIDs from the audit trail: exactly those the bot's
edit added) are removed in one ``wbremoveclaims`` edit (more when one comment cannot name them
all: :func:`revert_groups`; baserevid from the fresh read) that
leaves once (``one_shot.send_once``, like the writer's edits: pywikibot would resend it after
a read timeout, and the resend of an applied removal is an edit conflict on Wikibase —
recorded as failed and blamed on someone else; without an answer the file is re-read, and a
statement this bot's own revision removed is recorded as removed), each only when it is still
exactly what the bot wrote: the same GUID, P180 pointing at the same item, the same rank,
and no qualifiers or references added. Anything a human touched since is left alone with a
reason, because reverting over a person's edit would undo their work, not ours; statements
others added to the file since are never named, so they stay.

Outcomes are values like the writer's: ``Written`` here means "removed" (its ``revid`` is
the removing revision), ``Skipped``/``Failed``/``DryRun`` as usual; errors go through
:func:`wikivel_bot.commons.writer.outcomes.failure_for`. Dry-run is pywikibot ``simulate``
with the same guard as the writer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from wikivel_bot import __version__
from wikivel_bot.commons.mediainfo import DEPICTS, load_mediainfo
from wikivel_bot.commons.writer.edit_group import History
from wikivel_bot.commons.writer.one_shot import Unanswered, send_once
from wikivel_bot.commons.writer.outcomes import WriteStopped, failure_for
from wikivel_bot.commons.writer.loop import reason_kind
from wikivel_bot.commons.writer.statement_writer import WriteRefused, enable_dry_run, guard_simulate
from wikivel_bot.commons.writer.stop_page import WritingPaused, no_stop_page
from wikivel_bot.core.edit_comment import COMMENT_LIMIT, removing
from wikivel_bot.types import DryRun, EditOutcome, Failed, Skipped, Written, rank_of

RevertOutcome = Union[Written, Skipped, Failed, DryRun]


def removal_comment_room(qids: Sequence[str]) -> int:
    """Characters Wikibase's own comment of a ``wbremoveclaims`` edit removing statements
    of ``qids`` takes before our summary: it names every removed statement
    (``[[d:Special:EntityPage/P180]]: [[d:Special:EntityPage/Q146]], ...``, about 62
    characters each; ``core.edit_comment.removing``), within MediaWiki's 500."""
    return removing(qids)


class StatementRow(Protocol):
    """One statement to revert (``queue.revert_queries.WrittenStatement``, read-only)."""

    @property
    def candidate_id(self) -> int: ...

    @property
    def page_id(self) -> int: ...

    @property
    def title(self) -> str: ...

    @property
    def qid(self) -> str: ...

    @property
    def prominent(self) -> bool: ...

    @property
    def statement_id(self) -> str: ...


class RevertStore(Protocol):
    def written_statements(self, batch_id: str) -> Sequence[StatementRow]: ...

    def batch_outcomes(self, batch_id: str) -> Mapping[str, int]: ...

    def mark_reverted(self, candidate_id: int, batch_id: str, revid: int, statement_id: str = "",
                      started_at: Optional[datetime] = None) -> object: ...

    def record_revert_problem(self, candidate_id: int, batch_id: str, outcome: EditOutcome,
                              reason: str, started_at: Optional[datetime] = None) -> None: ...


def revert_summary(qids: Union[str, Sequence[str]], batch_id: str, version: str = __version__) -> str:
    """The summary of a removal: names the batch being reverted and every item removed."""
    qids = [qids] if isinstance(qids, str) else list(qids)
    what = ", ".join(f"[[d:{q}|{q}]]" for q in qids)
    return f"Reverting wikivel-bot batch {batch_id}: removing depicts {what} (wikivel-bot {version})"


class StatementReverter:
    """Removes the statements the bot wrote to one file, those that are unchanged, in one edit.

    :param site: the Commons ``DataSite``.
    :param tags: change tags for the removals.
    :param dry_run: simulate (switches pywikibot's ``simulate`` on).
    :param stop: the kill switch (``stop_page.StopGuard``), read right before each removal.
    """

    def __init__(self, site: Any, *, tags: Sequence[str] = (), dry_run: bool = False,
                 version: str = __version__, stop: Callable[[], None] = no_stop_page) -> None:
        if dry_run:
            enable_dry_run()
        self.site = site
        self.tags = tuple(tags)
        self.dry_run = dry_run
        self.version = version
        self.check_stop = stop

    def revert(self, row: StatementRow, batch_id: str) -> RevertOutcome:
        """One statement as a group of one (:meth:`revert_group`)."""
        ((_, outcome),) = self.revert_group([row], batch_id)
        return outcome

    def revert_group(self, rows: Sequence[StatementRow], batch_id: str) -> List[Tuple[StatementRow, RevertOutcome]]:
        """Re-read one file and remove, in one edit, those of ``rows`` (its statements the
        batch wrote) that are as the bot left them; (row, outcome) for each, in order.

        :raises WriteRefused: dry run requested but simulate is off.
        :raises WriteStopped: the account cannot edit at all.
        :raises WritingPaused: the stop page says stop.
        """
        if len({r.page_id for r in rows}) > 1:
            raise ValueError("a revert group is the statements of one file")
        done: Dict[int, RevertOutcome] = {}
        try:
            if not self.site.logged_in():
                self.site.login()
            mediainfo = load_mediainfo(self.site, rows[0].page_id)
            removable = []
            for index, row in enumerate(rows):
                found = self._find(mediainfo, row)
                if isinstance(found, Skipped):
                    done[index] = found
                else:
                    removable.append((index, row, found))
            if removable:
                summary = revert_summary([row.qid for _, row, _ in removable], batch_id, self.version)
                simulate = guard_simulate(self.dry_run)
                self.check_stop()  # raises WritingPaused: the run ends before this removal
                try:
                    revid = self._remove(mediainfo, [row for _, row, _ in removable], summary)
                except Unanswered:
                    done.update(self._settle_unanswered(rows[0].page_id, removable))
                    removable = []
                for index, row, _ in removable:
                    done[index] = DryRun(summary) if simulate else Written(
                        revid=revid, statement_id=row.statement_id)
        except (WriteRefused, WriteStopped, WritingPaused):
            raise
        except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
            failure = failure_for(exc)
            for index in range(len(rows)):
                done.setdefault(index, failure)
        return [(row, done[index]) for index, row in enumerate(rows)]

    def _remove(self, mediainfo: Any, rows: Sequence[StatementRow], summary: str) -> int:
        """Send the one ``wbremoveclaims`` (baserevid from the re-read) once, never resent by
        pywikibot (``one_shot``): a resent removal that was applied is an edit conflict on
        Wikibase and would be recorded as failed; the new revision id."""
        params = dict(action="wbremoveclaims", claim="|".join(r.statement_id for r in rows),
                      baserevid=mediainfo.latest_revision_id, summary=summary, bot=True,
                      token=mediainfo.repo.tokens["csrf"])
        if self.tags:
            params["tags"] = "|".join(self.tags)
        answer = send_once(mediainfo.repo, **params)
        revid = int((answer.get("pageinfo") or {}).get("lastrevid") or 0)
        mediainfo.latest_revision_id = revid or mediainfo.latest_revision_id
        return revid

    def _settle_unanswered(self, page_id: int, removable: Sequence[Tuple[int, StatementRow, Any]]
                           ) -> Dict[int, RevertOutcome]:
        """No answer to the removal: the file re-read decides, as for the writer's edits. A
        statement gone by this bot's own revision (found in the history) was removed;
        while all are still there nothing was applied (a transient failure, tried again by
        the next run); one gone without such a revision was removed by someone else."""
        mediainfo = load_mediainfo(self.site, page_id)
        present = {c.snak for c in mediainfo.statements.get(DEPICTS, [])} if mediainfo is not None else set()
        if mediainfo is not None and all(row.statement_id in present for _, row, _ in removable):
            failure = failure_for(Unanswered("no answer to the removal and its statements are still on "
                                             "the page: nothing was applied; tried again by the next run"))
            return {index: failure for index, _, _ in removable}
        history = History(self.site, page_id)
        out: Dict[int, RevertOutcome] = {}
        for index, row, _ in removable:
            if row.statement_id in present:  # one edit removes all or none: not this one
                out[index] = failure_for(Unanswered("no answer to the removal and this statement is "
                                                    "still on the page"))
                continue
            revid = history.followed_up(row.qid, row.statement_id)
            out[index] = Written(revid=revid, statement_id=row.statement_id) if revid else Skipped(
                "statement no longer present (removed or changed by someone else)")
        return out

    def simulating(self) -> bool:
        """True when removals are simulated (asked for, or pywikibot's simulate is on)."""
        from pywikibot import config

        return self.dry_run or bool(config.simulate)

    def _find(self, mediainfo: Any, row: StatementRow) -> Any:
        """The statement to remove, or Skipped with why it stays."""
        if mediainfo is None:
            return Skipped("file page deleted")
        claim = next((c for c in mediainfo.statements.get(DEPICTS, []) if c.snak == row.statement_id),
                     None)
        if claim is None:
            return Skipped("statement no longer present (removed or changed by someone else)")
        target = claim.getTarget()
        now = getattr(target, "id", None) if claim.getSnakType() == "value" else claim.getSnakType()
        if now != row.qid:
            return Skipped(f"changed by someone else: now depicts {now}, the bot wrote {row.qid}")
        expected = rank_of(row.prominent)
        if claim.getRank() != expected:
            return Skipped(f"changed by someone else: rank is {claim.getRank()}, the bot wrote {expected}")
        if claim.qualifiers or claim.sources:
            return Skipped("changed by someone else: qualifiers or references were added")
        return claim


def revert_groups(rows: Sequence[StatementRow], batch_id: str, version: str = __version__
                  ) -> List[List[StatementRow]]:
    """``rows`` as removal edits: one per file (in the order of each file's first statement),
    more only when Wikibase's comment and ours would not fit MediaWiki's 500 characters
    (three or four statements to an edit: Wikibase's comment names every removed value), so
    the stored comment keeps the batch id and every item link."""
    by_file: Dict[int, List[StatementRow]] = {}
    for row in rows:
        by_file.setdefault(row.page_id, []).append(row)
    out: List[List[StatementRow]] = []
    for statements in by_file.values():
        group: List[StatementRow] = []
        for row in statements:
            grown = [r.qid for r in [*group, row]]
            if group and (len(revert_summary(grown, batch_id, version))
                          + removal_comment_room(grown)) > COMMENT_LIMIT:
                out.append(group)
                group = []
            group.append(row)
        out.append(group)
    return out


def simulated_batch(store: RevertStore, batch_id: str) -> int:
    """How many statements ``batch_id`` only simulated, when it is a dry-run batch (it wrote
    nothing, its audit rows are ``dry_run`` ones); 0 for any other batch. A dry run's batch
    id is printed like a real one, so `revert --batch` must say there is nothing to undo
    rather than "0 statements removed", which reads as a revert that failed."""
    outcomes = store.batch_outcomes(batch_id)
    if outcomes.get(EditOutcome.WRITTEN.value, 0):
        return 0
    return int(outcomes.get(EditOutcome.DRY_RUN.value, 0))


@dataclass
class RevertCounters:
    """What a revert run did; ``lines()`` is printed at exit."""

    batch_id: str = ""
    reverted: int = 0
    dry_run: int = 0
    left_alone: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    # The batch was a dry run: this many statements were only simulated (simulated_batch).
    simulated: int = 0

    def lines(self) -> List[str]:
        if self.simulated:
            were = "statement was" if self.simulated == 1 else "statements were"
            return [f"batch {self.batch_id}",
                    f"it was a dry run: its {self.simulated} {were} only simulated and nothing was "
                    "written to the wiki, so there is nothing to revert"]
        out = [f"batch {self.batch_id}", f"{self.reverted} statements removed"]
        if self.dry_run:
            out.append(f"{self.dry_run} dry-run (would have been removed)")
        for name, counts in (("left alone", self.left_alone), ("failed", self.failed)):
            out.append(f"{sum(counts.values())} {name}")
            out += [f"    {n} {kind}" for kind, n in sorted(counts.items())]
        return out


def revert_batch(store: RevertStore, reverter: StatementReverter, batch_id: str,
                 counters: Optional[RevertCounters] = None) -> RevertCounters:
    """Remove what ``batch_id`` wrote and record each outcome.

    A dry run records nothing at all: the pairs stay ``written`` and the audit trail shows
    no revert attempt, only the printed counters tell what would have happened.

    A dry-run batch wrote nothing: the counters say so (``simulated``) and nothing is done.

    One removal edit per file (:func:`revert_groups`). Each edit's outcomes are committed
    before the next removal, so an interrupted revert can simply be run again: reverted pairs are no longer ``written`` and are not looked at twice.

    :param counters: added to (and returned), so a caller can print them after an error.
    :raises NotFound: no such batch in the audit trail.
    """
    counters = counters if counters is not None else RevertCounters()
    counters.batch_id = batch_id
    record = not reverter.simulating()
    rows = store.written_statements(batch_id)
    if not rows:
        counters.simulated = simulated_batch(store, batch_id)
    for group in revert_groups(rows, batch_id, reverter.version):
        started = datetime.now(timezone.utc)
        for row, outcome in reverter.revert_group(group, batch_id):
            if isinstance(outcome, DryRun):
                counters.dry_run += 1
            elif isinstance(outcome, Written):
                store.mark_reverted(row.candidate_id, batch_id, outcome.revid, row.statement_id, started)
                counters.reverted += 1
            else:
                kind = EditOutcome.SKIPPED if isinstance(outcome, Skipped) else EditOutcome.FAILED
                if record:
                    store.record_revert_problem(row.candidate_id, batch_id, kind, outcome.reason, started)
                target = counters.left_alone if kind is EditOutcome.SKIPPED else counters.failed
                target[reason_kind(outcome.reason)] += 1
    return counters
