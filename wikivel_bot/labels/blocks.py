"""The block parsers the dump workers run: whole dump lines in, compact columns out.

A worker gets a block of a few MB of lines and sends back little more than what is kept:
edge arrays and an Arrow batch of texts (Wikidata), or (page, item, rank) arrays (MediaInfo).
They never raise for a bad line: a line that is not a JSON object is counted and reported
with its number. Cheap byte checks run before any parsing: a line must start with ``{`` and
end with ``}``; properties and lexemes are skipped by their first bytes; MediaInfo lines
without ``"P180"`` (most files) are counted without being parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import orjson
import pyarrow as pa

from wikivel_bot.labels import entities
from wikivel_bot.labels.entities import (
    TEXT_SCHEMA,
    ItemFields,
    depicts_of,
    extract_item,
    language_chain,
    qid_text,
)
from wikivel_bot.types import is_mid, is_qid

# How many malformed lines a chunk reports in detail (the rest are only counted).
MAX_REPORTED = 20
# One simdjson parser per process, reused line after line.
_PARSER: Any = None
# The items whose display texts are kept, memory-mapped once per process: (path, array).
_DISPLAY_FOR: Tuple[str, Optional[np.ndarray]] = ("", None)


def dump_lines(first_line: int, data: bytes) -> Iterator[Tuple[int, bytes]]:
    """The entity lines of a block: ``[``/``]`` and blank lines skipped, trailing comma cut.

    :param first_line: 1-based number of the block's first line in the whole dump.
    :param data: whole lines separated by ``\\n``.
    """
    for offset, raw in enumerate(data.split(b"\n")):
        line = raw.strip()
        if not line or line == b"[" or line == b"]":
            continue
        if line[-1:] == b",":
            line = line[:-1]
        yield first_line + offset, line


@dataclass
class ChunkStats:
    """Counters of one block (summed over the dump by the reader)."""

    lines: int = 0
    entities: int = 0
    skipped: int = 0
    malformed: int = 0
    malformed_lines: List[Tuple[int, str]] = field(default_factory=list)
    last_id: str = ""

    def add_malformed(self, line_no: int, error: str) -> None:
        self.malformed += 1
        if len(self.malformed_lines) < MAX_REPORTED:
            self.malformed_lines.append((line_no, error[:200]))


@dataclass(frozen=True)
class WikidataOptions:
    """What the Wikidata block parser keeps (pickled once per block to the workers)."""

    languages: Tuple[str, ...] = ("en",)
    with_aliases: bool = False
    p31_blocklist: FrozenSet[int] = frozenset()
    # Languages whose label and description are kept as they are (the review page's).
    display_languages: Tuple[str, ...] = ()
    # A .npy of sorted numeric QIDs: only these items' display texts are read ("" = all).
    # Only depicted (or listed) items can be kept, and they are known before the Wikidata
    # dump is read; skipping the other ~98% of items keeps the parse and the spill as fast
    # and as small as without display languages. A path, not the array: options travel
    # with every block to the workers.
    display_for: str = ""


@dataclass
class WikidataChunk:
    stats: ChunkStats
    edges: np.ndarray  # (n, 2) int64: child, parent over P31 ∪ P279
    texts: pa.RecordBatch  # TEXT_SCHEMA
    # (n, 2) int64: child, parent over P31 alone (the safety rules' "instance of")
    instance_edges: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))


def _looks_whole(line: bytes, stats: ChunkStats, line_no: int) -> bool:
    # One byte check each end catches cut-off lines even where the pre-filter skips parsing.
    if line[:1] == b"{" and line[-1:] == b"}":
        return True
    head = line[:50].decode("utf-8", "replace")
    tail = line[-30:].decode("utf-8", "replace") if len(line) > 50 else ""
    stats.add_malformed(line_no, f"not a whole JSON object (cut off?): {head}{' ... ' + tail if tail else ''}")
    return False


def _parse_line(line: bytes, stats: ChunkStats, line_no: int) -> Optional[Dict[str, Any]]:
    try:
        entity = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        stats.add_malformed(line_no, f"not JSON: {exc}")
        return None
    if not isinstance(entity, dict):
        stats.add_malformed(line_no, f"not a JSON object but {type(entity).__name__}")
        return None
    return entity


# Properties and lexemes share the item dumps; their type key comes first on the line.
_OTHER_TYPES = (b'{"type":"property"', b'{"type":"lexeme"', b'{"type":"form"', b'{"type":"sense"')
_SITELINKS = b',"sitelinks":'


def item_json(line: bytes) -> bytes:
    """The line without its sitelinks, which are never kept but are a large part of it.

    The cut is safe: ``,"sitelinks":`` cannot occur inside a JSON string (its quote would be
    escaped) and no nested object of an entity has that key, so the last occurrence is the
    top-level one and everything after it is a closed value followed by other top-level keys.
    """
    cut = line.rfind(_SITELINKS)
    return line[:cut] + b"}" if cut > 0 else line


def _display_languages(entity: Any, options: "WikidataOptions") -> Tuple[str, ...]:
    """The display languages to read for this entity: all of them, or none for an item that
    cannot be kept (not in ``options.display_for``)."""
    global _DISPLAY_FOR
    if not options.display_languages or not options.display_for:
        return options.display_languages
    if _DISPLAY_FOR[0] != options.display_for:
        _DISPLAY_FOR = (options.display_for, np.load(options.display_for, mmap_mode="r", allow_pickle=False))
    wanted = _DISPLAY_FOR[1]
    qid = entity.get("id")
    if wanted is None or not is_qid(qid):
        return ()
    number = int(qid[1:])
    at = int(np.searchsorted(wanted, number))
    return options.display_languages if at < wanted.size and int(wanted[at]) == number else ()


def _item_from_line(line: bytes, line_no: int, stats: ChunkStats, chain: Sequence[str],
                    options: "WikidataOptions") -> Optional[ItemFields]:
    global _PARSER
    if entities._simdjson is None:
        entity = _parse_line(item_json(line), stats, line_no)
        if entity is None:
            return None
        fields = extract_item(entity, chain, options.with_aliases, options.p31_blocklist,
                              _display_languages(entity, options))
    else:
        if _PARSER is None:
            _PARSER = entities._simdjson.Parser()
        try:
            document = _PARSER.parse(line)
        except ValueError as exc:
            stats.add_malformed(line_no, f"not JSON: {exc}")
            return None
        if not isinstance(document, entities._simdjson.Object):
            stats.add_malformed(line_no, f"not a JSON object but {type(document).__name__}")
            return None
        # ItemFields holds plain str/int only, so nothing refers to the document once this
        # returns and the parser can be reused for the next line.
        fields = extract_item(document, chain, options.with_aliases, options.p31_blocklist,
                              _display_languages(document, options))
        del document
    if fields is None:
        stats.skipped += 1
    return fields


def parse_wikidata_block(first_line: int, data: bytes, options: WikidataOptions) -> WikidataChunk:
    """Parse a block of Wikidata dump lines into edges and text columns (a worker's job).

    :param first_line: the block's first line number in the dump (for error reports).
    :param data: whole lines.
    :param options: languages, aliases, and the P31 blocklist.
    """
    stats = ChunkStats()
    chain = language_chain(options.languages)
    children: List[int] = []
    parents: List[int] = []
    instances: List[int] = []
    columns: Dict[str, List[Any]] = {name: [] for name in TEXT_SCHEMA.names}
    for line_no, line in dump_lines(first_line, data):
        stats.lines += 1
        if not _looks_whole(line, stats, line_no):
            continue
        if line.startswith(_OTHER_TYPES):
            stats.skipped += 1
            continue
        fields = _item_from_line(line, line_no, stats, chain, options)
        if fields is None:
            continue
        stats.entities += 1
        stats.last_id = qid_text(fields.qid)
        for parent in dict.fromkeys(fields.p31 + fields.p279):
            children.append(fields.qid)
            parents.append(parent)
        for parent in dict.fromkeys(fields.p31):
            instances += (fields.qid, parent)
        for name in TEXT_SCHEMA.names:
            columns[name].append(getattr(fields, name))
    edges = np.empty((len(children), 2), dtype=np.int64)
    edges[:, 0] = children
    edges[:, 1] = parents
    texts = pa.RecordBatch.from_arrays(
        [pa.array(columns[f.name], type=f.type) for f in TEXT_SCHEMA], schema=TEXT_SCHEMA
    )
    instance_edges = np.asarray(instances, dtype=np.int64).reshape(-1, 2)
    return WikidataChunk(stats=stats, edges=edges, texts=texts, instance_edges=instance_edges)


@dataclass
class MediaInfoChunk:
    stats: ChunkStats
    with_depicts: int  # files with at least one usable P180 statement
    page_ids: np.ndarray  # int64, one row per (file, item)
    qids: np.ndarray  # int64
    ranks: np.ndarray  # int8: 0 normal, 1 preferred


def parse_mediainfo_block(first_line: int, data: bytes, options: Any = None) -> MediaInfoChunk:
    """Parse a block of MediaInfo dump lines into (page id, item, rank) rows (a worker's job).

    Most files have no depicts statement; a byte search for ``"P180"`` skips them without
    parsing (they are still counted).
    """
    stats = ChunkStats()
    page_ids: List[int] = []
    qids: List[int] = []
    ranks: List[int] = []
    with_depicts = 0
    for line_no, line in dump_lines(first_line, data):
        stats.lines += 1
        if not _looks_whole(line, stats, line_no):
            continue
        if b'"P180"' not in line:
            stats.entities += 1
            continue
        entity = _parse_line(line, stats, line_no)
        if entity is None:
            continue
        mid = entity.get("id")
        if not is_mid(mid):
            stats.add_malformed(line_no, f"not a MediaInfo entity (id {mid!r})")
            continue
        stats.entities += 1
        stats.last_id = mid
        depicts = depicts_of(entity)
        if depicts:
            with_depicts += 1
        page_id = int(mid[1:])
        for number, rank in depicts.items():
            page_ids.append(page_id)
            qids.append(number)
            ranks.append(rank)
    return MediaInfoChunk(
        stats=stats,
        with_depicts=with_depicts,
        page_ids=np.asarray(page_ids, dtype=np.int64),
        qids=np.asarray(qids, dtype=np.int64),
        ranks=np.asarray(ranks, dtype=np.int8),
    )
