"""Image bytes for the dataset: tar shards we write, the published dataset's tars, loose files.

Shards follow the WebDataset convention the published Wiki-VEL dataset uses
(``commons_images/{train,validation,test}/NN.tar``, members ``<page id>.jpg`` or ``.png``,
the page id being the sample's ``__key__``), so one reader serves both: point ``--images``
at our ``images/`` directory, at the published ``commons_images/`` directory, or at a
directory of loose files named by page id (``123.jpg``) or by file name (``Red fox.jpg``).

A shard appears only complete: it is written as ``.tar.tmp`` and renamed, so an interrupted
fetch loses at most the shard in progress, and a re-run (which reads the keys of the
finished shards) never downloads a file twice.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
import threading
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

from wikivel_bot.errors import UsageError
from wikivel_bot.train.data.filenames import file_name

SHARD_NAME = re.compile(r"^shard-(\d{6})\.tar$")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".svg", ".webp", ".gif", ".tif", ".tiff")
# WebDataset members that describe a sample rather than hold its image.
_METADATA_SUFFIXES = (".json", ".txt", ".cls", ".cbor")


def image_extension(data: bytes) -> str:
    """``jpg``, ``png``, ``gif``, ``webp`` from the bytes' magic number (``bin`` otherwise)."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return "bin"


class ShardWriter:
    """Appends images to numbered tar shards in a directory, ``shard_size`` per shard.

    :param directory: where ``shard-000000.tar``, ``shard-000001.tar``... go (created).
    :param shard_size: images per shard (a shard is held in memory until it is written).
    """

    def __init__(self, directory: Path, shard_size: int = 1000) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.shard_size = max(1, shard_size)
        numbers = [int(m.group(1)) for p in self.directory.iterdir() if (m := SHARD_NAME.match(p.name))]
        self._next = max(numbers, default=-1) + 1
        self._pending: List[Tuple[str, bytes]] = []
        self.written = 0

    def add(self, key: str, data: bytes, extension: str = "") -> None:
        """Queue one image as member ``<key>.<extension>`` (extension from the bytes if '')."""
        self._pending.append((f"{key}.{extension or image_extension(data)}", data))
        if len(self._pending) >= self.shard_size:
            self.flush()

    def flush(self) -> Optional[Path]:
        """Write the queued images as one complete shard; None when nothing was queued."""
        if not self._pending:
            return None
        target = self.directory / f"shard-{self._next:06d}.tar"
        tmp = target.with_name(target.name + ".tmp")
        with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
            for name, data in self._pending:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mtime = 0  # same bytes in, same shard out
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, target)
        self.written += len(self._pending)
        self._pending = []
        self._next += 1
        return target

    def close(self) -> None:
        """Write what is queued (a last, smaller shard)."""
        self.flush()

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(name: str) -> str:
    # WebDataset: the key is the member path up to the first dot of its last component.
    base = name.rsplit("/", 1)[-1]
    return base.split(".", 1)[0]


def tar_members(path: Path) -> Iterator[Tuple[str, int, int]]:
    """(member name, data offset, size) of the regular files in an uncompressed tar."""
    with tarfile.open(path, "r:") as tar:
        for member in tar:
            if member.isfile():
                yield member.name, member.offset_data, member.size


def shard_keys(directory: Path) -> Set[str]:
    """Keys of every image in the finished shards of ``directory`` (none if it is missing)."""
    directory = Path(directory)
    if not directory.is_dir():
        return set()
    keys: Set[str] = set()
    for path in sorted(directory.glob("shard-*.tar")):
        keys.update(_key(name) for name, _, _ in tar_members(path))
    return keys


def _walk(root: Path) -> List[Path]:
    """Every file below ``root``, sorted, following directory symlinks (an imported published
    dataset links its ``commons_images`` there rather than copying hundreds of GB)."""
    found: List[Path] = []
    for directory, _, names in os.walk(root, followlinks=True):
        found.extend(Path(directory) / name for name in names)
    return sorted(p for p in found if p.is_file())


class ImageStore:
    """Read-only lookup of image bytes by page id or file name under one directory.

    Every ``*.tar`` below ``root`` is indexed by member key (the page id in our shards and
    in the published dataset); other image files by stem and by name. Reads are positional
    (``os.pread``), so several decoding threads can share the store.

    :param root: the directory.
    :raises UsageError: ``root`` is not a directory.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._fds: Dict[int, int] = {}
        self._lock = threading.Lock()
        if not self.root.is_dir():
            raise UsageError(f"image directory not found: {self.root}")
        self._members: Dict[str, Tuple[int, int, int]] = {}
        self._files: Dict[str, Path] = {}
        self._tars: List[Path] = []
        fingerprint = hashlib.sha256()
        for path in _walk(self.root):
            stat = path.stat()
            if path.suffix == ".tar":
                number = len(self._tars)
                self._tars.append(path)
                for name, offset, size in tar_members(path):
                    if name.lower().endswith(_METADATA_SUFFIXES):
                        continue  # the published shards hold <key>.json beside <key>.jpg
                    self._members.setdefault(_key(name), (number, offset, size))
            elif path.suffix.lower() in IMAGE_SUFFIXES:
                self._files.setdefault(path.stem, path)
                self._files.setdefault(file_name(path.name), path)
            else:
                continue
            fingerprint.update(f"{path.relative_to(self.root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        self.identity = fingerprint.hexdigest()[:20]

    def __len__(self) -> int:
        return len(self._members) + len(set(self._files.values()))

    def get(self, page_id: int, title: str = "") -> Optional[bytes]:
        """The image of a file, or None when the store has none.

        :param page_id: Commons page id (the shard key).
        :param title: ``File:Name.jpg``, tried when no entry has the page id.
        """
        key = str(page_id)
        found = self._members.get(key)
        if found is not None:
            number, offset, size = found
            return os.pread(self._fd(number), size, offset)
        path = self._files.get(key) or (self._files.get(file_name(title)) if title else None)
        if path is None:
            return None
        return path.read_bytes()

    def get_name(self, name: str) -> Optional[bytes]:
        """An image by file name only (item P18 images: ``Name.jpg`` without ``File:``)."""
        path = self._files.get(file_name(name))
        return path.read_bytes() if path is not None else None

    def _fd(self, number: int) -> int:
        with self._lock:
            fd = self._fds.get(number)
            if fd is None:
                fd = self._fds[number] = os.open(self._tars[number], os.O_RDONLY)
            return fd

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except OSError:
            return
