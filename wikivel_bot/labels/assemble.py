"""Turn what was read (item texts, P31/P279 edges, depicts counts) into a label set.

Every way of building a set ends here: the dump build, ``--from-qids`` through the API, the
starter set and :func:`label_set_from_records` for tests. Steps: number the items, compute
ancestors within 3 hops, count and filter (``frequency.py``), assign super-categories, put
the kept items first, and fill the manifest and its content hash. Besides the 3-hop closure
the set keeps every node's direct parents (to the top of the graph, as far as the reader
followed them) and, for items without P31, their person-only properties: what the safety
rules need to tell "under a class" at any depth and a person without P31.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wikivel_bot import __version__
from wikivel_bot.labels import categories, frequency
from wikivel_bot.labels.artifact import (
    FILES_SCHEMA,
    FORMAT,
    FORMAT_VERSION,
    ITEMS_SCHEMA,
    NODES_SCHEMA,
    LabelSetData,
    content_hash,
    texts_hash,
)
from wikivel_bot.labels.entities import TEXT_SCHEMA, ItemFields, person_property_bits
from wikivel_bot.labels.hierarchy import MAX_HOPS, Hierarchy, compute_closure, parent_table
from wikivel_bot.labels.labelset import LabelSet
from wikivel_bot.labels.texts import texts_table as display_table
from wikivel_bot.types import qid_number


@dataclass
class Collected:
    """What a reader collected, before filtering.

    :param texts: one row per item read (``entities.TEXT_SCHEMA``).
    :param edges: (n, 2) int64 numeric QIDs (child, parent) over P31 ∪ P279.
    :param inputs: numeric QIDs that need an outcome: the depicted items, or the listed ones.
    :param direct: depicts count of each input (aligned with ``inputs``).
    :param file_rows: (page ids, numeric QIDs, ranks) of the MediaInfo depicts, if read.
    :param closure_sources: items whose ancestors are stored (None: all items).
    :param instance_edges: (n, 2) int64 (child, parent) over P31 alone, stored so the safety
        rules can tell an instance of human from a subclass (None: not stored).
    """

    texts: pa.Table
    edges: np.ndarray
    inputs: np.ndarray
    direct: np.ndarray
    file_rows: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
    closure_sources: Optional[np.ndarray] = None
    instance_edges: Optional[np.ndarray] = None


def assemble(
    collected: Collected,
    *,
    min_freq: int,
    languages: Sequence[str],
    display_languages: Sequence[str] = (),
    with_aliases: bool = False,
    p31_blocklist: Iterable[int] = (),
    blocklist: Iterable[int] = (),
    allowlist: Iterable[int] = (),
    keep_files: bool = False,
    sources: Sequence[Mapping[str, Any]] = (),
    report: Optional[Mapping[str, Any]] = None,
    counted_on: Optional[Mapping[str, Any]] = None,
) -> LabelSet:
    """Build the label set (in memory) from collected data.

    :param min_freq: threshold f (paper §3.2); <= 0 keeps every eligible input, no hops.
    :param languages: language fallback order the texts were picked with.
    :param display_languages: the languages the ``texts`` column was read in (recorded in
        the manifest; the kept items' texts go to ``texts.arrow``).
    :param with_aliases: whether aliases were kept (recorded in the manifest).
    :param p31_blocklist: the non-depictable classes the texts were read with; the classes
        themselves are not kept either.
    :param blocklist: numeric QIDs the operator never wants kept.
    :param allowlist: numeric QIDs kept even if their P31 class is on the blocklist.
    :param keep_files: store every file's depicts after filtering (``files.arrow``).
    :param sources: descriptions of the dumps or API read, for the manifest.
    :param report: reader counters (lines, malformed lines, ...) for the manifest.
    :param counted_on: which files the depicts counts (``collected.direct``) were counted on,
        recorded as the manifest's ``counted_on`` (``labels info`` shows it); default
        ``{"kind": "given counts"}``.
    """
    texts = _unique_texts(collected.texts)
    text_qids = texts.column("qid").to_numpy()
    edges = np.asarray(collected.edges, dtype=np.int64).reshape(-1, 2)
    inputs = np.asarray(collected.inputs, dtype=np.int64)
    node_qids = np.unique(np.concatenate([inputs, edges.ravel(), text_qids]))
    n = int(node_qids.size)
    parent_offsets, parents = parent_table(
        n, np.searchsorted(node_qids, edges[:, 0]), np.searchsorted(node_qids, edges[:, 1])
    )
    sources_nodes = None
    if collected.closure_sources is not None:
        wanted = np.asarray(collected.closure_sources, dtype=np.int64)
        sources_nodes = np.searchsorted(node_qids, wanted[np.isin(wanted, node_qids)])
    closure = compute_closure(n, parent_offsets, parents, sources_nodes)
    hierarchy = Hierarchy(node_qids, *closure)

    text_nodes = np.searchsorted(node_qids, text_qids)
    row_of_node = np.full(n, -1, dtype=np.int64)
    row_of_node[text_nodes] = np.arange(text_nodes.size)
    known = row_of_node >= 0
    has_label = np.zeros(n, dtype=bool)
    has_label[text_nodes] = pc.not_equal(texts.column("label"), "").to_numpy(zero_copy_only=False)
    blocked_by = np.zeros(n, dtype=np.int64)
    blocked_by[text_nodes] = texts.column("blocked_by").to_numpy()
    is_blocked_class = np.isin(node_qids, np.fromiter(p31_blocklist, dtype=np.int64))
    blocked_by[is_blocked_class] = node_qids[is_blocked_class]
    reason = frequency.eligibility(
        known,
        has_label,
        blocked_by,
        np.isin(node_qids, np.fromiter(blocklist, dtype=np.int64)),
        np.isin(node_qids, np.fromiter(allowlist, dtype=np.int64)),
    )
    input_nodes = np.searchsorted(node_qids, inputs)
    direct = np.zeros(n, dtype=np.int64)
    np.add.at(direct, input_nodes, np.asarray(collected.direct, dtype=np.int64))
    is_input = np.zeros(n, dtype=bool)
    is_input[input_nodes] = True
    selection = frequency.select(hierarchy, direct, reason, is_input, min_freq)
    super_codes = categories.assign(hierarchy)

    # Kept items first (ascending QID), then the others: node i is item i.
    order = np.concatenate([np.flatnonzero(selection.kept), np.flatnonzero(~selection.kept)])
    new_of_old = np.empty(n, dtype=np.int64)
    new_of_old[order] = np.arange(n)
    closure_arrays = _renumber_csr(hierarchy.offsets, hierarchy.ancestors, new_of_old, hierarchy.hops)
    replaced_offsets, replaced_by, _ = _renumber_csr(
        selection.replaced_offsets, selection.replaced_by, new_of_old, None
    )
    n_kept = int(selection.kept.sum())
    names = np.array(categories.category_names(), dtype=object)
    node_rows = row_of_node[order]
    nodes = pa.table(
        {
            "qid": node_qids[order],
            "label": _take_text(texts.column("label"), node_rows),
            "direct_count": direct[order],
            "accumulated_count": selection.accumulated[order],
            "status": selection.status[order],
            "reason": selection.reason[order],
            "blocked_by": blocked_by[order],
            "super_category": super_codes[order],
        },
        schema=NODES_SCHEMA,
    )
    kept_rows = pa.array(node_rows[:n_kept])
    items = pa.table(
        {
            "qid": node_qids[order[:n_kept]],
            **{name: texts.column(name).take(kept_rows) for name in
               ("label", "label_lang", "description", "description_lang", "image", "aliases")},
            "direct_count": direct[order[:n_kept]],
            "accumulated_count": selection.accumulated[order[:n_kept]],
            "super_category": pa.array(names[super_codes[order[:n_kept]]].tolist(), pa.string()),
        },
        schema=ITEMS_SCHEMA,
    )
    files_table = None
    remap = None
    if collected.file_rows is not None:
        pages, qids, ranks = collected.file_rows
        remap = frequency.remap_files(pages, np.searchsorted(node_qids, qids), ranks, selection)
        if keep_files:
            files_table = pa.table(
                {
                    "page_id": remap.page_ids,
                    "qid": node_qids[remap.nodes],
                    "rank": remap.ranks,
                    "source_qid": node_qids[remap.source_nodes],
                },
                schema=FILES_SCHEMA,
            )
    manifest = _manifest(
        selection, is_input, super_codes, n, closure_arrays[1].size, remap,
        min_freq=min_freq, languages=languages, with_aliases=with_aliases,
        sources=sources, report=report,
    )
    manifest["counted_on"] = dict(counted_on) if counted_on is not None else {"kind": "given counts"}
    arrays = {
        "closure_offsets": closure_arrays[0],
        "closure_ancestors": closure_arrays[1].astype(np.int32),
        "closure_hops": closure_arrays[2],
        "replaced_offsets": replaced_offsets,
        "replaced_by": replaced_by.astype(np.int32),
    }
    if collected.instance_edges is not None:
        arrays.update(_instance_arrays(collected.instance_edges, node_qids, new_of_old))
    parent_offsets_new, parents_new, _ = _renumber_csr(parent_offsets, parents, new_of_old, None)
    arrays["parent_offsets"] = parent_offsets_new
    arrays["parents"] = parents_new.astype(np.int32)
    person_bits = np.zeros(n, dtype=np.uint8)
    person_bits[text_nodes] = texts.column("person_properties").fill_null(0).to_numpy(zero_copy_only=False)
    arrays["person_properties"] = person_bits[order]
    display = display_table(texts.column("texts").take(kept_rows))
    manifest["display_languages"] = list(display_languages)
    manifest["texts_hash"] = texts_hash(display)
    data = LabelSetData(items=items, nodes=nodes, arrays=arrays, manifest=manifest, files=files_table,
                        texts=display)
    manifest["content_hash"] = content_hash(data)
    return LabelSet(data)


def _instance_arrays(edges: np.ndarray, node_qids: np.ndarray, new_of_old: np.ndarray) -> Dict[str, np.ndarray]:
    """P31 targets as CSR over the final node numbers (edges to unknown nodes left out)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    n = int(node_qids.size)
    if n:
        known = np.isin(edges[:, 0], node_qids) & np.isin(edges[:, 1], node_qids)
        edges = edges[known]
    offsets, targets = parent_table(n, np.searchsorted(node_qids, edges[:, 0]), np.searchsorted(node_qids, edges[:, 1]))
    new_offsets, renamed, _ = _renumber_csr(offsets, targets, new_of_old, None)
    return {"instance_offsets": new_offsets, "instance_of": renamed.astype(np.int32)}


def instance_edges_of(fields: Iterable[ItemFields]) -> np.ndarray:
    """(n, 2) child/parent numeric QIDs over P31 alone of extracted items."""
    pairs = [(f.qid, parent) for f in fields for parent in dict.fromkeys(f.p31)]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _unique_texts(texts: pa.Table) -> pa.Table:
    texts = texts.cast(TEXT_SCHEMA) if texts.schema != TEXT_SCHEMA else texts
    qids = texts.column("qid").to_numpy()
    # One row per item (the first one read), in QID order.
    _, first = np.unique(qids, return_index=True)
    return texts.take(pa.array(first))


def _take_text(column: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    taken = column.take(pa.array(np.where(rows >= 0, rows, 0)))
    return pc.if_else(pa.array(rows >= 0), taken, "")


def _renumber_csr(offsets: np.ndarray, targets: np.ndarray, new_of_old: np.ndarray,
                  values: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = new_of_old.size
    owners = new_of_old[np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))]
    renamed = new_of_old[np.asarray(targets, dtype=np.int64)]
    order = np.argsort(owners * n + renamed, kind="stable")
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners, minlength=n), out=new_offsets[1:])
    new_values = values[order] if values is not None else np.empty(0, dtype=np.int8)
    return new_offsets, renamed[order], new_values


