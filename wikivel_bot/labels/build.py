"""Build a label set from the Wikidata and Commons MediaInfo dumps.

Order of work, each step streaming with constant memory:

1. **MediaInfo dump** → (page id, item, rank) for every usable P180 statement; these rows
   are kept (they are the depicts counts and, optionally, the files table).
2. **Wikidata dump** → for every item its P31 ∪ P279 edges and its texts, written to two
   spill files next to the output. Nothing per item stays in memory, because which items
   matter (the ancestors of depicted items) is known only once all edges were seen.
3. **Select** the items within reach: from the depicted items, follow the spilled edges up
   to the top of the P31/P279 graph (the 3-hop closure needs 6 levels — 3 hops for every
   kept item, which may itself be 3 hops up — and the safety rules' "under a class" needs
   all of them), then pick their texts from the spill.
4. **Assemble** (``assemble.py``) and write the artifact.

Peak memory is therefore the kept data (depicts rows, selected items and their closure) plus
a few blocks per worker, however large the dumps are.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from wikivel_bot.labels.assemble import Collected, assemble
from wikivel_bot.labels.blocks import (
    MAX_REPORTED,
    ChunkStats,
    WikidataOptions,
    parse_mediainfo_block,
    parse_wikidata_block,
)
from wikivel_bot.labels.dump_reader import iter_blocks
from wikivel_bot.labels.entities import TEXT_SCHEMA
from wikivel_bot.labels.parallel import map_blocks, worker_pool
from wikivel_bot.labels.hierarchy import MAX_HOPS
from wikivel_bot.labels.labelset import LabelSet
from wikivel_bot.labels.lists import default_p31_blocklist
from wikivel_bot.labels.artifact import write_artifact

# Edges scanned per step when selecting from the spill (16 bytes each).
_SCAN_ROWS = 1 << 22


@dataclass
class ReadReport:
    """How reading one dump went (printed by the CLI, stored in the manifest)."""

    path: str
    kind: str
    backend: str = ""
    lines: int = 0
    entities: int = 0
    skipped: int = 0
    malformed: int = 0
    malformed_lines: List[Tuple[int, str]] = field(default_factory=list)
    with_depicts: int = 0
    seconds: float = 0.0
    last_id: str = ""

    def add(self, stats: ChunkStats) -> None:
        self.lines += stats.lines
        self.entities += stats.entities
        self.skipped += stats.skipped
        self.malformed += stats.malformed
        room = MAX_REPORTED - len(self.malformed_lines)
        if room > 0:
            self.malformed_lines.extend(stats.malformed_lines[:room])
        if stats.last_id:
            self.last_id = stats.last_id

    def as_dict(self) -> Dict[str, Any]:
        out = dict(self.__dict__)
        out["malformed_lines"] = [list(pair) for pair in self.malformed_lines]
        out["seconds"] = round(self.seconds, 3)
        return out


def source_entry(path: Path, kind: str) -> Dict[str, Any]:
    """Name, size and dump date (from names like ``commons-20231107-mediainfo.json.bz2``)."""
    match = re.search(r"(?<!\d)(20\d{2})(\d{2})(\d{2})(?!\d)", path.name)
    date = f"{match.group(1)}-{match.group(2)}-{match.group(3)}" if match else None
    return {"kind": kind, "name": path.name, "date": date, "bytes": path.stat().st_size}


def read_mediainfo(
    path: Path, *, workers: int = 1, decompressor: str = "auto", progress: bool = False,
    pool: Optional[ProcessPoolExecutor] = None,
) -> Tuple[Tuple[np.ndarray, np.ndarray, np.ndarray], ReadReport]:
    """(page ids, numeric QIDs, ranks) of every usable P180 statement in a MediaInfo dump."""
    report = ReadReport(path=str(path), kind="mediainfo")
    started = time.perf_counter()
    pages: List[np.ndarray] = []
    qids: List[np.ndarray] = []
    ranks: List[np.ndarray] = []
    info: Dict[str, Any] = {}
    blocks = iter_blocks(path, threads=workers, decompressor=decompressor, progress=progress,
                         desc=f"MediaInfo {path.name}", info=info)
    for chunk in map_blocks(blocks, parse_mediainfo_block, None, workers, pool):
        report.add(chunk.stats)
        report.with_depicts += chunk.with_depicts
        pages.append(chunk.page_ids)
        qids.append(chunk.qids)
        ranks.append(chunk.ranks)
    report.backend = info.get("backend", "")
    report.seconds = time.perf_counter() - started
    rows = (_cat(pages, np.int64), _cat(qids, np.int64), _cat(ranks, np.int8))
    return rows, report


def _cat(parts: List[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype=dtype)


class Spill:
    """Edges and texts of every item of the Wikidata dump, on disk until selection."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._edges_path = directory / "edges.i64"
        self._texts_path = directory / "texts.arrows"
        self._edges = open(self._edges_path, "wb")
        # P31 edges alone, a subset of the edges above: "instance of" for the safety rules.
        self._instance_path = directory / "instance.i64"
        self._instance = open(self._instance_path, "wb")
        self._texts_sink = pa.OSFile(str(self._texts_path), "wb")
        self._texts = pa.ipc.new_stream(self._texts_sink, TEXT_SCHEMA)
        self.edge_count = 0

    def add(self, edges: np.ndarray, texts: pa.RecordBatch, instance_edges: Optional[np.ndarray] = None) -> None:
        if instance_edges is not None and instance_edges.size:
            np.ascontiguousarray(instance_edges, dtype=np.int64).tofile(self._instance)
        if edges.size:
            np.ascontiguousarray(edges, dtype=np.int64).tofile(self._edges)
            self.edge_count += edges.shape[0]
        if texts.num_rows:
            self._texts.write_batch(texts)

    def close(self) -> None:
        if not self._edges.closed:
            self._edges.close()
            self._instance.close()
            self._texts.close()
            self._texts_sink.close()

    def edges_from(self, children: np.ndarray, instance: bool = False) -> np.ndarray:
        """All spilled edges whose child is in ``children`` (sorted unique numeric QIDs).

        :param instance: the P31 edges alone instead of P31 ∪ P279.
        """
        self.close()
        path = self._instance_path if instance else self._edges_path
        if self.edge_count == 0 or children.size == 0 or path.stat().st_size == 0:
            return np.empty((0, 2), dtype=np.int64)
        edges = np.memmap(path, dtype=np.int64, mode="r").reshape(-1, 2)
        parts = []
        for start in range(0, edges.shape[0], _SCAN_ROWS):
            block = np.asarray(edges[start : start + _SCAN_ROWS])
            parts.append(block[np.isin(block[:, 0], children)])
        return np.concatenate(parts)

    def texts_of(self, qids: np.ndarray) -> pa.Table:
        """Spilled text rows of the given numeric QIDs."""
        self.close()
        batches = []
        with pa.OSFile(str(self._texts_path), "rb") as source:
            for batch in pa.ipc.open_stream(source):
                mask = np.isin(batch.column(0).to_numpy(), qids)
                if mask.any():
                    batches.append(batch.filter(pa.array(mask)))
        return pa.Table.from_batches(batches, schema=TEXT_SCHEMA)


