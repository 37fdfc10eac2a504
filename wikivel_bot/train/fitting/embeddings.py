"""Frozen-encoder embeddings, computed once per (backbone, weights, data) and kept on disk.

With the CLIP encoders frozen (naive-mlp, fusion; the image side of naive-te) a training
run only needs each image and each text encoded once: a head then trains on cached vectors
in minutes instead of re-reading 800,000 images every epoch (the IO overhead §4.4 names).

Layout under the cache directory::

    train-embeddings/<name>-<key digest>/vectors.npy    (n, d) float16, L2-normalised
    train-embeddings/<name>-<key digest>/present.npy    (n,) bool: False where the input
                                                        was missing or undecodable
    train-embeddings/<name>-<key digest>/manifest.json  the key, shape, build time

The key holds everything the vectors depend on (open_clip model config and weights, the
data's hash, the image store's fingerprint, the text template), so any change builds a new
directory and unchanged inputs are reused across runs. A directory appears only complete
(built aside, then renamed).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.errors import FileUnavailable, LinkerError
from wikivel_bot.linker.index import key_digest

FORMAT = 1
# Images decoded and encoded per step; decoding runs on threads (Pillow releases the GIL).
IMAGE_CHUNK = 256


@dataclass(frozen=True)
class Embeddings:
    """Cached vectors.

    :param vectors: (n, d) float16, memory-mapped.
    :param present: (n,) bool.
    :param path: the directory.
    :param reused: True when found in the cache, False when built by this call.
    """

    vectors: np.ndarray
    present: np.ndarray
    path: Path
    reused: bool


def backbone_key(backbone: Any) -> Dict[str, Any]:
    """What a backbone contributes to every key (``encoders.Backbone``)."""
    return {"model": backbone.model_name, "model_config": backbone.config_digest, "weights": backbone.weights}


def cached(
    cache_dir: Path, name: str, key: Mapping[str, Any], n: int, dim: int,
    build: Callable[[np.ndarray, np.ndarray], None],
) -> Embeddings:
    """Open the vectors for ``key`` or build them with ``build(vectors, present)``.

    :param cache_dir: cache root.
    :param name: a readable prefix (``images``, ``item-texts``...).
    :param key: plain JSON data identifying the content.
    :param n: rows; :param dim: embedding size.
    :param build: fills a writable (n, dim) float16 array and an (n,) bool array.
    :raises LinkerError: the cache cannot be written.
    """
    plain = json.loads(json.dumps({"format": FORMAT, **key}, sort_keys=True, default=str))
    target = Path(cache_dir) / "train-embeddings" / f"{name}-{key_digest(plain)}"
    found = _open(target, plain, n, dim)
    if found is not None:
        return Embeddings(found[0], found[1], target, reused=True)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    except OSError as exc:
        raise LinkerError(f"cannot write the embedding cache under {cache_dir}: {exc.strerror or exc}") from None
    try:
        started = time.perf_counter()
        vectors = np.lib.format.open_memmap(tmp / "vectors.npy", mode="w+", dtype=np.float16, shape=(n, dim))
        present = np.zeros(n, dtype=bool)
        build(vectors, present)
        vectors.flush()
        del vectors
        np.save(tmp / "present.npy", present)
        manifest = {"key": plain, "n": n, "dim": dim, "present": int(present.sum()),
                    "build_seconds": round(time.perf_counter() - started, 3)}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    found = _open(target, plain, n, dim)
    if found is None:  # pragma: no cover - only a concurrent rm gets here
        raise LinkerError(f"embedding cache {target} vanished right after it was built")
    return Embeddings(found[0], found[1], target, reused=False)


def _open(target: Path, key: Mapping[str, Any], n: int, dim: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    try:
        manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("key") != key or manifest.get("n") != n or manifest.get("dim") != dim:
            return None
        vectors = np.load(target / "vectors.npy", mmap_mode="r")
        present = np.load(target / "present.npy")
    except (OSError, ValueError):
        return None
    if vectors.shape != (n, dim) or present.shape != (n,):
        return None
    return vectors, present


def image_embeddings(
    backbone: Any, page_ids: Sequence[int], titles: Sequence[str], store: Any, cache_dir: Path, data_key: str,
    *, batch_size: int = 64, threads: int = 4, progress: bool = False, name: str = "images",
) -> Embeddings:
    """Image embeddings of files, in the given order (absent where the store has no image).

    :param backbone: the open_clip backbone (``encoders.Backbone``).
    :param page_ids: the files' page ids; :param titles: their titles (fallback lookup).
    :param store: an ``ImageStore`` (``get(page_id, title)``).
    :param cache_dir: cache root.
    :param data_key: identity of the file list (the dataset's manifest hash).
    :param batch_size: images per forward pass.
    :param threads: decoding threads.
    :param progress: show a progress bar.
    :param name: cache name prefix.
    """
    key = {**backbone_key(backbone), "kind": name, "data": data_key, "store": store.identity,
           "n": len(page_ids)}

    def build(vectors: np.ndarray, present: np.ndarray) -> None:
        def load(i: int) -> Any:
            data = store.get(int(page_ids[i]), titles[i])
            return _decode(data, backbone.image_size)

        _encode_images(backbone, len(page_ids), load, vectors, present, batch_size, threads, progress, name)

    return cached(cache_dir, name, key, len(page_ids), backbone.embed_dim, build)


def named_image_embeddings(
    backbone: Any, names: Sequence[str], store: Any, cache_dir: Path, *, batch_size: int = 64,
    threads: int = 4, progress: bool = False, name: str = "item-images",
) -> Embeddings:
    """Image embeddings of files given by name (items' P18 images); '' means no image."""
    key = {**backbone_key(backbone), "kind": name, "names": key_digest({"names": list(names)}),
           "store": store.identity if store is not None else "none"}

    def build(vectors: np.ndarray, present: np.ndarray) -> None:
        def load(i: int) -> Any:
            if store is None or not names[i]:
                return None
            return _decode(store.get_name(names[i]), backbone.image_size)

        _encode_images(backbone, len(names), load, vectors, present, batch_size, threads, progress, name)

    return cached(cache_dir, name, key, len(names), backbone.embed_dim, build)


def _decode(data: Optional[bytes], side: int) -> Any:
    from wikivel_bot.linker.backbone.images import decode_image

    if not data:
        return None
    try:
        return decode_image(data, min_side=side)
    except FileUnavailable:
        return None


def _encode_images(backbone: Any, n: int, load: Callable[[int], Any], vectors: np.ndarray, present: np.ndarray,
                   batch_size: int, threads: int, progress: bool, desc: str) -> None:
    from tqdm import tqdm

    from wikivel_bot.linker.backbone.encoders import encode_images

    bar = tqdm(total=n, desc=f"embed {desc}", unit="img", disable=not progress)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for start in range(0, n, IMAGE_CHUNK):
            rows = list(range(start, min(start + IMAGE_CHUNK, n)))
            decoded = list(pool.map(load, rows))
            ok = [r for r, image in zip(rows, decoded) if image is not None]
            if ok:
                images = [decoded[r - start] for r in ok]
                vectors[ok] = encode_images(backbone, images, batch_size).float().cpu().numpy().astype(np.float16)
                present[ok] = True
            bar.update(len(rows))
    bar.close()


def text_embeddings(
    backbone: Any, texts: Sequence[str], cache_dir: Path, *, name: str, progress: bool = False,
) -> Embeddings:
    """Text embeddings in the given order; an empty text is absent (its row stays zero).

    :param backbone: the backbone.
    :param texts: the texts (item texts rendered from a template, or file texts).
    :param cache_dir: cache root.
    :param name: cache name prefix (``item-texts``, ``file-texts``).
    :param progress: show a progress bar.
    """
    key = {**backbone_key(backbone), "kind": name, "texts": key_digest({"texts": list(texts)}), "n": len(texts)}

    def build(vectors: np.ndarray, present: np.ndarray) -> None:
        from tqdm import tqdm

        from wikivel_bot.linker.backbone.text_tower import encode_texts

        rows = [i for i, t in enumerate(texts) if t]
        bar = tqdm(total=len(rows), desc=f"embed {name}", unit="text", disable=not progress)
        block = 65_536
        for start in range(0, len(rows), block):
            chunk: List[int] = rows[start:start + block]
            encoded = encode_texts(backbone, [texts[i] for i in chunk], progress=bar)
            vectors[chunk] = encoded.float().cpu().numpy().astype(np.float16)
            present[chunk] = True
        bar.close()

    return cached(cache_dir, name, key, len(texts), backbone.embed_dim, build)
