"""What ``suggest`` reads: each argument becomes an image to link, or its own error.

A local path is read only when its group is linked; Commons sources (``File:`` titles,
``M123`` ids, URLs, ``-cat:``-style generator arguments) come from
``wikivel_bot.commons.sources``. A bad argument never stops the others: it becomes a
:class:`Failed` with one line naming it, in input order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Sequence

from wikivel_bot.config import Settings
from wikivel_bot.core.titles import FILE_PREFIXES
from wikivel_bot.errors import UsageError
from wikivel_bot.types import Depiction, MediaFile


@dataclass(frozen=True)
class Ready:
    """An image to link: its file and how to get its bytes (read when its group is linked)."""

    source: str
    media: MediaFile
    load: Callable[[], bytes]
    pixels: int


@dataclass(frozen=True)
class Failed:
    """An argument that gives no image, and why (one line)."""

    source: str
    reason: str
    usage: bool = True  # the argument itself is wrong (exit 2), not the file behind it


def _local_path(source: str) -> Optional[Path]:
    """The file a source names on this machine, or None (a title, or nothing at all)."""
    try:
        path = Path(source).expanduser()
        return path if path.is_file() else None
    except (OSError, ValueError):
        # "File name too long" and embedded NUL bytes: not a local file.
        return None


def _is_commons(source: str) -> bool:
    from wikivel_bot.types import is_mid

    text = source.strip()
    return (text.lower().startswith(FILE_PREFIXES + ("http://", "https://"))
            or (text.startswith("-") and not text.startswith("--")) or is_mid(text, any_case=True))


def iter_inputs(
    sources: Sequence[str],
    settings: Settings,
    *,
    depicts: Sequence[str] = (),
    description: str = "",
    categories: Sequence[str] = (),
) -> Iterator[Any]:
    """:class:`Ready` or :class:`Failed` for each source, in input order (files of
    generator arguments last).

    :param depicts: QIDs a local file already depicts; ``description`` and ``categories``
        describe it too (a local file has no page).
    :raises WikiError: the wiki failed for every Commons source (it cannot be reached).
    """
    from wikivel_bot.linker.backbone.decode_budget import header_pixels

    remote = [s for s in sources if _local_path(s) is None and _is_commons(s)]
    fetched = _commons(remote, settings) if remote else iter(())
    for source in sources:
        path = _local_path(source)
        if path is not None:
            media = MediaFile(page_id=0, title=path.name, description=description,
                              categories=tuple(categories), depicts=tuple(Depiction(q) for q in depicts))
            yield Ready(source, media, _reader(path), header_pixels(path))
        elif source.startswith("--"):
            yield Failed(source, f"no such option: {source} (see wikivel-bot suggest --help)")
        elif _is_commons(source):
            if source.startswith("-"):
                continue  # generator arguments: their files come after the named sources
            yield _next_named(fetched, source)
        else:
            yield Failed(source, f"no such image file: {source} (or give File:Name.jpg, M123, a Commons URL, or -cat:...)")
    for item in fetched:
        yield item


def _next_named(fetched: Iterator[Any], source: str) -> Any:
    item = next(fetched, None)
    if item is None:  # pragma: no cover - iter_sources answers every named source
        return Failed(source, f"{source}: no answer from the wiki", usage=False)
    return item


def _commons(sources: List[str], settings: Settings) -> Iterator[Any]:
    from wikivel_bot.commons.sources import SourceFailed, iter_sources
    from wikivel_bot.linker.backbone.decode_budget import header_pixels

    for source, result in iter_sources(sources, settings):
        if isinstance(result, SourceFailed):
            yield Failed(source, result.reason, usage=result.usage)
        else:
            media, data = result
            yield Ready(source, media, _holder(data), header_pixels(data))


def _holder(data: bytes) -> Callable[[], bytes]:
    """A thumbnail already downloaded (small: a thumbnail step, not the original)."""
    return lambda: data


def _reader(path: Path) -> Callable[[], bytes]:
    def load() -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None

    return load
