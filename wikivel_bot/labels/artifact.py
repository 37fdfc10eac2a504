"""The label-set artifact: a directory of columnar files and a JSON manifest.

Layout (format version 2; version 1 sets load too, see below)::

    manifest.json            format, content hash, languages, f, sources, counts
    items.arrow              the kept items in index order (Arrow IPC file, uncompressed)
    nodes.arrow              every item the set knows: kept ones first (node i = item i),
                             then depicted-but-not-kept items and ancestors; counts, outcome
    closure_offsets.npy      ancestors within 3 hops of every node, CSR over node numbers
    closure_ancestors.npy    (see ``hierarchy.py``)
    closure_hops.npy
    replaced_offsets.npy     replacements of depicted items that were not kept, CSR
    replaced_by.npy
    files.arrow              optional: every file's depicts after filtering
    instance_offsets.npy     optional: the P31 (instance of) targets of every node, CSR over
    instance_of.npy          node numbers; the safety rules tell instances of human (people)
                             from its subclasses with them. Sets written before they were
                             added load without them (``LabelSet.has_instance_of`` is False).
    parent_offsets.npy       since version 2: the direct P31 ∪ P279 parents of every node, CSR,
    parents.npy              with the nodes up to the top of the graph: the safety rules' "under
                             a class" at any depth (``closure.py``). Version 1 sets: the
                             parents within their 3-hop closure are used instead.
    person_properties.npy    since version 2: per node, a bitmask of the person-only properties
                             (``core.safety.PERSON_PROPERTIES``) of an item without P31 (0 for
                             items with P31); version 1 sets: unknown, the rule is not applied.
    texts.arrow              optional: labels and descriptions of the kept items in the display
                             languages (``texts.py``); not in the content hash, which covers
                             what the linker reads, but under its own ``texts_hash``.

Arrow IPC files and ``.npy`` arrays are memory-mapped on load, so a set of millions of items
opens in milliseconds and pages in only what is used. The content hash covers everything
that defines the set (not the build time or the dumps' paths), so the same input always
gives the same hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pyarrow as pa

from wikivel_bot.errors import LabelSetError

FORMAT = "wikivel-labelset"
FORMAT_VERSION = 2
# Versions this code reads: version 1 lacks the version-2 optional arrays (treated as unknown).
READABLE_VERSIONS = (1, 2)
MANIFEST = "manifest.json"

ITEMS_SCHEMA = pa.schema(
    [
        ("qid", pa.int64()),
        ("label", pa.string()),
        ("label_lang", pa.string()),
        ("description", pa.string()),
        ("description_lang", pa.string()),
        ("image", pa.string()),
        ("aliases", pa.list_(pa.string())),
        ("direct_count", pa.int64()),
        ("accumulated_count", pa.int64()),
        ("super_category", pa.string()),
    ]
)
NODES_SCHEMA = pa.schema(
    [
        ("qid", pa.int64()),
        ("label", pa.string()),
        ("direct_count", pa.int64()),
        ("accumulated_count", pa.int64()),
        ("status", pa.int8()),
        ("reason", pa.int8()),
        ("blocked_by", pa.int64()),
        ("super_category", pa.int8()),
    ]
)
TEXTS_SCHEMA = pa.schema(
    [("item", pa.int32()), ("lang", pa.string()), ("label", pa.string()), ("description", pa.string())]
)
FILES_SCHEMA = pa.schema(
    [("page_id", pa.int64()), ("qid", pa.int64()), ("rank", pa.int8()), ("source_qid", pa.int64())]
)
_ARRAYS = ("closure_offsets", "closure_ancestors", "closure_hops", "replaced_offsets", "replaced_by")
# Optional arrays, in groups that come together: written when present, hashed when present
# (so the hash of a set without them is what it always was), absent from older sets.
OPTIONAL_GROUPS: Dict[str, Tuple[str, ...]] = {
    "instance-of": ("instance_offsets", "instance_of"),
    "parents": ("parent_offsets", "parents"),
    "person properties": ("person_properties",),
}
OPTIONAL_ARRAYS = tuple(name for group in OPTIONAL_GROUPS.values() for name in group)


@dataclass
class LabelSetData:
    """Everything a label set consists of, in memory or memory-mapped."""

    items: pa.Table
    nodes: pa.Table
    arrays: Dict[str, np.ndarray]
    manifest: Dict[str, Any] = field(default_factory=dict)
    files: Optional[pa.Table] = None
    # Display-language texts (``texts.py``); None for sets written before them.
    texts: Optional[pa.Table] = None


def content_hash(data: LabelSetData) -> str:
    """sha256 over the canonical content: definition keys, every column, every array."""
    digest = hashlib.sha256()
    definition = {key: data.manifest.get(key) for key in ("languages", "min_freq", "max_hops", "with_aliases")}
    # The version the set records: an older set keeps its hash (and verifies) under this code.
    version = data.manifest.get("format_version", FORMAT_VERSION)
    digest.update(json.dumps({"format_version": version, **definition}, sort_keys=True).encode())
    tables = [("items", data.items), ("nodes", data.nodes)]
    if data.files is not None:
        tables.append(("files", data.files))
    for name, table in tables:
        for column_name in table.column_names:
            digest.update(f"{name}.{column_name}".encode())
            _hash_array(digest, table.column(column_name).combine_chunks())
    for name in _ARRAYS + tuple(n for n in OPTIONAL_ARRAYS if n in data.arrays):
        array = np.ascontiguousarray(data.arrays[name])
        digest.update(f"{name}:{array.dtype.str}".encode())
        digest.update(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
    return "sha256:" + digest.hexdigest()


def texts_hash(table: pa.Table) -> str:
    """sha256 over the display texts (the manifest's ``texts_hash``)."""
    digest = hashlib.sha256()
    for column_name in table.column_names:
        digest.update(f"texts.{column_name}".encode())
        _hash_array(digest, table.column(column_name).combine_chunks())
    return "sha256:" + digest.hexdigest()


def _hash_array(digest: Any, array: pa.Array) -> None:
    digest.update(f"{array.type}[{len(array)}]".encode())
    if len(array) == 0:
        return
    if pa.types.is_list(array.type):
        lengths = np.asarray(array.value_lengths().fill_null(0), dtype="<i8")
        digest.update(lengths.tobytes())
        _hash_array(digest, array.flatten())
    elif pa.types.is_string(array.type):
        # Byte lengths, then the bytes: unambiguous whatever the strings contain.
        offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + len(array) + 1]
        digest.update(np.diff(offsets).astype("<i8").tobytes())
        data = array.buffers()[2]
        if data is not None and len(offsets):
            digest.update(memoryview(data)[int(offsets[0]) : int(offsets[-1])])
    else:
        values = array.fill_null(0).to_numpy(zero_copy_only=False)
        digest.update(values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes())


