"""The writer: adds human-approved depicts (P180) statements to Commons files.

One approved (file, item) pair at a time, :class:`StatementWriter` does::

    re-read      the file page (exists? edit-protected for us? {{bots}}/{{nobots}}) and its
                 MediaInfo entity (statements, fresh revision id for baserevid)
    plan         core.edit_rules.plan_edit: skip when present, a more specific item is
                 present, opted out, protected or deleted
    write        MediaInfo.addClaim(P180 → item, preferred rank for "prominent") with
                 baserevid, bot=True, the summary (approver, version, batch) and change tags

and returns the outcome as a value: ``Written`` / ``Skipped`` / ``Failed`` / ``DryRun``
(errors mapped in :mod:`wikivel_bot.commons.write_outcomes`). maxlag (``write_maxlag``) and
the edit rate (``put_throttle``) are pywikibot's: every write request goes through its
throttle and carries its maxlag, so the operator's ``user-config.py`` governs both.

Dry-run is pywikibot's ``config.simulate``, which blocks every write action at the lowest
layer (``Request._simulate``). :func:`enable_dry_run` sets it; a dry-run writer also checks it
right before each write and refuses (:class:`WriteRefused`) if it was switched off, so no
caller can turn a dry run into real edits. The reverse holds too: whenever simulate is on,
the outcome is ``DryRun``, never a fake ``Written``.

Duplicates after a crash: the API may accept a statement and the process die before the
queue records it. The re-read before every write is the guard: on restart the item is
already present, so nothing is written again, and :meth:`StatementWriter._recover` looks in
the page history for this bot's own revision adding that item, to record the lost write as
``Written`` with its statement GUID (so the audit trail and ``revert`` still know it).

:func:`write_approved` is the loop over the queue (claim, write, record, count).
"""

from __future__ import annotations

import re
import secrets
import threading
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Union

from wikivel_bot import __version__
from wikivel_bot.commons.mediainfo import DEPICTS, depicts_of, parse_entity
from wikivel_bot.commons.write_outcomes import WriteStopped, failure_for
from wikivel_bot.core.edit_rules import MAX_HOPS, AncestorLookup, edit_summary, plan_edit
from wikivel_bot.events import event
from wikivel_bot.errors import LeaseLost, WikiError
from wikivel_bot.types import ApprovedEdit, CandidateState, DryRun, Failed, MediaFile, Skipped, Written

Outcome = Union[Written, Skipped, Failed, DryRun]

# Page revisions searched for this bot's own lost write (see _recover).
RECOVERY_DEPTH = 50
# Edit protection level -> the right that lets an account edit anyway (MediaWiki's aliases).
PROTECTION_RIGHTS = {"sysop": "editprotected", "autoconfirmed": "editsemiprotected"}

__all__ = [
    "LeaseLost", "StatementWriter", "WriteCounters", "WriteRefused", "WriteStopped",
    "enable_dry_run", "guard_simulate", "hierarchy_lookup", "new_batch_id", "write_approved",
]