def _manifest(selection: frequency.Selection, is_input: np.ndarray, super_codes: np.ndarray, n: int,
              pairs: int, remap: Optional[frequency.FileRemap], *, min_freq: int,
              languages: Sequence[str], with_aliases: bool, sources: Sequence[Mapping[str, Any]],
              report: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    kept = selection.kept
    status = selection.status
    dropped_reasons: Dict[str, int] = {}
    for code in np.unique(selection.reason[status == frequency.STATUS_DROPPED]).tolist():
        mask = (status == frequency.STATUS_DROPPED) & (selection.reason == code)
        dropped_reasons[frequency.REASON_NAMES[code]] = int(mask.sum())
    names = categories.category_names()
    by_category = np.bincount(super_codes[kept].astype(np.int64), minlength=len(names))
    counts: Dict[str, Any] = {
        "items": int(kept.sum()),
        "nodes": n,
        "closure_pairs": int(pairs),
        "inputs": int(is_input.sum()),
        "inputs_kept": int((is_input & kept).sum()),
        "inputs_replaced": int((status == frequency.STATUS_REPLACED).sum()),
        "inputs_dropped": int((status == frequency.STATUS_DROPPED).sum()),
        "dropped_by_reason": dropped_reasons,
    }
    if remap is not None:
        counts.update(files_with_depicts=remap.files_in, files_dropped=remap.files_dropped,
                      depicts_rows_after_filtering=int(remap.page_ids.size))
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "languages": list(languages),
        "min_freq": int(min_freq),
        "max_hops": MAX_HOPS,
        "with_aliases": bool(with_aliases),
        "sources": [dict(source) for source in sources],
        "counts": counts,
        "super_categories": {names[i]: int(c) for i, c in enumerate(by_category.tolist()) if c},
        "read": dict(report or {}),
        "built_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "built_by": f"wikivel-bot {__version__}",
    }


