"""The writer: adds human-approved depicts (P180) statements to Commons files, one edit per file.

For the approved pairs of one file (a *group*), :class:`StatementWriter` does::

    re-read      the file page (exists? edit-protected for us? {{bots}}/{{nobots}}) and its
                 MediaInfo entity (statements, fresh revision id for baserevid)
    check        each pair still this writer's (``still_ours``: approved, the same decision,
                 claimed by us); a pair that is not is dropped as ``Lost`` (nothing recorded)
    plan         per pair, core.edit_rules.plan_edit: skip when present, a more specific
                 item is present, opted out, protected or deleted; a present item this bot
                 added in an edit whose answer was lost is recovered (see below)
    re-check     the current safety rules (``safety``): a pair approved before a rule
                 change whose item the rules now withhold is skipped with the rule's reason
                 (``withheld by the safety rules: ...``), recorded and audited like any skip
    moved        an item merged (now a redirect) or deleted since its approval: the pair is
                 held for a human (``moved_items``), never rewritten; the rest is written
    throttle     wait out pywikibot's put throttle (``edit_group.wait_put_throttle``)
    last check   ``still_ours`` again for every pair left: the last thing before the request
                 leaves, so a reject that arrived during the throttle wait drops its pair;
                 made again when more than ``fresh_s`` passed since (``edit_send``)
    write        one ``wbeditentity`` with every remaining statement (preferred rank for
                 "prominent"), baserevid from the re-read, bot=True, the summary (every item
                 with its label, approvers, version, batch) and tags — sent once, never
                 resent by pywikibot: a late answer is settled by re-reading the file for
                 the statement GUIDs, a maxlag answer by waiting and checking again
                 (:mod:`wikivel_bot.commons.writer.edit_send`)

and returns each pair's outcome as a value: ``Written`` (the group's statements share the
edit's revision, each has its own GUID) / ``Skipped`` / ``Failed`` / ``DryRun`` / ``Lost``
(errors mapped in :mod:`wikivel_bot.commons.writer.outcomes`). An edit conflict (someone
edited the file between the re-read and the edit) re-reads and retries the group at once,
up to :data:`CONFLICT_TRIES` times, before it becomes a transient failure. A file that had no
structured data at the re-read and got some before the edit arrived is no conflict to
Wikibase: it answers ``failed-save`` ("Can't create slot, it already exists") and saves
nothing; the writer re-reads and tries once more against that revision, where an item
someone added meanwhile is present and skipped. maxlag
(``write_maxlag``) and the edit rate (``put_throttle``) are pywikibot's, so the operator's
``user-config.py`` governs both.

Dry-run is pywikibot's ``config.simulate``, which blocks every write action at the lowest
layer (``Request._simulate``). :func:`enable_dry_run` sets it; a dry-run writer also checks it
right before each write and refuses (:class:`WriteRefused`) if it was switched off, so no
caller can turn a dry run into real edits. The reverse holds too: whenever simulate is on,
every pair of the group is ``DryRun``, never a fake ``Written``.

Duplicates after a crash: the API may accept the edit and the process die before the queue
records it. The re-read before every write is the guard: on restart the items are already
present, so nothing is written again, and ``edit_group.History`` finds this bot's own
revision that added them, to record each lost pair as ``Written`` with its statement GUID
(so the audit trail and ``revert`` still know it).

The loop over the queue (claim whole files, write each group, record, count) is
:mod:`wikivel_bot.commons.writer.loop`.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot import __version__
from wikivel_bot.commons.writer.edit_group import History, Lost, new_statement, statement_guid
from wikivel_bot.commons.writer.edit_send import Sent, send_group
from wikivel_bot.commons.mediainfo import DEPICTS, depicts_of
from wikivel_bot.commons.writer.moved_items import hold_moved_items
from wikivel_bot.commons.writer.outcomes import WriteStopped, classify, failure_for
from wikivel_bot.commons.writer.unsettled import NO_JOURNAL, Journal
from wikivel_bot.commons.writer.edit_budget import EditBudget
from wikivel_bot.commons.writer.stop_page import WritingPaused, no_stop_page
from wikivel_bot.core.edit_rules import MAX_HOPS, AncestorLookup, SummaryItem, group_summary, plan_edit, summary_fits
from wikivel_bot.core.item_view import fetched_items
from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.core.safety import ItemCheck, item_check, rules_from
from wikivel_bot.errors import LeaseLost, WikiError
from wikivel_bot.types import ApprovedEdit, DryRun, Failed, MediaFile, Skipped, Written

Outcome = Union[Written, Skipped, Failed, DryRun]
# One pair's result in a group: an outcome to record, or Lost (not this writer's any more).
PairResult = Tuple[ApprovedEdit, Union[Outcome, Lost]]

# Edit conflicts met by one group before it becomes a transient failure: each try re-reads.
CONFLICT_TRIES = 3
# The reason's first words when the current safety rules refuse an approved pair (the
# write counters group skips by them).
WITHHELD = "withheld by the safety rules"

__all__ = [
    "CONFLICT_TRIES", "Lost", "PairResult", "StatementWriter", "WriteRefused", "WriteStopped",
    "enable_dry_run", "guard_simulate", "hierarchy_lookup", "new_batch_id", "safety_check",
]


class WriteRefused(WikiError):
    """A dry run was asked for, but pywikibot's ``simulate`` is off: nothing is written."""


