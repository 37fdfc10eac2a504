"""The self-check of ``wikivel-bot evaluate-live``: the linker on files humans already tagged.

Files come from the upload log (``--since``/``--until``, like the poller reads it) or from
pywikibot generator arguments (``-cat:…``). Each file is fetched like the fetch stage does
(:func:`wikivel_bot.commons.fetcher.fetch_media_by_ids`); files without a human depicts
statement are passed over. The linker gets a copy of the file **without** its depicts
statements (``dataclasses.replace(media, depicts=())``): otherwise the ranking rules would
drop exactly the items we want to compare with. The suggestions are then compared with the
human items (:func:`wikivel_bot.liveeval.compare.compare`) and each result is handed to a
sink as soon as its batch is linked, so an interrupted run keeps what it did.

Nothing is queued and nothing is written to the wiki.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from wikivel_bot import __version__
from wikivel_bot.config import Settings
from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.liveeval.compare import compare, human_items
from wikivel_bot.liveeval.records import FileResult, RunInfo
from wikivel_bot.types import MediaFile, Upload

Sink = Callable[[FileResult], None]


@dataclass
class LiveCounts:
    """What happened to the files looked at.

    :param seen: uploads read from the log or the generator.
    :param ineligible: ``{reason kind: files}`` the poll rules refuse (mime type, size...).
    :param outside: files uploaded after ``--until`` (the run stops at the first one).
    :param unavailable: ``{reason kind: files}`` deleted, not an image, no thumbnail...
    :param without_depicts: files with no human depicts statement (nothing to compare).
    :param link_failed: ``{reason: files}`` the linker could not read.
    :param evaluated: files compared and saved.
    """

    seen: int = 0
    ineligible: Dict[str, int] = field(default_factory=dict)
    unavailable: Dict[str, int] = field(default_factory=dict)
    without_depicts: int = 0
    link_failed: Dict[str, int] = field(default_factory=dict)
    evaluated: int = 0

    def lines(self) -> List[str]:
        """One line per count, for the terminal."""
        def listed(counts: Dict[str, int]) -> str:
            return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "none"

        return [
            f"files looked at: {self.seen}",
            f"refused by the poll rules: {sum(self.ineligible.values())} ({listed(self.ineligible)})",
            f"unavailable: {sum(self.unavailable.values())} ({listed(self.unavailable)})",
            f"without human depicts statements: {self.without_depicts}",
            f"linker could not read: {sum(self.link_failed.values())} ({listed(self.link_failed)})",
            f"compared with human depicts: {self.evaluated}",
        ]


def select_uploads(site: Any, settings: Settings, *, generator_args: Sequence[str] = (),
                   since: Optional[datetime] = None, until: Optional[datetime] = None
                   ) -> Iterator[Tuple[Upload, Optional[str]]]:
    """The files to look at, oldest first for the upload log: (upload, refusal or None).

    From the upload log, the poller's rules apply (mime types, size, opted-out uploaders and
    categories) except "already depicts ≥ N", which would refuse exactly the files wanted
    here; files named by generator arguments are taken as given.

    :param generator_args: pywikibot generator arguments; empty = the upload log.
    :param since: first upload time (naive UTC); None = the newest ``poll.batch_size``
        uploads (upload log) or no bound (generators).
    :param until: stop at uploads at or after this time (naive UTC).
    """
    if generator_args:
        from wikivel_bot.commons.generators import file_pages, uploads_of

        for upload in uploads_of(site, file_pages(site, generator_args), settings.fetch.batch_size):
            moment = _naive(upload.timestamp)
            if (since is None or moment >= since) and (until is None or moment < until):
                yield upload, None
        return
    from wikivel_bot.commons.poller import UploadPoller
    from wikivel_bot.types import Cursor

    rules = dataclasses.replace(settings.poll, max_existing_depicts=0, include_overwrites=False)
    poller = UploadPoller(site, rules, file_batch=settings.fetch.batch_size)
    start = Cursor(since.replace(tzinfo=timezone.utc), 0) if since is not None else None
    for batch in poller.batches(start):
        for upload in batch.uploads:
            if until is not None and _naive(upload.timestamp) >= until:
                return
            yield upload, batch.ineligible.get(upload.page_id)


def run_info(settings: Settings, linker: Any, label_set: Any, selection: str, top_k: int) -> RunInfo:
    """The provenance of a run from the settings and the built linker."""
    description = linker.description
    site = settings.site.api_url or settings.site.name
    weights = "random" if description.random_weights else (description.weights or description.pretrained
                                                            or settings.linker.weights or settings.linker.pretrained)
    return RunInfo(
        site=site,
        started=format_timestamp(),
        selection=selection,
        linker=description.name,
        linker_version=description.version,
        model=description.model,
        weights=weights,
        random_weights=bool(description.random_weights),
        checkpoint=description.checkpoint,
        labelset_hash=label_set.content_hash,
        labelset_items=len(label_set.qids),
        top_k=top_k,
        tool_version=__version__,
    )


def evaluate_live(
    site: Any,
    ready: Any,
    uploads: Iterable[Tuple[Upload, Optional[str]]],
    sink: Sink,
    *,
    settings: Settings,
    run: RunInfo,
    limit: Optional[int] = None,
    thumbnails: Any = None,
    progress: Optional[Callable[[LiveCounts], None]] = None,
) -> LiveCounts:
    """Link files that carry human depicts statements, with the statements hidden, and
    hand each comparison to ``sink``.

    :param site: a pywikibot site (``wikivel_bot.commons.site.open_site``).
    :param ready: the linker with its label set attached, and its rules with ``top_k =
        run.top_k`` (``linker.factory.build_ready_linker``: what the daemon links with).
    :param uploads: from :func:`select_uploads`.
    :param sink: called with every :class:`FileResult`, in upload order.
    :param settings: fetch and site settings.
    :param run: the provenance stored with every result.
    :param limit: stop after this many files compared.
    :param thumbnails: a ``ThumbnailClient`` (default: one from ``settings.fetch``, closed here).
    :param progress: called after every batch with the counts so far.
    """
    from wikivel_bot.commons.thumbnails import ThumbnailClient

    client = thumbnails or ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    counts = LiveCounts()
    context = _Context(site, ready, settings, run, client, sink, counts)
    pending: List[Upload] = []
    try:
        for upload, refusal in uploads:
            counts.seen += 1
            if refusal:
                _count(counts.ineligible, refusal)
                continue
            pending.append(upload)
            if len(pending) >= max(1, settings.fetch.batch_size):
                context.handle(pending, limit)
                pending = []
                if progress:
                    progress(counts)
            if limit is not None and counts.evaluated >= limit:
                break
        if pending and (limit is None or counts.evaluated < limit):
            context.handle(pending, limit)
            if progress:
                progress(counts)
    finally:
        if thumbnails is None:
            client.close()
    return counts


@dataclass
class _Context:
    site: Any
    ready: Any  # linker.factory.ReadyLinker: links as the daemon does, evidence included
    settings: Settings
    run: RunInfo
    client: Any
    sink: Sink
    counts: LiveCounts

    def handle(self, uploads: Sequence[Upload], limit: Optional[int]) -> None:
        from wikivel_bot.commons.fetcher import fetch_media_by_ids
        from wikivel_bot.errors import FileUnavailable, WikiError

        settings = self.settings
        found = fetch_media_by_ids(self.site, [u.page_id for u in uploads], thumb_width=settings.fetch.thumb_width,
                                   languages=settings.site.languages, batch_size=settings.fetch.batch_size)
        ready: List[Tuple[Upload, MediaFile, bytes]] = []
        for upload in uploads:
            if limit is not None and self.counts.evaluated + len(ready) >= limit:
                break
            media = found.get(upload.page_id, "deleted: not found")
            if isinstance(media, str):
                _count(self.counts.unavailable, media)
                continue
            if not human_items(media):
                self.counts.without_depicts += 1
                continue
            try:
                data = self.client.get(media.thumb_url)
            except (FileUnavailable, WikiError) as exc:
                _count(self.counts.unavailable, f"thumbnail: {exc}")
                continue
            ready.append((upload, media, data))
        if ready:
            self._link(ready)

    def _link(self, ready: Sequence[Tuple[Upload, MediaFile, bytes]]) -> None:
        from wikivel_bot.core.ranking import describe_item
        from wikivel_bot.core.review_rules import file_page_url
        from wikivel_bot.evaluation.scoring import memoize
        from wikivel_bot.linker.link import Linked

        label_set = self.ready.linker.label_set
        ancestors_of = memoize(lambda qid: label_set.ancestors(qid, 3))
        category = getattr(label_set, "super_category", None)
        # The linker must not see the human statements: the ranking would drop them.
        hidden = [(dataclasses.replace(media, depicts=()), data) for _, media, data in ready]
        outcomes = self.ready.link(hidden)
        for (upload, media, _), outcome in zip(ready, outcomes):
            if not isinstance(outcome, Linked):
                _count(self.counts.link_failed, outcome.reason)
                continue
            result = compare(
                media.mid,
                [(c.qid, c.score) for c in outcome.candidates],
                human_items(media),
                ancestors_of,
                media=media,
                category_of=(lambda qid: category(qid) or "") if category else None,
                label_of=lambda qid: describe_item(label_set, qid)[0],
                known=lambda qid: label_set.index_of(qid) is not None,
                run=self.run,
                probabilities={c.qid: c.probability for c in outcome.candidates},
                evidence={c.qid: c.evidence for c in outcome.candidates},
                title=media.title,
                uploaded=format_timestamp(upload.timestamp),
                page_url=file_page_url(media.title, self.settings.site.api_url, self.settings.site.name),
                thumb_url=media.thumb_url,
            )
            # What the safety rules withheld for this file goes into the report's counts.
            result = dataclasses.replace(result, withheld=outcome.ranking.withheld_by_rule())
            self.counts.evaluated += 1
            self.sink(result)


def _count(counts: Dict[str, int], reason: str) -> None:
    kind = reason.split(":", 1)[0].strip() or reason
    counts[kind] = counts.get(kind, 0) + 1


def _naive(moment: datetime) -> datetime:
    if moment.tzinfo is not None:
        return moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment
