"""The label index: item embeddings cached on disk, computed once per (linker, weights, label set).

Layout under ``cache_dir``::

    label-index/<linker>-<key digest>/embeddings.npy   (items × dim, float16, label-set order)
    label-index/<linker>-<key digest>/manifest.json    (the key, shape, build time)
    label-index/<linker>-<key digest>.lock             (held while building)

The digest covers everything the embeddings depend on (linker config, open_clip model config
and weights, head checkpoint, label-set content hash, item texts template, item images), so a
change of any of them means a new directory, i.e. a rebuild; unchanged inputs reuse the files
across runs and processes. A directory appears only complete (built in a temporary directory,
then renamed), and a lock keeps two processes from building the same index at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Mapping

import numpy as np

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import LinkerError

INDEX_FORMAT = 1
EMBEDDINGS = "embeddings.npy"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class CachedIndex:
    """A label index on disk, opened read-only (memory-mapped).

    :param embeddings: (items, dim) float16 array, memory-mapped.
    :param manifest: the manifest (key, items, dim, build_seconds, created).
    :param path: its directory.
    :param reused: True when it was already there, False when built by this call.
    """

    embeddings: np.ndarray
    manifest: Mapping[str, Any]
    path: Path
    reused: bool


def key_digest(key: Mapping[str, Any]) -> str:
    """Stable short hash of an index key (JSON with sorted keys)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]


def index_dir(cache_dir: str | Path, name: str, key: Mapping[str, Any]) -> Path:
    """Where the index for ``key`` lives."""
    return Path(cache_dir) / "label-index" / f"{name}-{key_digest(key)}"


def load_or_build(
    cache_dir: str | Path,
    name: str,
    key: Mapping[str, Any],
    items: int,
    dim: int,
    build: Callable[[np.ndarray], None],
) -> CachedIndex:
    """Open the cached index for ``key``, building it first when missing or damaged.

    :param cache_dir: cache root (``linker.cache_dir``).
    :param name: linker name, for readable directory names.
    :param key: everything the embeddings depend on (plain JSON data).
    :param items: number of items expected.
    :param dim: embedding size expected.
    :param build: fills a writable (items, dim) float16 array in label-set order.
    :raises LinkerError: the cache directory cannot be written.
    """
    # Round-trip through JSON so the comparison with a stored manifest is like for like.
    plain: Dict[str, Any] = json.loads(json.dumps(key, sort_keys=True, default=str))
    target = index_dir(cache_dir, name, plain)
    found = _open_valid(target, plain, items, dim)
    if found is not None:
        return CachedIndex(found[0], found[1], target, reused=True)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LinkerError(f"cannot create the label index cache {target.parent}: {exc.strerror}") from None
    with _locked(target.parent / (target.name + ".lock")):
        # Another process may have built it while we waited for the lock.
        found = _open_valid(target, plain, items, dim)
        if found is not None:
            return CachedIndex(found[0], found[1], target, reused=True)
        _build_into(target, plain, items, dim, build)
    found = _open_valid(target, plain, items, dim)
    if found is None:  # pragma: no cover - only a concurrent rm -rf gets here
        raise LinkerError(f"label index {target} vanished right after it was built")
    return CachedIndex(found[0], found[1], target, reused=False)


def _build_into(target: Path, key: Dict[str, Any], items: int, dim: int, build: Callable[[np.ndarray], None]) -> None:
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    try:
        started = time.perf_counter()
        array = np.lib.format.open_memmap(tmp / EMBEDDINGS, mode="w+", dtype=np.float16, shape=(items, dim))
        build(array)
        array.flush()
        del array
        manifest = {
            "format": INDEX_FORMAT,
            "key": key,
            "digest": key_digest(key),
            "items": items,
            "dim": dim,
            "dtype": "float16",
            "build_seconds": round(time.perf_counter() - started, 3),
            "created": format_timestamp(),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        if target.exists():
            # A damaged leftover (we hold the lock, and it failed validation).
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as exc:
        raise LinkerError(f"cannot write the label index {target}: {exc}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _open_valid(target: Path, key: Mapping[str, Any], items: int, dim: int) -> Any:
    """(memmap, manifest) when ``target`` holds a complete index for ``key``, else None."""
    try:
        manifest = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("format") != INDEX_FORMAT or manifest.get("key") != key:
            return None
        if manifest.get("items") != items or manifest.get("dim") != dim:
            return None
        embeddings = np.load(target / EMBEDDINGS, mmap_mode="r")
    except (OSError, ValueError):
        return None
    if embeddings.shape != (items, dim) or embeddings.dtype != np.float16:
        return None
    return embeddings, manifest


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no cross-process lock, rename still atomic
        yield
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