def new_batch_id(now: Optional[datetime] = None) -> str:
    """A batch id for one ``write`` run: ``b-YYYYMMDDHHMMSS-<4 hex>`` (UTC).

    Named in every edit summary, so patrollers and ``revert --batch`` can find the run.
    """
    now = now or datetime.now(timezone.utc)
    return f"b-{now:%Y%m%d%H%M%S}-{secrets.token_hex(2)}"


def enable_dry_run() -> None:
    """Switch on pywikibot's ``simulate``: from now on no write request leaves the process.

    Call it before the site is built, so even the first request runs simulated.
    """
    from pywikibot import config

    config.simulate = True


def guard_simulate(dry_run: bool) -> bool:
    """Whether the next write runs simulated; checked right before every write.

    :param dry_run: the caller asked for a dry run.
    :raises WriteRefused: a dry run was asked for but ``simulate`` is off.
    """
    from pywikibot import config

    simulate = bool(config.simulate)
    if dry_run and not simulate:
        raise WriteRefused(
            "dry run requested but pywikibot's simulate is off; refusing to write "
            "(something switched it off after the writer was built)"
        )
    return simulate


@dataclass
class _Now:
    """What the re-read found."""

    exists: bool
    media: Optional[MediaFile] = None
    mediainfo: Any = None  # pywikibot.MediaInfo, loaded