def write_artifact(data: LabelSetData, out_dir: Path, overwrite: bool = False) -> Path:
    """Write the set to ``out_dir`` atomically (a temporary sibling renamed into place).

    :param overwrite: replace an existing label set there; otherwise an existing non-empty
        directory is an error.
    :raises LabelSetError: the directory exists and is not empty, or cannot be written.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise LabelSetError(f"{out_dir} exists and is not empty (use --force to replace it)")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        # mkdtemp makes the directory private (0700); a label set is ordinary shared data.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        _write_table(tmp / "items.arrow", data.items)
        _write_table(tmp / "nodes.arrow", data.nodes)
        if data.files is not None:
            _write_table(tmp / "files.arrow", data.files)
        if data.texts is not None:
            _write_table(tmp / "texts.arrow", data.texts)
        for name in _ARRAYS + tuple(n for n in OPTIONAL_ARRAYS if n in data.arrays):
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(data.arrays[name]), allow_pickle=False)
        (tmp / MANIFEST).write_text(json.dumps(data.manifest, indent=2, sort_keys=True) + "\n", "utf-8")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise LabelSetError(f"cannot write the label set to {out_dir}: {exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _write_table(path: Path, table: pa.Table) -> None:
    # Uncompressed IPC so that loading is a memory map, not a decode.
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=1 << 20)


def read_manifest(path: Path) -> Dict[str, Any]:
    """The manifest of the label set in ``path``.

    :raises LabelSetError: no label set there, or a manifest of another format/version.
    """
    manifest_path = Path(path) / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text("utf-8"))
    except FileNotFoundError:
        raise LabelSetError(f"{path} is not a label set (no {MANIFEST}); build one with "
                            f"'wikivel-bot labels build'") from None
    except (OSError, ValueError) as exc:
        raise LabelSetError(f"{manifest_path}: unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise LabelSetError(f"{manifest_path}: not a wikivel-bot label set manifest")
    if manifest.get("format_version") not in READABLE_VERSIONS:
        raise LabelSetError(
            f"{path}: label set format version {manifest.get('format_version')} is not "
            f"supported (this wikivel-bot reads versions {', '.join(map(str, READABLE_VERSIONS))}); rebuild it"
        )
    return manifest


def read_artifact(path: Path, verify: bool = False) -> LabelSetData:
    """Open the label set in ``path`` (memory-mapped).

    :param verify: recompute the content hash and compare it with the manifest's.
    :raises LabelSetError: missing, unreadable or inconsistent files; hash mismatch.
    """
    path = Path(path)
    manifest = read_manifest(path)
    try:
        items = _read_table(path / "items.arrow")
        nodes = _read_table(path / "nodes.arrow")
        files = _read_table(path / "files.arrow") if (path / "files.arrow").exists() else None
        texts = _read_table(path / "texts.arrow") if (path / "texts.arrow").exists() else None
        arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
        for name in OPTIONAL_ARRAYS:
            if (path / f"{name}.npy").exists():
                arrays[name] = np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise LabelSetError(f"{path}: corrupt label set: {exc}") from None
    data = LabelSetData(items=items, nodes=nodes, arrays=arrays, manifest=manifest, files=files, texts=texts)
    _check_shapes(path, data)
    if verify and content_hash(data) != manifest.get("content_hash"):
        raise LabelSetError(f"{path}: content does not match the manifest's hash (files changed?)")
    if verify and texts is not None and texts_hash(texts) != manifest.get("texts_hash"):
        raise LabelSetError(f"{path}: texts.arrow does not match the manifest's texts_hash (files changed?)")
    return data


def _read_table(path: Path) -> pa.Table:
    source = pa.memory_map(str(path), "r")
    return pa.ipc.open_file(source).read_all()


def _check_shapes(path: Path, data: LabelSetData) -> None:
    n_nodes = data.nodes.num_rows
    checks: Tuple[Tuple[bool, str], ...] = (
        (data.items.schema.equals(ITEMS_SCHEMA), "items.arrow has an unexpected schema"),
        (data.nodes.schema.equals(NODES_SCHEMA), "nodes.arrow has an unexpected schema"),
        (data.items.num_rows <= n_nodes, "more items than nodes"),
        (data.arrays["closure_offsets"].shape == (n_nodes + 1,), "closure offsets do not match the nodes"),
        (data.arrays["replaced_offsets"].shape == (n_nodes + 1,), "replacement offsets do not match the nodes"),
        (data.arrays["closure_ancestors"].shape == data.arrays["closure_hops"].shape,
         "closure arrays differ in length"),
    )
    if data.texts is not None:
        checks += ((data.texts.schema.equals(TEXTS_SCHEMA), "texts.arrow has an unexpected schema"),)
    for group, names in OPTIONAL_GROUPS.items():
        if any(name in data.arrays for name in names):
            checks += ((all(name in data.arrays for name in names), f"{group} arrays incomplete"),)
    for name, shape in (("instance_offsets", (n_nodes + 1,)), ("parent_offsets", (n_nodes + 1,)),
                        ("person_properties", (n_nodes,))):
        if name in data.arrays:
            checks += ((data.arrays[name].shape == shape, f"{name}.npy does not match the nodes"),)
    for ok, message in checks:
        if not ok:
            raise LabelSetError(f"{path}: corrupt label set: {message}")