# "(wikivel-bot 0.1.0, batch b-20240502090000-fa17)" at the end of every summary.
_BATCH_IN_SUMMARY = re.compile(r"\bbatch (b-\d{14}-[0-9a-f]{4})\b")


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
    """Writes one approved pair at a time; see the module docstring.

    :param site: the Commons ``DataSite`` (``commons.site.open_site``), logged in or able to.
    :param batch_id: named in every summary (:func:`new_batch_id`).
    :param ancestors_of: {ancestor: hops} of an item (for "a more specific item is present").
    :param repo: the Wikibase repository of the items; default: ``site``'s repository.
    :param tags: change tags for every edit (must be active on the wiki).
    :param dry_run: simulate every write (switches pywikibot's ``simulate`` on).
    :param version: the tool version named in summaries.
    :param max_hops: how far below the approved item a present item counts as more specific.
    """

    def __init__(self, site: Any, batch_id: str, ancestors_of: AncestorLookup, *,
                 repo: Any = None, tags: Sequence[str] = (), dry_run: bool = False,
                 version: str = __version__, max_hops: int = MAX_HOPS) -> None:
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

    def write(self, edit: ApprovedEdit, still_ours: Optional[Callable[[], bool]] = None) -> Outcome:
        """Re-read the file, then add ``P180 = edit.qid`` unless the rules say skip.

        :param edit: the approved pair (``attempts`` makes retry delays grow).
        :param still_ours: asked right before the edit request (after the re-read): whether
            this writer still holds the pair (``Store.confirm_claim``). False stops the edit.
        :raises WriteRefused: dry run requested but simulate is off.
        :raises WriteStopped: the account cannot edit at all (blocked, logged out, ...).
        :raises LeaseLost: ``still_ours`` said no: nothing was written.
        """
        try:
            self._login()
            now = self._read(edit)
            # Before anything is decided from the re-read (a skip or a recovered write is
            # recorded too): a pair another writer took over is that writer's to handle.
            if still_ours is not None and not still_ours():
                raise LeaseLost(f"{edit.mid} {edit.qid}: another writer holds it now")
            plan = plan_edit(now.media, edit.qid, self.ancestors_of, exists=now.exists,
                             max_hops=self.max_hops)
            if not plan.write:
                if now.media is not None and edit.qid in {d.qid for d in now.media.depicts}:
                    recovered = self._recover(edit, now)
                    if recovered is not None:
                        return recovered
                return Skipped(str(plan.reason))
            if still_ours is not None and not still_ours():
                raise LeaseLost(f"{edit.mid} {edit.qid}: another writer holds it now")
            return self._add(edit, now)
        except (WriteRefused, WriteStopped, LeaseLost):
            raise
        except Exception as exc:  # noqa: BLE001 - failure_for re-raises what is not a wiki error
            return failure_for(exc, edit.attempts)

    @property
    def simulates(self) -> bool:
        """Whether writes are simulated: a dry run was asked for, or pywikibot's ``simulate``
        is on anyway (e.g. in the operator's user-config.py)."""
        from pywikibot import config

        return self.dry_run or bool(config.simulate)

    def summary(self, edit: ApprovedEdit) -> str:
        """The edit summary for ``edit`` in this batch."""
        return edit_summary(edit.qid, edit.reviewer, self.version, self.batch_id, edit.prominent)

    # -- steps ---------------------------------------------------------------------------

    def _login(self) -> None:
        if not self.site.logged_in():
            self.site.login()

    def _read(self, edit: ApprovedEdit) -> _Now:
        import pywikibot

        # By page id, not title: a file renamed since it was queued is still the same page.
        pages = list(self.site.load_pages_from_pageids([edit.page_id]))
        if not pages or not pages[0].exists():
            return _Now(exists=False)
        page = pywikibot.FilePage(pages[0])
        mediainfo = page.data_item()
        # force: reload the latest revision, so baserevid is fresh and a statement added by a
        # crashed earlier attempt is seen.
        mediainfo.get(force=True)
        statements = [c.toJSON() for c in mediainfo.statements.get(DEPICTS, [])]
        media = MediaFile(
            page_id=edit.page_id, title=page.title(),
            depicts=depicts_of({"statements": {DEPICTS: statements}}),
            revid=int(mediainfo.latest_revision_id or 0),
            protected=self._protected(page),
            # FilePage's check: the entity's own botMayEdit() always says yes.
            bots_allowed=page.botMayEdit(),
        )
        return _Now(exists=True, media=media, mediainfo=mediainfo)

    def _protected(self, page: Any) -> bool:
        level = (page.protection().get("edit") or (None,))[0]
        if not level:
            return False
        return not self.site.has_right(PROTECTION_RIGHTS.get(level, level))

    def _add(self, edit: ApprovedEdit, now: _Now) -> Outcome:
        import pywikibot

        claim = pywikibot.Claim(self.repo, DEPICTS, datatype="wikibase-item")
        claim.setTarget(pywikibot.ItemPage(self.repo, edit.qid))
        if edit.prominent:
            claim.setRank("preferred")  # "prominent" in the Commons UI
        summary = self.summary(edit)
        # Checked as late as possible: nothing between here and the request can flip it.
        simulate = guard_simulate(self.dry_run)
        now.mediainfo.addClaim(claim, bot=True, summary=summary,
                               tags="|".join(self.tags) or None)
        if simulate:
            return DryRun(summary)
        return Written(revid=int(now.mediainfo.latest_revision_id), statement_id=str(claim.snak))

    def _recover(self, edit: ApprovedEdit, now: _Now) -> Optional[Written]:
        """This bot's own earlier write of ``edit.qid`` whose answer was lost, or None.

        Looks for a recent revision by this account whose summary adds the item, takes the
        P180 statement it added (its content minus its parent's) and returns it as
        ``Written`` if that exact statement is still there with the same item. Costs one
        small request, two more only when such a revision exists.
        """
        user = self.site.username()
        if not user:
            return None
        present = {
            c.snak for c in now.mediainfo.statements.get(DEPICTS, [])
            if getattr(c.getTarget(), "id", None) == edit.qid
        }
        marker = f"[[d:{edit.qid}|{edit.qid}]]"
        ours = self._revisions(pageids=edit.page_id, rvuser=user, rvprop="ids|comment",
                               rvlimit=RECOVERY_DEPTH)
        for revision in ours:
            comment = revision.get("comment", "")
            if marker not in comment or "wikivel-bot" not in comment or not revision.get("parentid"):
                continue
            pair = {r["revid"]: r for r in self._revisions(
                revids=f"{revision['revid']}|{revision['parentid']}", rvprop="ids|content",
                rvslots="mediainfo")}
            added = _guids(pair.get(revision["revid"], {}), edit.qid) - _guids(
                pair.get(revision["parentid"], {}), edit.qid)
            for guid in sorted(added & present):
                made_by = _BATCH_IN_SUMMARY.search(comment)
                return Written(revid=int(revision["revid"]), statement_id=guid,
                               batch_id=made_by.group(1) if made_by else "")
        return None

    def _revisions(self, **params: Any) -> List[Dict[str, Any]]:
        """``prop=revisions`` entries (formatversion 2) of the pages asked for, all pages."""
        data = self.site.simple_request(action="query", prop="revisions", formatversion=2,
                                        **params).submit()
        return [r for page in data.get("query", {}).get("pages", [])
                for r in page.get("revisions", [])]