class StatementWriter:
    """Writes the approved pairs of one file as one edit; see the module docstring.

    :param site: the Commons ``DataSite`` (``commons.site.open_site``), logged in or able to.
    :param batch_id: named in every summary (:func:`new_batch_id`).
    :param ancestors_of: {ancestor: hops} of an item (for "a more specific item is present").
    :param repo: the Wikibase repository of the items; default: ``site``'s repository.
    :param tags: change tags for every edit (must be active on the wiki).
    :param dry_run: simulate every write (switches pywikibot's ``simulate`` on).
    :param version: the tool version named in summaries.
    :param max_hops: how far below the approved item a present item counts as more specific.
    :param safety: the current safety rules as one check (``core.safety.item_check`` with
        the label set and Wikidata for other items); None checks nothing.
    :param fresh_s: the longest time between the last check and the request leaving (a
        fixed fraction of the claim lease: a third); older, the writer checks again.
    :param monotonic: the clock ``fresh_s`` and the edit budget are measured with.
    :param stop: the kill switch (``stop_page.StopGuard``), called right before every edit
        request leaves; raises ``WritingPaused`` when the stop page says stop.
    :param budget: edits per file (``edit_budget``); default: the documented five an hour.
    :param items: the items repository's Wikidata client: a pair whose item is missing or now
        a redirect is held for a human (``moved_items``); None checks nothing.
    """

    def __init__(self, site: Any, batch_id: str, ancestors_of: AncestorLookup, *,
                 repo: Any = None, tags: Sequence[str] = (), dry_run: bool = False,
                 version: str = __version__, max_hops: int = MAX_HOPS,
                 safety: Optional[ItemCheck] = None, fresh_s: float = 300.0,
                 monotonic: Callable[[], float] = time.monotonic, items: Any = None,
                 stop: Callable[[], None] = no_stop_page, budget: Optional[EditBudget] = None) -> None:
        if dry_run:
            enable_dry_run()
        self.site = site
        self.repo = repo if repo is not None else site.data_repository()
        self.batch_id = batch_id
        self.ancestors_of = ancestors_of
        self.tags = tuple(tags)
        self.dry_run = dry_run
        self.version = version
        self.max_hops = max_hops
        self.safety = safety
        self.fresh_s = fresh_s
        self.monotonic = monotonic
        self.check_stop = stop
        self.budget = budget if budget is not None else EditBudget(monotonic=monotonic)
        self.items = items
        # What the last write_group's edit left to clean up (twin statements it created).
        self.sent = Sent()
        # Where each request is noted before it leaves (the loop's queue; none on its own).
        self.journal: Journal = NO_JOURNAL

    def write_group(self, edits: Sequence[ApprovedEdit],
                    still_ours: Optional[Callable[[int], bool]] = None) -> List[PairResult]:
        """Re-read the file, then add every pair's ``P180 = qid`` the rules allow, in one edit.

        :param edits: approved pairs of one file (:meth:`groups` splits a file's pairs into
            groups whose summary fits).
        :param still_ours: asked with a pair's candidate id after the re-read and again right
            before the edit request leaves: whether this writer still holds the pair, approved
            (``Store.confirm_claim``). A pair it says no for is ``Lost`` and left out.
        :return: (pair, outcome) for every pair, in the order given.
        :raises WriteRefused: dry run requested but simulate is off.
        :raises WriteStopped: the account cannot edit at all (blocked, logged out, ...).
        """
        if len({e.page_id for e in edits}) > 1:
            raise ValueError("a group is the pairs of one file")
        done: Dict[int, Union[Outcome, Lost]] = {}
        self.sent = Sent()
        slot_retried = False
        # One try more than CONFLICT_TRIES, for the single retry after a slot that exists now.
        for attempt in range(1, CONFLICT_TRIES + 2):
            todo = [e for e in edits if e.candidate_id not in done]
            if not todo:
                break
            try:
                self._attempt(todo, still_ours, done)
                break
            except (WriteRefused, WriteStopped, WritingPaused):
                raise
            except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
                found = classify(exc)
                if found is not None and found.code == "editconflict" and attempt < CONFLICT_TRIES:
                    continue  # someone edited the file since the re-read: read it again
                if found is not None and found.slot_exists and not slot_retried:
                    # The file got structured data since the re-read, which found none:
                    # nothing was saved. Read it again and try once more against that revision
                    # (an item someone added meanwhile is then present: skipped, not doubled).
                    slot_retried = True
                    continue
                for edit in todo:
                    if edit.candidate_id not in done:
                        done[edit.candidate_id] = failure_for(exc, edit.attempts)
                break
        return [(e, done[e.candidate_id]) for e in edits]

    def write(self, edit: ApprovedEdit, still_ours: Optional[Callable[[], bool]] = None) -> Outcome:
        """One pair as a group of one (:meth:`write_group`).

        :raises LeaseLost: ``still_ours`` said no: nothing was written.
        """
        ask = (lambda _candidate_id: still_ours()) if still_ours is not None else None
        ((_, outcome),) = self.write_group([edit], ask)
        if isinstance(outcome, Lost):
            raise LeaseLost(outcome.reason)
        return outcome

    def groups(self, edits: Sequence[ApprovedEdit]) -> List[List[ApprovedEdit]]:
        """``edits`` split into one group per edit: per file (in the order of each file's
        first pair), and within a file as many pairs as one summary can name in full."""
        by_file: Dict[int, List[ApprovedEdit]] = {}
        for edit in edits:
            by_file.setdefault(edit.page_id, []).append(edit)
        out: List[List[ApprovedEdit]] = []
        for pairs in by_file.values():
            group: List[ApprovedEdit] = []
            for edit in pairs:
                if group and not summary_fits(*self._summary_parts([*group, edit])):
                    out.append(group)
                    group = []
                group.append(edit)
            out.append(group)
        return out

    @property
    def simulates(self) -> bool:
        """Whether writes are simulated: a dry run was asked for, or pywikibot's ``simulate``
        is on anyway (e.g. in the operator's user-config.py)."""
        from pywikibot import config

        return self.dry_run or bool(config.simulate)

    def summary(self, edits: Sequence[ApprovedEdit]) -> str:
        """The edit summary for adding ``edits`` (pairs of one file) in this batch."""
        return group_summary(*self._summary_parts(edits))

    def _summary_parts(self, edits: Sequence[ApprovedEdit]) -> Tuple[Any, ...]:
        items = [SummaryItem(e.qid, e.label, e.prominent) for e in edits]
        return items, [e.reviewer for e in edits], self.version, self.batch_id

    # -- steps ---------------------------------------------------------------------------

    def _attempt(self, todo: List[ApprovedEdit], still_ours: Optional[Callable[[int], bool]],
                 done: Dict[int, Union[Outcome, Lost]]) -> None:
        """One try at the group: re-read, check, plan, write; outcomes go into ``done``."""
        self._login()
        now = self._read(todo[0].page_id)
        # Before anything is decided from the re-read (a skip or a recovered write is recorded
        # too): a pair another writer took over is that writer's to handle.
        todo = self._still_ours(todo, still_ours, done)
        history = History(self.site, todo[0].page_id) if todo else None
        to_write = []
        for edit in todo:
            plan = plan_edit(now.media, edit.qid, self.ancestors_of, exists=now.exists,
                             max_hops=self.max_hops)
            if not plan.write:
                recovered = self._recover(edit, now, history) if now.media is not None else None
                done[edit.candidate_id] = recovered or Skipped(str(plan.reason))
                continue
            # After the re-read: a statement an earlier attempt wrote before a rule change is
            # recovered above (the audit trail and `revert` must know it), not refused.
            refusal = self._refusal(edit, now)
            if refusal:
                done[edit.candidate_id] = Skipped(refusal)
                continue
            to_write.append(edit)
        if not self.simulates:
            # A hold ends the approval (write_failed, for a human); a dry run never uses one
            # up, so it simulates the pair and a real run holds it.
            to_write = hold_moved_items(self.items, to_write, done)
        if to_write:
            self._add(to_write, now, still_ours, done)

    def _still_ours(self, edits: List[ApprovedEdit], still_ours: Optional[Callable[[int], bool]],
                    done: Dict[int, Union[Outcome, Lost]]) -> List[ApprovedEdit]:
        """The pairs this writer still holds; the others are marked ``Lost``."""
        kept = []
        for edit in edits:
            if still_ours is None or still_ours(edit.candidate_id):
                kept.append(edit)
            else:
                done[edit.candidate_id] = Lost(
                    f"{edit.mid} {edit.qid}: no longer approved and held by this writer")
        return kept

    def _refusal(self, edit: ApprovedEdit, now: _Now) -> str:
        """Why the current safety rules refuse the pair ("" when they allow it): the item
        may have been approved before the rules changed. The evidence is what the candidate
        row stored when it was suggested (a category, link or identifier that ties the file
        to a person allows it, as then; a pair without evidence never unlocks one)."""
        if self.safety is None:
            return ""
        # Unreadable stored sources are left out (shown_evidence): the safe side.
        verdict = self.safety(edit.qid, shown_evidence({"sources": list(edit.evidence)}).sources)
        return f"{WITHHELD}: {verdict.reason}" if verdict.withheld else ""

    def _login(self) -> None:
        if not self.site.logged_in():
            self.site.login()

    def _read(self, page_id: int) -> _Now:
        import pywikibot

        # By page id, not title: a file renamed since it was queued is still the same page.
        pages = list(self.site.load_pages_from_pageids([page_id]))
        if not pages or not pages[0].exists():
            return _Now(exists=False)
        page = pywikibot.FilePage(pages[0])
        mediainfo = page.data_item()
        # force: reload the latest revision, so baserevid is fresh and a statement added by a
        # crashed earlier attempt is seen.
        mediainfo.get(force=True)
        statements = [c.toJSON() for c in mediainfo.statements.get(DEPICTS, [])]
        media = MediaFile(
            page_id=page_id, title=page.title(),
            depicts=depicts_of({"statements": {DEPICTS: statements}}),
            revid=int(mediainfo.latest_revision_id or 0),
            # pywikibot maps the edit protection level to the right that passes it.
            protected=not page.has_permission("edit"),
            # FilePage's check: the entity's own botMayEdit() always says yes.
            bots_allowed=page.botMayEdit(),
        )
        return _Now(exists=True, media=media, mediainfo=mediainfo)

    def _add(self, edits: List[ApprovedEdit], now: _Now, still_ours: Optional[Callable[[int], bool]],
             done: Dict[int, Union[Outcome, Lost]]) -> None:
        mediainfo = now.mediainfo
        # The same GUIDs at every attempt (edit_group.statement_guid): a retry never adds a
        # second statement when the first edit is applied late.
        claims = {e.candidate_id: new_statement(self.repo, mediainfo.getID(), e.qid, e.prominent,
                                                statement_guid(mediainfo.getID(), e.qid, e.candidate_id,
                                                               e.written_before))
                  for e in edits}
        self.sent = send_group(self, edits, mediainfo, claims,
                               lambda left: self._still_ours(left, still_ours, done), done,  # type: ignore[arg-type]
                               lambda: guard_simulate(self.dry_run))

    def _recover(self, edit: ApprovedEdit, now: _Now, history: Optional[History]) -> Optional[Written]:
        """This bot's own earlier write of ``edit.qid`` whose answer was lost, or None
        (``edit_group.History``: one small request per group, two more only when such a
        revision exists)."""
        present = {
            c.snak: c.getRank() for c in now.mediainfo.statements.get(DEPICTS, [])
            if getattr(c.getTarget(), "id", None) == edit.qid
        }
        found = history.recover(edit.qid, set(present)) if present and history is not None else None
        # The rank it has now: a later decision asking for another one is owed a follow-up.
        return replace(found, rank=present[found.statement_id]) if found is not None else None


