"""The backfill's stages as plain functions over lists of rows (see ``rows``).

Each wraps the code the daemon runs for the same step, so a backfill and the daemon give a
file the same suggestions: the fetcher's query and eligibility rules
(``Fetcher.query``/``Fetcher.outcomes``, i.e. ``filters.refuse_fetched``), the thumbnail
client's download and checks, ``decode_image`` and ``link_files`` with the same ranking rules,
and the store's checked moves (``Store.settle_files``, a block per transaction). Nothing here knows about Ray: ``pipeline``
runs these functions as Ray tasks and actors, and the tests and the benchmark call them
directly too.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import AbstractSet, Any, Callable, Dict, List, Mapping, Optional, Sequence

from wikivel_bot.backfill.rows import (
    DEFERRED,
    INELIGIBLE,
    LINKED,
    PENDING,
    SKIPPED,
    UNAVAILABLE,
    BackfillCounters,
    candidates_from_text,
    candidates_to_text,
    media_from_text,
    media_to_text,
    rejected_from_text,
    settle,
    withheld_from_text,
)
from wikivel_bot.backfill.imagedump import SETTLED
from wikivel_bot.commons import filters
from wikivel_bot.commons.generators import upload_of
from wikivel_bot.commons.outcomes import Deferred, Ineligible, Unavailable
from wikivel_bot.core.titles import first_upper
from wikivel_bot.errors import FileUnavailable, WikiError
from wikivel_bot.events import event
from wikivel_bot.linker.backbone.images import decode_image
from wikivel_bot.queue.backfill import LinkerIdentity, claim_pages, lookup_pages
from wikivel_bot.types import FileState, MediaFile, Upload

Row = Dict[str, Any]
# Reason kinds of the rows a run passes over (the part before the colon is what the summary
# groups by, as for the daemon's filters).
NO_SUCH_FILE = "no such file"
NOT_A_TITLE = "not a title"
ALREADY_LINKED = "already linked"
ALREADY_DONE = "already settled"
CLAIMED = "claimed elsewhere"
DUPLICATE = "listed twice"
IN_DUMP = filters.HAS_DEPICTS
CHANGED = "changed elsewhere"


def normalise_title(text: str) -> str:
    """``File:Name.jpg`` from a line of a title list (underscores, missing prefix, ``#``
    comments and blank lines, which give ``""``)."""
    line = text.strip()
    if not line or line.startswith("#"):
        return ""
    line = line.replace("_", " ")
    if ":" in line and line.split(":", 1)[0].strip().lower() in ("file", "image"):
        line = line.split(":", 1)[1].strip()
    return "File:" + first_upper(line) if line else ""


def resolve(
    rows: List[Row], *, fetcher: Any, store: Any, worker: str, identity: LinkerIdentity,
    depicted: AbstractSet[int] = frozenset(),
) -> List[Row]:
    """read → filter: one API request per batch tells what each title is (the fetcher's
    query); new files are queued; what the queue already settled is skipped; the rest is
    claimed for ``worker`` and put through the daemon's eligibility rules.

    :param fetcher: a ``commons.fetcher.Fetcher`` *without* a thumbnail client (the next
        stage downloads each thumbnail once).
    :param identity: (linker, version, label-set hash): files this linker already linked
        with this label set are skipped; files linked by another are linked again.
    :param depicted: page ids that already have P180 (from the MediaInfo dump): skipped.
    """
    pending: List[Row] = []
    for row in rows:
        given, row["title"] = row["title"], normalise_title(row["title"])
        if given.startswith(SETTLED):  # a dump row that is not an image, or damaged
            row["title"] = ""
            settle(row, SKIPPED, given[len(SETTLED):])
        elif row["title"]:
            pending.append(row)
        else:
            settle(row, SKIPPED, f"{NOT_A_TITLE}: {given.strip()[:80]!r}")
    if not pending:  # e.g. a block of dump rows that are not images: no API, no queue
        return rows
    try:
        entries = {entry.key: entry for entry in fetcher.query([r["title"] for r in pending])}
    except WikiError as exc:
        for row in pending:
            settle(row, DEFERRED, f"the wiki failed: {exc}")
        return rows
    uploads: Dict[int, Upload] = {}
    found: List[Row] = []
    for row in pending:
        entry = entries.get(row["title"])
        upload = upload_of(entry) if entry is not None else None
        if upload is None:
            settle(row, SKIPPED, f"{NO_SUCH_FILE}: {row['title']}")
        elif upload.page_id in depicted:
            settle(row, SKIPPED, f"{IN_DUMP}: P180 in the MediaInfo dump")
        else:
            row["page_id"] = upload.page_id
            uploads[upload.page_id] = upload
            found.append(row)
    store.enqueue(list(uploads.values()))
    known = lookup_pages(store, list(uploads))
    wanted: Dict[int, Row] = {}
    for row in found:
        page = known[row["page_id"]]
        row["file_id"], row["state"] = page.file_id, page.state.value
        if page.file_id in wanted:
            settle(row, SKIPPED, f"{DUPLICATE}: {page.title}")
        elif page.state is FileState.LINKED and (not page.linkers or identity in page.linkers):
            settle(row, SKIPPED, f"{ALREADY_LINKED}: by this linker and label set")
        elif page.state in (FileState.INELIGIBLE, FileState.UNAVAILABLE):
            settle(row, SKIPPED, f"{ALREADY_DONE}: {page.state.value} ({page.reason})")
        else:
            row["rejected"] = json.dumps(sorted(page.rejected))
            wanted[page.file_id] = row
    claimed = set(claim_pages(store, list(wanted), worker))
    mine = [row for fid, row in wanted.items() if fid in claimed]
    for fid, row in wanted.items():
        if fid not in claimed:
            settle(row, SKIPPED, f"{CLAIMED}: another worker holds it")
    outcomes = fetcher.outcomes([entries[row["title"]] for row in mine])
    for row in mine:
        outcome = outcomes.get(row["title"], Deferred("the fetcher gave no answer"))
        if isinstance(outcome, MediaFile):
            row["media"] = media_to_text(outcome)
        elif isinstance(outcome, Unavailable):
            settle(row, UNAVAILABLE, outcome.reason)
        elif isinstance(outcome, Ineligible):
            settle(row, INELIGIBLE, outcome.reason)
        else:
            settle(row, DEFERRED, outcome.reason)
    return rows


def download(rows: List[Row], get: Callable[[str], bytes], parallel: int = 1) -> List[Row]:
    """Fetch each pending row's thumbnail with ``get`` (the thumbnail client under the
    cluster's download budget), ``parallel`` at a time. A file that is the problem (404,
    corrupt, a bomb) is unavailable with its reason; a server that kept failing defers the
    file to the next run."""
    from concurrent.futures import ThreadPoolExecutor

    def one(row: Row) -> None:
        url = media_from_text(row["media"]).thumb_url
        if not url:
            settle(row, UNAVAILABLE, filters.reason(filters.NO_THUMBNAIL, "the fetcher found no thumbnail URL"))
            return
        try:
            row["data"] = get(url)
        except FileUnavailable as exc:
            settle(row, UNAVAILABLE, str(exc))
        except WikiError as exc:
            settle(row, DEFERRED, str(exc))

    pending = [row for row in rows if row["outcome"] == PENDING]
    if parallel <= 1 or len(pending) <= 1:
        for row in pending:
            one(row)
    else:
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="backfill-thumb") as pool:
            list(pool.map(one, pending))
    return rows


def decode(rows: List[Row], side: Optional[int], geometry: Optional[Callable[[Any], Any]] = None) -> List[Row]:
    """Decode each pending thumbnail exactly as ``link_files`` would (``decode_image`` at
    the model's side), then run the costly part of the model's preprocessing, ``geometry``
    (resize, crop: ``link.model_input_steps``), so the model's actors only normalise and
    encode. ``pixels`` then holds the model-sized RGB bytes (uint8, a quarter of the float
    tensor's size on its way through Ray's object store); without ``geometry``, the decoded image."""
    for row in rows:
        if row["outcome"] != PENDING:
            continue
        try:
            image = decode_image(row["data"], min_side=side)
        except FileUnavailable as exc:
            kind = filters.BOMB if str(exc).startswith("image too large") else filters.CORRUPT
            settle(row, UNAVAILABLE, filters.reason(kind, str(exc)))
            continue
        if geometry is not None:
            image = geometry(image)
        row["width"], row["height"] = image.size
        row["pixels"], row["data"] = image.tobytes(), b""
    return rows


def link(rows: List[Row], ready: Any, finish: Optional[Callable[[Any], Any]] = None) -> List[Row]:
    """evidence → encode → search → rank: the ready linker's ``link`` (``link_files`` after
    resolving the files' own evidence, as the daemon links) on the decoded images, rejected
    pairs left out.

    :param ready: a ``linker.factory.ReadyLinker``.
    :param finish: the rest of the model's preprocessing when ``decode`` ran its
        ``geometry`` (the same ``link.model_input_steps``); None: the linker's own."""
    from PIL import Image

    from wikivel_bot.pipeline import withheld_record

    pending = [row for row in rows if row["outcome"] == PENDING]
    if not pending:
        return rows
    pairs = []
    rejected: Dict[int, AbstractSet[str]] = {}
    for row in pending:
        media = media_from_text(row["media"])
        image = Image.frombytes("RGB", (int(row["width"]), int(row["height"])), row["pixels"])
        pairs.append((media, image))
        rejected[media.page_id] = frozenset(rejected_from_text(row["rejected"]))
    for row, outcome in zip(pending, ready.link(pairs, rejected, finish=finish)):
        found = getattr(outcome, "candidates", None)
        if found is None:
            settle(row, UNAVAILABLE, filters.reason(filters.CORRUPT, str(getattr(outcome, "reason", ""))))
        else:
            row["candidates"] = candidates_to_text(found)
            # Recorded with the file as the daemon's link stage records it.
            row["withheld"] = json.dumps(withheld_record(outcome))
            settle(row, LINKED)
    return rows


def record(rows: Sequence[Row], store: Any, counters: BackfillCounters) -> List[Row]:
    """Write a block of settled rows to the queue in one transaction (``Store.settle_files``,
    the same checked moves as the daemon's ``mark_*``/``save_candidates``): candidates of
    linked files (a pair is inserted once; a rejected pair is never touched), the reason of
    unavailable/ineligible ones, deferred files released. A kill loses at most the block
    being written, whose claims bring it back on the next run.

    :return: the rows as recorded (a row whose file another worker moved meanwhile becomes
        skipped).
    """
    from wikivel_bot.queue.store import FileOutcome

    moves = {LINKED: FileState.LINKED, UNAVAILABLE: FileState.UNAVAILABLE, INELIGIBLE: FileState.INELIGIBLE,
             DEFERRED: None}
    writes: List[Any] = []
    positions: List[int] = []
    for i, row in enumerate(rows):
        fid, outcome = int(row["file_id"]), row["outcome"]
        if not fid or outcome not in moves:
            continue
        linked = outcome == LINKED
        writes.append(FileOutcome(
            fid, moves[outcome], reason=row["reason"],
            media=media_from_text(row["media"]) if linked and row["state"] != FileState.FETCHED.value else None,
            candidates=candidates_from_text(row["candidates"]) if linked else (),
            withheld=withheld_from_text(row.get("withheld")) if linked else None))
        positions.append(i)
    results: Dict[int, Any] = dict(zip(positions, store.settle_files(writes))) if writes else {}
    out: List[Row] = []
    for i, row in enumerate(rows):
        result = results.get(i, 0)
        if isinstance(result, str):
            row = settle(dict(row), SKIPPED, f"{CHANGED}: {result}")
        elif row["outcome"] == LINKED:
            event("backfill", "linked", file=f"M{row['page_id']}", candidates=result)
        counters.count(row, result if isinstance(result, int) else 0)
        out.append(row)
    return out


def write_shard(rows: Sequence[Row], directory: str, prefix: str) -> Optional[Path]:
    """The linked rows' candidates as one Parquet shard (one row per file and item) for
    offline review; None when there is nothing to write. Written after the queue commit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records: List[Mapping[str, Any]] = []
    for row in rows:
        if row["outcome"] != LINKED:
            continue
        for cand in candidates_from_text(row["candidates"]):
            records.append({
                "page_id": int(row["page_id"]), "title": row["title"], "qid": cand.qid,
                "score": float(cand.score), "rank": int(cand.rank), "linker": cand.linker,
                "linker_version": cand.linker_version, "labelset_hash": cand.labelset_hash,
                "evidence": json.dumps(dict(cand.evidence)),
            })
    if not records:
        return None
    path = Path(directory) / f"{prefix}-{uuid.uuid4().hex[:12]}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(pa.Table.from_pylist(records), tmp)
    tmp.replace(path)  # a reader never sees half a shard
    return path