def read_wikidata(
    path: Path, spill: Spill, options: WikidataOptions, *, workers: int = 1,
    decompressor: str = "auto", progress: bool = False, pool: Optional[ProcessPoolExecutor] = None,
) -> ReadReport:
    """Stream the Wikidata dump's items into ``spill``."""
    report = ReadReport(path=str(path), kind="wikidata")
    started = time.perf_counter()
    info: Dict[str, Any] = {}
    blocks = iter_blocks(path, threads=workers, decompressor=decompressor, progress=progress,
                         desc=f"Wikidata {path.name}", info=info)
    for chunk in map_blocks(blocks, parse_wikidata_block, options, workers, pool):
        report.add(chunk.stats)
        spill.add(chunk.edges, chunk.texts, chunk.instance_edges)
    report.backend = info.get("backend", "")
    report.seconds = time.perf_counter() - started
    return report


def select_reachable(spill: Spill, inputs: np.ndarray, levels: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Edges of the items above ``inputs``, and the items within 3 hops.

    :param levels: follow this many levels (``levels - 1`` hops above the inputs); None: up
        to the top of the graph (every class above, however deep; the ``seen`` set ends
        Wikidata's cycles), which the safety rules need.
    :returns: (edges (n, 2), numeric QIDs of the inputs and their ancestors within 3 hops).
    """
    seen = np.unique(inputs)
    frontier = seen
    within = seen
    parts = []
    level = 0
    while levels is None or level < levels:
        edges = spill.edges_from(frontier)
        parts.append(edges)
        frontier = np.setdiff1d(np.unique(edges[:, 1]), seen, assume_unique=True)
        seen = np.union1d(seen, frontier)
        if level < MAX_HOPS:
            within = seen
        if frontier.size == 0:
            break
        level += 1
    edges = np.concatenate(parts) if parts else np.empty((0, 2), dtype=np.int64)
    return edges, within


def _count_on(file_rows: Tuple[np.ndarray, np.ndarray, np.ndarray], inputs: np.ndarray,
              count_pages: Sequence[int], source: str) -> Tuple[np.ndarray, Dict[str, Any]]:
    """Depicts counts of ``inputs`` over the listed pages only, and the manifest entry."""
    pages = np.unique(np.asarray(count_pages, dtype=np.int64))
    mask = np.isin(file_rows[0], pages)
    counted, counts = np.unique(file_rows[1][mask], return_counts=True)
    direct = np.zeros(inputs.size, dtype=np.int64)
    direct[np.searchsorted(inputs, counted)] = counts
    entry = {"kind": "files", "name": source, "files": int(pages.size),
             "files_with_depicts": int(np.unique(file_rows[0][mask]).size), "sha256": page_ids_digest(pages)}
    return direct, entry


def page_ids_digest(page_ids: Iterable[int]) -> str:
    """The ``sha256`` a label set records for the files it counted on (sorted unique ids)."""
    pages = np.unique(np.asarray(list(page_ids), dtype=np.int64))
    return hashlib.sha256(pages.astype("<i8").tobytes()).hexdigest()


@dataclass
class BuildResult:
    label_set: LabelSet
    path: Optional[Path]
    reports: List[ReadReport]


def build_from_dumps(
    out_dir: Optional[Path],
    *,
    wikidata_dump: Path,
    mediainfo_dump: Optional[Path] = None,
    qids: Optional[Sequence[int]] = None,
    min_freq: int = 10,
    languages: Sequence[str] = ("en",),
    display_languages: Sequence[str] = ("en",),
    with_aliases: bool = False,
    p31_blocklist: Iterable[int] = (),
    blocklist: Iterable[int] = (),
    allowlist: Iterable[int] = (),
    workers: int = 1,
    decompressor: str = "auto",
    progress: bool = False,
    keep_files: bool = False,
    overwrite: bool = False,
    spill_dir: Optional[Path] = None,
    count_pages: Optional[Sequence[int]] = None,
    count_source: str = "",
) -> BuildResult:
    """Read the dumps, filter, and write the label set to ``out_dir`` (None: do not write).

    :param wikidata_dump: ``latest-all.json.bz2`` or a part of it (bz2, gz or plain).
    :param mediainfo_dump: ``commons-YYYYMMDD-mediainfo.json.bz2``; gives the depicted items
        and their counts.
    :param qids: instead of a MediaInfo dump, the items to keep (counts 0, no filtering).
    :param min_freq: threshold f (paper §3.2); ignored with ``qids``.
    :param languages: label/description fallback order (``mul`` is always tried last) of
        the linker's text.
    :param display_languages: languages whose label and description are kept for the review
        page (``labels.languages``); they do not change the linker's text or the content hash.
    :param with_aliases: keep aliases too.
    :param p31_blocklist: more non-depictable classes, on top of the shipped list.
    :param blocklist: items never kept. :param allowlist: items kept despite their class.
    :param workers: parsing processes (and decompression threads).
    :param decompressor: ``"auto"``, ``"parallel"`` or ``"stdlib"`` (see ``dump_reader``).
    :param progress: tqdm bars on stderr.
    :param keep_files: also store every file's depicts after filtering.
    :param overwrite: replace an existing set in ``out_dir``.
    :param spill_dir: where the temporary spill goes (default: next to ``out_dir``).
    :param count_pages: count the depicts statements of these page ids only (paper §3.2: f
        is counted "in the training split"); every depicted item of the whole dump still
        needs an outcome and may be kept (§3.1). None counts the whole dump.
    :param count_source: name of the list ``count_pages`` came from (for the manifest).
    :raises DumpError: an unreadable or truncated dump.
    """
    if (mediainfo_dump is None) == (qids is None):
        raise ValueError("give exactly one of mediainfo_dump and qids")
    reports: List[ReadReport] = []
    sources = [source_entry(Path(wikidata_dump), "wikidata-dump")]
    blocked: FrozenSet[int] = default_p31_blocklist() | frozenset(p31_blocklist)
    options = WikidataOptions(languages=tuple(languages), with_aliases=with_aliases, p31_blocklist=blocked,
                              display_languages=tuple(display_languages))
    parent = Path(spill_dir) if spill_dir else (Path(out_dir).parent if out_dir else None)
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        # One pool of parsing processes for both dumps; gone before the selection starts.
        pool = worker_pool(workers)
        if pool is not None:
            stack.callback(pool.shutdown, wait=True, cancel_futures=True)
        file_rows = None
        if mediainfo_dump is not None:
            file_rows, report = read_mediainfo(Path(mediainfo_dump), workers=workers,
                                               decompressor=decompressor, progress=progress, pool=pool)
            reports.append(report)
            sources.append(source_entry(Path(mediainfo_dump), "mediainfo-dump"))
            inputs, direct = np.unique(file_rows[1], return_counts=True)
            counted_on = {"kind": "whole dump"}
            if count_pages is not None:
                direct, counted_on = _count_on(file_rows, inputs, count_pages, count_source)
        else:
            min_freq = 0
            counted_on = {"kind": "listed items (no counts)"}
            inputs = np.unique(np.asarray(qids, dtype=np.int64))
            direct = np.zeros(inputs.size, dtype=np.int64)
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="wikivel-spill-", dir=parent))
        # Only depicted (or listed) items can be kept: only their display texts are read.
        np.save(Path(tmp) / "display_for.npy", inputs, allow_pickle=False)
        options = replace(options, display_for=str(Path(tmp) / "display_for.npy"))
        spill = Spill(Path(tmp))
        try:
            reports.append(read_wikidata(Path(wikidata_dump), spill, options, workers=workers,
                                         decompressor=decompressor, progress=progress, pool=pool))
        finally:
            spill.close()
        if pool is not None:
            pool.shutdown(wait=True)
        edges, within = select_reachable(spill, inputs)
        texts = spill.texts_of(np.unique(np.concatenate([inputs, edges.ravel()])))
        instance_edges = spill.edges_from(within, instance=True)
    collected = Collected(texts=texts, edges=edges, inputs=inputs, direct=direct,
                          file_rows=file_rows, closure_sources=within, instance_edges=instance_edges)
    label_set = assemble(
        collected, min_freq=min_freq, languages=languages, display_languages=display_languages,
        with_aliases=with_aliases, p31_blocklist=blocked, blocklist=blocklist, allowlist=allowlist, keep_files=keep_files, sources=sources,
        report={r.kind: r.as_dict() for r in reports}, counted_on=counted_on,
    )
    path = None
    if out_dir is not None:
        path = write_artifact(label_set.data, Path(out_dir), overwrite=overwrite)
        label_set.path = path
    return BuildResult(label_set=label_set, path=path, reports=reports)
