"""The writer: adds human-approved depicts (P180) statements to Commons files.

One approved (file, item) pair at a time, :class:`StatementWriter` does::

    re-read      the file page (exists? edit-protected for us? {{bots}}/{{nobots}}) and its
                 MediaInfo entity (statements, fresh revision id for baserevid)
    plan         core.edit_rules.plan_edit: skip when present, a more specific item is
                 present, opted out, protected or deleted
    re-check     the current safety rules (``safety``): a pair approved before a rule
                 change whose item the rules now withhold is skipped with the rule's reason
                 (``withheld by the safety rules: ...``), recorded and audited like any skip
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

The loop over the queue (claim, write, record, count) is :mod:`wikivel_bot.commons.write_loop`.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from wikivel_bot import __version__
from wikivel_bot.commons.mediainfo import DEPICTS, depicts_of, parse_entity
from wikivel_bot.commons.write_outcomes import WriteStopped, failure_for
from wikivel_bot.core.edit_rules import MAX_HOPS, AncestorLookup, edit_summary, plan_edit
from wikivel_bot.core.item_view import fetched_items
from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.core.safety import ItemCheck, item_check, rules_from
from wikivel_bot.errors import LeaseLost, WikiError
from wikivel_bot.types import ApprovedEdit, DryRun, Failed, MediaFile, Skipped, Written

Outcome = Union[Written, Skipped, Failed, DryRun]

# Page revisions searched for this bot's own lost write (see _recover).
RECOVERY_DEPTH = 50
# The reason's first words when the current safety rules refuse an approved pair (the
# write counters group skips by them).
WITHHELD = "withheld by the safety rules"

__all__ = [
    "StatementWriter", "WriteRefused", "WriteStopped", "enable_dry_run", "guard_simulate", "hierarchy_lookup",
    "new_batch_id", "safety_check",
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
    :param safety: the current safety rules as one check (``core.safety.item_check`` with
        the label set and Wikidata for other items); None checks nothing.
    """

    def __init__(self, site: Any, batch_id: str, ancestors_of: AncestorLookup, *,
                 repo: Any = None, tags: Sequence[str] = (), dry_run: bool = False,
                 version: str = __version__, max_hops: int = MAX_HOPS,
                 safety: Optional[ItemCheck] = None) -> None:
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
            # After the re-read: a statement an earlier attempt wrote before a rule change is
            # recovered above (the audit trail and `revert` must know it), not refused.
            refusal = self._refusal(edit, now)
            if refusal:
                return Skipped(refusal)
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
            # pywikibot maps the edit protection level to the right that passes it.
            protected=not page.has_permission("edit"),
            # FilePage's check: the entity's own botMayEdit() always says yes.
            bots_allowed=page.botMayEdit(),
        )
        return _Now(exists=True, media=media, mediainfo=mediainfo)

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