def _guids(revision: Mapping[str, Any], qid: str) -> set:
    """GUIDs of the P180 statements naming ``qid`` in one revision's mediainfo slot."""
    slot = (revision.get("slots") or {}).get("mediainfo") or {}
    statements = parse_entity(slot.get("content") or slot.get("*")).get("statements")
    group = statements.get(DEPICTS) if isinstance(statements, dict) else None
    found = set()
    for statement in group if isinstance(group, list) else []:
        named = depicts_of({"statements": {DEPICTS: [statement]}})
        if named and named[0].qid == qid and isinstance(statement.get("id"), str):
            found.add(statement["id"])
    return found


def hierarchy_lookup(label_set: Any, items: Any = None, max_hops: int = MAX_HOPS) -> AncestorLookup:
    """``ancestors_of`` for the writer: the label set's hierarchy, Wikidata for the rest.

    :param label_set: anything with ``ancestors(qid, max_hops)`` and ``qid in label_set``
        (``wikivel_bot.labels.LabelSet``); None to use Wikidata only.
    :param items: a ``commons.items.ItemClient`` for items outside the label set (their
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


# -- the loop over the queue ---------------------------------------------------------------


class WriteQueue(Protocol):
    def claim_approved(self, limit: int, worker: str, *, dry_run: bool = False) -> List[ApprovedEdit]: ...

    def confirm_claim(self, candidate_id: int, worker: str) -> bool: ...

    def renew_claims(self, worker: str) -> int: ...

    def release_candidates(self, candidate_ids: Sequence[int], worker: str) -> int: ...

    def record_edit(self, candidate_id: int, batch_id: str, outcome: Outcome, started_at: object,
                    max_attempts: int = 5, worker: Optional[str] = None) -> CandidateState: ...


class LeaseKeeper:
    """Renews a worker's leases every ``interval_s`` seconds on a background thread while a
    batch is being written, so a batch that outlives its lease is never handed to a second
    writer. A context manager; the thread stops on exit.

    :param renew: called with no argument to renew (``lambda: store.renew_claims(worker)``).
    :param interval_s: a fraction of the lease (a third: two renewals may fail in a row).
    """

    def __init__(self, renew: Callable[[], Any], interval_s: float) -> None:
        self._renew = renew
        self._interval = max(0.05, interval_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._renew()
            except Exception as exc:  # noqa: BLE001 - the edit's own confirm is the last guard
                event("write", "lease-renewal-failed", error=" ".join(str(exc).split())[:200])


_QID = re.compile(r"\bQ\d+\b")


def reason_kind(reason: str) -> str:
    """A skip or failure reason without its item ids and details, for counting."""
    return _QID.sub("Q…", reason.split(":", 1)[0]).strip()


@dataclass
class WriteCounters:
    """What a write run did; ``lines()`` is printed at exit."""

    claimed: int = 0
    written: int = 0
    dry_run: int = 0
    lost: int = 0
    skipped: Counter = field(default_factory=Counter)
    retrying: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    batch_id: str = ""

    def add(self, outcome: Outcome, state: CandidateState) -> None:
        """Count one recorded outcome (``state``: the pair's state after recording)."""
        if isinstance(outcome, Written):
            self.written += 1
        elif isinstance(outcome, DryRun):
            self.dry_run += 1
        elif isinstance(outcome, Skipped):
            self.skipped[reason_kind(outcome.reason)] += 1
        elif state is CandidateState.APPROVED:
            self.retrying[reason_kind(outcome.reason)] += 1
        else:
            self.failed[reason_kind(outcome.reason)] += 1

    def lines(self) -> List[str]:
        out = [f"batch {self.batch_id}"] if self.batch_id else []
        out += [f"{self.claimed} approved pairs claimed", f"{self.written} written"]
        if self.dry_run:
            out.append(f"{self.dry_run} dry-run (would have been written; still approved for a "
                       "real write)")
        if self.lost:
            out.append(f"{self.lost} left to another writer (lease taken over; not written)")
        for name, counts in (("skipped", self.skipped), ("failed, will retry", self.retrying),
                             ("failed, left for a human", self.failed)):
            out.append(f"{sum(counts.values())} {name}")
            out += [f"    {n} {kind}" for kind, n in sorted(counts.items())]
        return out


def write_approved(store: WriteQueue, writer: StatementWriter, *, batch_size: int, worker: str,
                   max_attempts: int = 5, limit: Optional[int] = None,
                   clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                   counters: Optional[WriteCounters] = None,
                   lease_renewal_s: Optional[float] = None) -> WriteCounters:
    """Claim approved pairs ``batch_size`` at a time, write each, record each outcome.

    Returns when nothing is claimable (pairs waiting for a retry time are not), or after
    ``limit`` pairs. Each outcome is committed before the next write starts. While a batch is
    worked on, its leases are renewed (``lease_renewal_s``), and right before each edit the
    writer confirms it still holds the pair; whatever the run claimed and did not handle
    (an exception, Ctrl-C, a stop) is released on the way out, so no pair waits for a lease
    to expire. A dry-run writer claims only pairs not simulated since their approval.

    :param store: the queue (``claim_approved``, ``confirm_claim``, ``record_edit``, ...).
    :param writer: a :class:`StatementWriter` (its ``batch_id`` goes into the audit rows).
    :param worker: the lease holder's name.
    :param max_attempts: transient failures after which a pair is left for a human.
    :param counters: added to (and returned), for callers that loop.
    :param lease_renewal_s: seconds between lease renewals (a third of the lease); None
        renews only at each confirm.
    :raises WriteStopped, WriteRefused: the run must end (its unhandled claims are released).
    """
    counters = counters if counters is not None else WriteCounters()
    counters.batch_id = writer.batch_id
    done = 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        claimed = store.claim_approved(size, worker, dry_run=writer.simulates)
        if not claimed:
            break
        counters.claimed += len(claimed)
        pending = [edit.candidate_id for edit in claimed]
        keeper: Any = (LeaseKeeper(lambda: store.renew_claims(worker), lease_renewal_s)
                       if lease_renewal_s else nullcontext())
        try:
            with keeper:
                for edit in claimed:
                    done += _write_one(store, writer, edit, worker, max_attempts, clock, counters)
                    pending.remove(edit.candidate_id)
        finally:
            store.release_candidates(pending, worker)
    return counters


def _write_one(store: WriteQueue, writer: StatementWriter, edit: ApprovedEdit, worker: str,
               max_attempts: int, clock: Callable[[], datetime], counters: WriteCounters) -> int:
    """Write and record one claimed pair; 1 when an outcome was recorded, 0 when lost."""
    started = clock()
    try:
        outcome = writer.write(edit, still_ours=lambda: store.confirm_claim(edit.candidate_id, worker))
        state = store.record_edit(edit.candidate_id, writer.batch_id, outcome, started,
                                  max_attempts, worker=worker)
    except LeaseLost as exc:
        counters.lost += 1
        event("write", "lease-lost", file=edit.mid, item=edit.qid, batch=writer.batch_id,
              reason=str(exc))
        return 0
    counters.add(outcome, state)
    event("write", type(outcome).__name__.lower(), file=edit.mid, item=edit.qid,
          batch=getattr(outcome, "batch_id", "") or writer.batch_id, state=state.value,
          revid=getattr(outcome, "revid", None), reason=getattr(outcome, "reason", None))
    return 1
