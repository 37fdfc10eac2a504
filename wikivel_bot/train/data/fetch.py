"""Fetching the dataset's thumbnails politely into tar shards (``wikivel-bot dataset fetch``).

Downloads go through :class:`wikivel_bot.commons.thumbnails.ThumbnailClient` (standard
thumbnail steps only, two connections, backoff on 429 with ``Retry-After``, byte and pixel
limits). What was fetched is in finished shards and what can never be fetched (404, corrupt,
too large) is in ``failed.jsonl``; a re-run skips both, so it never downloads a file twice.
Transient failures (5xx, timeouts after all retries) are only counted: the next run tries
them again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set
from urllib.parse import quote

from wikivel_bot.core.titles import first_upper
from wikivel_bot.errors import FileUnavailable
from wikivel_bot.train.data.dataset import SPLITS, Dataset
from wikivel_bot.train.data.shards import ShardWriter, shard_keys

UPLOAD_ROOT = "https://upload.wikimedia.org/wikipedia/commons"
FAILED = "failed.jsonl"
# Requests handed to the client at once (it runs max_connections of them concurrently).
BATCH = 32


def thumb_url(title: str, width: int, root: str = UPLOAD_ROOT) -> str:
    """The thumbnail URL of a Commons file at a standard width.

    The path is ``thumb/<md5[0]>/<md5[:2]>/<name>/<width>px-<name>``, the md5 being that of the
    name with underscores; an SVG's thumbnail is a PNG, whose extension is appended. (The
    dataset holds .jpg, .jpeg, .png and .svg files only, so other rendered formats do not
    arise.) A bitmap narrower than ``width`` has no such thumbnail: the server refuses it and
    the file is recorded as failed (fetch again with a smaller ``--width``).

    :param title: ``File:Red fox.jpg`` or ``Red fox.jpg``.
    :param width: a standard thumbnail step (330 is Commons' default).
    :param root: the media root (tests point it at a local server).
    """
    name = title.split(":", 1)[1] if title.lower().startswith(("file:", "image:")) else title
    name = first_upper(name.strip().replace(" ", "_"))
    digest = hashlib.md5(name.encode("utf-8")).hexdigest()
    quoted = quote(name)
    thumb = f"{width}px-{quoted}" + (".png" if name.lower().endswith(".svg") else "")
    return f"{root}/thumb/{digest[0]}/{digest[:2]}/{quoted}/{thumb}"


@dataclass
class FetchReport:
    """Counts of one fetch run (printed by the CLI)."""

    wanted: int = 0
    already_present: int = 0
    known_failures: int = 0
    fetched: int = 0
    failed: int = 0
    transient: int = 0
    reasons: Dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def read_failed(images_dir: Path) -> Set[str]:
    """Page ids (as text) recorded as never fetchable."""
    path = Path(images_dir) / FAILED
    if not path.exists():
        return set()
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.add(str(json.loads(line)["page_id"]))
    return out


def fetch_thumbnails(
    dataset: Dataset,
    images_dir: Path,
    client: Any,
    *,
    width: int = 330,
    splits: Sequence[str] = SPLITS,
    limit: Optional[int] = None,
    shard_size: int = 1000,
    retry_failed: bool = False,
    root: str = UPLOAD_ROOT,
    progress: bool = False,
) -> FetchReport:
    """Download the thumbnails the dataset still lacks into tar shards under ``images_dir``.

    :param dataset: the dataset (its manifest names the files).
    :param images_dir: shard directory (usually ``<dataset>/images``).
    :param client: a ``ThumbnailClient`` (anything with ``get_many(urls)``).
    :param width: thumbnail width, a standard step.
    :param splits: which splits to fetch.
    :param limit: stop after this many downloads were attempted.
    :param shard_size: images per shard.
    :param retry_failed: also try files recorded in ``failed.jsonl``.
    :param root: media root URL.
    :param progress: show a progress bar.
    """
    from tqdm import tqdm

    from wikivel_bot.commons.thumbnails import check_step

    check_step(width)
    images_dir = Path(images_dir)
    present = shard_keys(images_dir)
    failed = set() if retry_failed else read_failed(images_dir)
    report = FetchReport()
    todo: List[tuple] = []
    wanted_splits = set(splits)
    for page_id, title, split in zip(dataset.page_ids.tolist(), dataset.titles,
                                     dataset.table.column("split").to_pylist()):
        if split not in wanted_splits:
            continue
        report.wanted += 1
        key = str(page_id)
        if key in present:
            report.already_present += 1
        elif key in failed:
            report.known_failures += 1
        else:
            todo.append((key, thumb_url(title, width, root)))
    if limit is not None:
        todo = todo[:limit]
    writer = ShardWriter(images_dir, shard_size)
    bar = tqdm(total=len(todo), desc="thumbnails", unit="file", disable=not progress)
    try:
        with (images_dir / FAILED).open("a", encoding="utf-8") as failures:
            for start in range(0, len(todo), BATCH):
                batch = todo[start:start + BATCH]
                results = client.get_many([url for _, url in batch])
                for key, url in batch:
                    outcome = results.get(url)
                    if isinstance(outcome, (bytes, bytearray)):
                        writer.add(key, bytes(outcome))
                        report.fetched += 1
                    elif isinstance(outcome, FileUnavailable):
                        report.failed += 1
                        reason = str(outcome).split(":", 1)[0]
                        report.reasons[reason] = report.reasons.get(reason, 0) + 1
                        failures.write(json.dumps({"page_id": int(key), "url": url, "reason": str(outcome)}) + "\n")
                    else:
                        # WikiError (server trouble after retries) or nothing: try next run.
                        report.transient += 1
                bar.update(len(batch))
    finally:
        # Even when interrupted, what was downloaded is written as a finished shard.
        writer.close()
        bar.close()
    return report


def fetch_item_images(
    names: Sequence[str],
    items_dir: Path,
    client: Any,
    *,
    width: int = 330,
    root: str = UPLOAD_ROOT,
    progress: bool = False,
) -> FetchReport:
    """Download items' P18 images (what the fusion linker's Wikidata side reads) as loose files.

    Files are written as ``items_dir/<file name>`` (the store finds them by name); names that
    are there already or failed for good (``items_dir/failed.jsonl``) are skipped.

    :param names: P18 file names (``Red fox.jpg``), e.g. a label set's ``images``.
    :param items_dir: where (usually ``<dataset>/images/items``).
    :param client: a ``ThumbnailClient``.
    :param width: thumbnail width, a standard step.
    :param root: media root URL.
    :param progress: show a progress bar.
    """
    from tqdm import tqdm

    from wikivel_bot.commons.thumbnails import check_step
    from wikivel_bot.train.data.filenames import file_name

    check_step(width)
    items_dir = Path(items_dir)
    items_dir.mkdir(parents=True, exist_ok=True)
    failed_path = items_dir / FAILED
    failed = set()
    if failed_path.exists():
        failed = {json.loads(line)["name"] for line in failed_path.read_text(encoding="utf-8").splitlines() if line}
    report = FetchReport()
    todo = []
    for name in dict.fromkeys(file_name(n) for n in names if n):
        report.wanted += 1
        if (items_dir / name).exists():
            report.already_present += 1
        elif name in failed:
            report.known_failures += 1
        else:
            todo.append((name, thumb_url(name, width, root)))
    bar = tqdm(total=len(todo), desc="item images", unit="file", disable=not progress)
    with failed_path.open("a", encoding="utf-8") as failures:
        for start in range(0, len(todo), BATCH):
            batch = todo[start:start + BATCH]
            results = client.get_many([url for _, url in batch])
            for name, url in batch:
                outcome = results.get(url)
                if isinstance(outcome, (bytes, bytearray)):
                    tmp = items_dir / (name + ".tmp")
                    tmp.write_bytes(bytes(outcome))
                    tmp.replace(items_dir / name)  # a file appears only complete
                    report.fetched += 1
                elif isinstance(outcome, FileUnavailable):
                    report.failed += 1
                    failures.write(json.dumps({"name": name, "url": url, "reason": str(outcome)}) + "\n")
                else:
                    report.transient += 1
            bar.update(len(batch))
    bar.close()
    return report