def texts_table(fields: Iterable[ItemFields]) -> pa.Table:
    """A TEXT_SCHEMA table from extracted items."""
    rows = list(fields)
    return pa.table({name: pa.array([getattr(f, name) for f in rows], type=TEXT_SCHEMA.field(name).type)
                     for name in TEXT_SCHEMA.names}, schema=TEXT_SCHEMA)


def edges_of(fields: Iterable[ItemFields]) -> np.ndarray:
    """(n, 2) child/parent numeric QIDs over P31 ∪ P279 of extracted items."""
    pairs = [(f.qid, parent) for f in fields for parent in dict.fromkeys(f.p31 + f.p279)]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


Record = Union[ItemFields, Mapping[str, Any]]


def label_set_from_records(
    records: Iterable[Record],
    counts: Optional[Mapping[str, int]] = None,
    *,
    min_freq: int = 0,
    languages: Sequence[str] = ("en",),
    blocklist: Iterable[str] = (),
    allowlist: Iterable[str] = (),
    p31_blocklist: Iterable[str] = (),
    counted_on: Optional[Mapping[str, Any]] = None,
    display_languages: Optional[Sequence[str]] = None,
) -> LabelSet:
    """A small label set in memory from item records (for tests and tools).

    :param records: dicts like ``{"qid": "Q146", "label": "house cat", "description": "...",
        "image": "", "aliases": [], "p31": ["Q55983715"], "p279": ["Q39201"]}`` (only ``qid``
        is required; QIDs as strings; ``"properties": ["P569"]`` names other properties the
        item has statements for, which matter only for a person without P31) or
        :class:`ItemFields`.
    :param counts: direct depicts counts by QID. Without counts every record is an input and,
        with ``min_freq <= 0``, every record with a label is kept. A count of 0 marks an item
        that is depicted somewhere but not in the files counted (e.g. only outside the
        training split): it may be kept through its descendants' counts; an item missing
        from ``counts`` is never depicted and is never kept with f >= 1 (§3.1).
    :param min_freq: threshold f; with counts and f >= 1 the §3.2 rules apply.
    :param languages: recorded in the manifest.
    :param blocklist: QIDs never kept; ``allowlist``: QIDs kept despite their P31 class.
    :param p31_blocklist: non-depictable classes (none by default: every record counts; pass
        ``wikivel_bot.labels.lists.default_p31_blocklist()`` numbers as "Q..." to apply them).
    :param counted_on: recorded in the manifest (see :func:`assemble`).
    :param display_languages: recorded in the manifest (default: the languages of the
        records' ``texts``, ``[{"lang", "label", "description"}, ...]``).
    """
    blocked = frozenset(qid_number(q) for q in p31_blocklist)
    fields = [_as_fields(record, blocked) for record in records]
    qids = np.asarray([f.qid for f in fields], dtype=np.int64)
    if counts is None:
        inputs, direct = qids, np.zeros(qids.size, dtype=np.int64)
    else:
        pairs = [(qid_number(q), int(c)) for q, c in counts.items() if int(c) >= 0]
        inputs = np.asarray([p[0] for p in pairs], dtype=np.int64)
        direct = np.asarray([p[1] for p in pairs], dtype=np.int64)
    collected = Collected(texts=texts_table(fields), edges=edges_of(fields), inputs=inputs, direct=direct,
                          instance_edges=instance_edges_of(fields))
    if display_languages is None:
        display_languages = list(dict.fromkeys(t["lang"] for f in fields for t in f.texts))
    return assemble(
        collected,
        min_freq=min_freq,
        languages=languages,
        display_languages=display_languages,
        with_aliases=any(f.aliases for f in fields),
        p31_blocklist=blocked,
        blocklist=[qid_number(q) for q in blocklist],
        allowlist=[qid_number(q) for q in allowlist],
        sources=[{"kind": "records", "items": len(fields)}],
        counted_on=counted_on,
    )


def _as_fields(record: Record, p31_blocklist: FrozenSet[int] = frozenset()) -> ItemFields:
    if isinstance(record, ItemFields):
        return record
    fields = ItemFields(
        qid=qid_number(str(record["qid"])),
        label=str(record.get("label", "")),
        label_lang=str(record.get("label_lang", "en" if record.get("label") else "")),
        description=str(record.get("description", "")),
        description_lang=str(record.get("description_lang", "en" if record.get("description") else "")),
        image=str(record.get("image", "")),
        aliases=[str(a) for a in record.get("aliases", ())],
        p31=[qid_number(str(q)) for q in record.get("p31", ())],
        p279=[qid_number(str(q)) for q in record.get("p279", ())],
        texts=[{"lang": str(t["lang"]), "label": str(t.get("label", "")),
                "description": str(t.get("description", ""))} for t in record.get("texts", ())],
    )
    fields.blocked_by = next((q for q in fields.p31 if q in p31_blocklist), 0)
    if not fields.p31:
        fields.person_properties = person_property_bits({pid: [{}] for pid in record.get("properties", ())})
    return fields