def hierarchy_lookup(label_set: Any, items: Any = None, max_hops: int = MAX_HOPS) -> AncestorLookup:
    """``ancestors_of`` for the writer: the label set's hierarchy, Wikidata for the rest.

    :param label_set: anything with ``ancestors(qid, max_hops)`` and ``qid in label_set``
        (``wikivel_bot.labels.LabelSet``); None to use Wikidata only.
    :param items: a ``wikidata.client.WikidataClient`` for items outside the label set (their
        P31/P279 are walked up to ``max_hops``); None to treat them as having no ancestors.
    """

    def ancestors_of(qid: str) -> Mapping[str, int]:
        if label_set is not None and qid in label_set:
            return label_set.ancestors(qid, max_hops=max_hops)
        if items is None:
            return {}
        found: Dict[str, int] = {}
        frontier = [qid]
        for hops in range(1, max_hops + 1):
            infos = items.get(frontier)
            parents = [p for info in infos.values()
                       for p in (*info.instance_of, *info.subclass_of) if p not in found and p != qid]
            for parent in parents:
                found.setdefault(parent, hops)
            frontier = list(dict.fromkeys(parents))
            if not frontier:
                break
        return found

    return ancestors_of


def safety_check(safety: Any, label_set: Any, items: Any = None) -> ItemCheck:
    """The writer's re-check of an approved pair against the current safety rules.

    :param safety: ``Settings.safety`` (the rules as configured now, not when the pair was
        suggested).
    :param label_set: the items it keeps are checked against it (its whole P31/P279 graph).
    :param items: a ``wikidata.client.WikidataClient`` (``get``) for the other items, walked
        up to the top of the graph (``core.item_view``); None lets them pass.
    """
    return item_check(rules_from(safety), label_set, fetched_items(items.get) if items is not None else None)
