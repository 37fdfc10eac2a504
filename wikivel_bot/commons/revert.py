"""``revert --batch``: remove the statements one write batch added, where nobody changed them.

For each statement the batch recorded as written (by its GUID from the audit trail), the
file's MediaInfo is re-read and the statement removed with ``wbremoveclaims`` (pywikibot
``MediaInfo.removeClaims``, baserevid from the fresh read) only when it is still exactly
what the bot wrote: the same GUID, P180 pointing at the same item, the same rank, and no
qualifiers or references added. Anything a human touched since is left alone with a reason,
because reverting over a person's edit would undo their work, not ours.

Outcomes are values like the writer's: ``Written`` here means "removed" (its ``revid`` is
the removing revision), ``Skipped``/``Failed``/``DryRun`` as usual; errors go through
:func:`wikivel_bot.commons.write_outcomes.failure_for`. Dry-run is pywikibot ``simulate``
with the same guard as the writer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, List, Optional, Protocol, Sequence, Union

from wikivel_bot import __version__
from wikivel_bot.commons.mediainfo import DEPICTS
from wikivel_bot.commons.write_outcomes import WriteStopped, failure_for
from wikivel_bot.commons.write_loop import reason_kind
from wikivel_bot.commons.writer import WriteRefused, enable_dry_run, guard_simulate
from wikivel_bot.types import DryRun, EditOutcome, Failed, Skipped, Written

RevertOutcome = Union[Written, Skipped, Failed, DryRun]


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

    def mark_reverted(self, candidate_id: int, batch_id: str, revid: int, statement_id: str = "",
                      started_at: Optional[datetime] = None) -> object: ...

    def record_revert_problem(self, candidate_id: int, batch_id: str, outcome: EditOutcome,
                              reason: str, started_at: Optional[datetime] = None) -> None: ...


def revert_summary(qid: str, batch_id: str, version: str = __version__) -> str:
    """The summary of a removal: names the batch being reverted and the item."""
    return (f"Reverting wikivel-bot batch {batch_id}: removing depicts [[d:{qid}|{qid}]] "
            f"(wikivel-bot {version})")


class StatementReverter:
    """Removes one statement the bot wrote, if it is unchanged.

    :param site: the Commons ``DataSite``.
    :param tags: change tags for the removals.
    :param dry_run: simulate (switches pywikibot's ``simulate`` on).
    """

    def __init__(self, site: Any, *, tags: Sequence[str] = (), dry_run: bool = False,
                 version: str = __version__) -> None:
        if dry_run:
            enable_dry_run()
        self.site = site
        self.tags = tuple(tags)
        self.dry_run = dry_run
        self.version = version

    def revert(self, row: StatementRow, batch_id: str) -> RevertOutcome:
        """Re-read the file and remove ``row.statement_id`` if it is as the bot left it.

        :raises WriteRefused: dry run requested but simulate is off.
        :raises WriteStopped: the account cannot edit at all.
        """
        try:
            if not self.site.logged_in():
                self.site.login()
            found = self._find(row)
            if isinstance(found, Skipped):
                return found
            mediainfo, claim = found
            summary = revert_summary(row.qid, batch_id, self.version)
            simulate = guard_simulate(self.dry_run)
            mediainfo.removeClaims([claim], bot=True, summary=summary,
                                   tags="|".join(self.tags) or None)
            if simulate:
                return DryRun(summary)
            return Written(revid=int(mediainfo.latest_revision_id), statement_id=row.statement_id)
        except (WriteRefused, WriteStopped):
            raise
        except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
            return failure_for(exc)

    def simulating(self) -> bool:
        """True when removals are simulated (asked for, or pywikibot's simulate is on)."""
        from pywikibot import config

        return self.dry_run or bool(config.simulate)

    def _find(self, row: StatementRow) -> Union[Skipped, tuple]:
        import pywikibot

        pages = list(self.site.load_pages_from_pageids([row.page_id]))
        if not pages or not pages[0].exists():
            return Skipped("file page deleted")
        mediainfo = pywikibot.FilePage(pages[0]).data_item()
        mediainfo.get(force=True)
        claim = next((c for c in mediainfo.statements.get(DEPICTS, []) if c.snak == row.statement_id),
                     None)
        if claim is None:
            return Skipped("statement no longer present (removed or changed by someone else)")
        target = claim.getTarget()
        now = getattr(target, "id", None) if claim.getSnakType() == "value" else claim.getSnakType()
        if now != row.qid:
            return Skipped(f"changed by someone else: now depicts {now}, the bot wrote {row.qid}")
        expected = "preferred" if row.prominent else "normal"
        if claim.getRank() != expected:
            return Skipped(f"changed by someone else: rank is {claim.getRank()}, the bot wrote {expected}")
        if claim.qualifiers or claim.sources:
            return Skipped("changed by someone else: qualifiers or references were added")
        return mediainfo, claim


@dataclass
class RevertCounters:
    """What a revert run did; ``lines()`` is printed at exit."""

    batch_id: str = ""
    reverted: int = 0
    dry_run: int = 0
    left_alone: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)

    def lines(self) -> List[str]:
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

    Each outcome is committed before the next removal, so an interrupted revert can simply
    be run again: reverted pairs are no longer ``written`` and are not looked at twice.

    :param counters: added to (and returned), so a caller can print them after an error.
    :raises NotFound: no such batch in the audit trail.
    """
    counters = counters if counters is not None else RevertCounters()
    counters.batch_id = batch_id
    record = not reverter.simulating()
    for row in store.written_statements(batch_id):
        started = datetime.now(timezone.utc)
        outcome = reverter.revert(row, batch_id)
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
