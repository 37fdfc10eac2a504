"""Streaming the Commons pages dump: file pages' titles and wikitext, then description and
categories parsed with mwparserfromhell (paper §3.1).

The dump is MediaWiki's XML export (``commonswiki-YYYYMMDD-pages-articles.xml.bz2``, or the
``-multistream`` variant): ``<page>`` elements with ``<title>``, ``<ns>``, ``<id>`` and the
latest ``<revision><text>``. It is read with ``xml.etree.ElementTree.iterparse`` from the
same decompressing stream as the JSON dumps (``labels.dump_reader.DumpStream``: bz2, gzip or
plain, parallel bzip2 when installed), clearing each page once read, so memory stays flat
whatever the dump's size. Only File-namespace pages whose id is wanted are parsed; parsing
the wikitext (the slow part) can run in worker processes.

Categories come from the wikitext's ``[[Category:...]]`` links; categories that templates add
(license templates, ``{{Uploaded by ...}}``) are not in the wikitext and so never appear,
which is the side of the paper's filtering one would want anyway.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    Callable,
    Deque,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    cast,
)

from wikivel_bot.errors import DumpError
from wikivel_bot.labels.dump_reader import DumpStream

FILE_NAMESPACE = 6
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".svg")
# Pages per parsing job sent to a worker.
JOB_PAGES = 500


@dataclass(frozen=True)
class Page:
    """One page of the dump as read (wikitext not yet parsed)."""

    page_id: int
    ns: int
    title: str
    text: str


@dataclass(frozen=True)
class ParsedPage:
    """A file page's parts the dataset keeps."""

    page_id: int
    title: str
    description: str
    categories: Tuple[str, ...]


def _local(tag: str) -> str:
    # "{http://www.mediawiki.org/xml/export-0.11/}page" -> "page"
    return tag.rsplit("}", 1)[-1]


def iter_pages(path: Path, *, threads: int = 1, decompressor: str = "auto") -> Iterator[Page]:
    """Every page of a pages dump, in dump order, with its latest revision's text.

    :param path: the XML dump (bz2, gzip or plain).
    :param threads: threads for a parallel decompressor.
    :param decompressor: ``auto``, ``parallel`` or ``stdlib``.
    :raises DumpError: a truncated archive or XML that breaks off.
    """
    stream = DumpStream(Path(path), threads=threads, decompressor=decompressor)
    try:
        context = ET.iterparse(cast(Any, stream), events=("start", "end"))
        root = None
        fields: dict = {}
        depth_in_revision = False
        try:
            for event, element in context:
                tag = _local(element.tag)
                if event == "start":
                    if root is None:
                        root = element
                    if tag == "revision":
                        depth_in_revision = True
                    continue
                if tag == "revision":
                    depth_in_revision = False
                elif tag == "text" and depth_in_revision:
                    fields["text"] = element.text or ""
                elif tag in ("title", "ns") and not depth_in_revision:
                    fields[tag] = element.text or ""
                elif tag == "id" and not depth_in_revision and "id" not in fields:
                    fields["id"] = element.text or "0"
                elif tag == "page":
                    yield Page(int(fields.get("id", 0)), int(fields.get("ns", 0) or 0), fields.get("title", ""),
                               fields.get("text", ""))
                    fields = {}
                    # Drop what was read so far: the tree never grows past one page.
                    if root is not None:
                        root.clear()
        except ET.ParseError as exc:
            raise DumpError(f"{path}: the XML breaks off or is malformed ({exc}); the dump is truncated or corrupt") from None
        except (EOFError, OSError) as exc:
            raise DumpError(f"{path}: the {stream.compression} archive is truncated or corrupt ({exc})") from None
    finally:
        stream.close()


def has_image_extension(title: str) -> bool:
    """``.jpg``, ``.jpeg``, ``.png`` or ``.svg``, in any letter case (paper §3.1)."""
    return title.lower().endswith(IMAGE_EXTENSIONS)


def category_links(wikitext: str) -> List[str]:
    """Target names of the ``[[Category:X|sort key]]`` links, without the prefix.

    ``[[:Category:X]]`` (a link to a category, not a categorisation) is not one.
    """
    import mwparserfromhell

    out: List[str] = []
    for link in mwparserfromhell.parse(wikitext).filter_wikilinks(recursive=True):
        target = str(link.title).strip()
        if target.startswith(":"):
            continue
        prefix, sep, name = target.partition(":")
        if sep and prefix.strip().lower() == "category" and name.strip():
            out.append(" ".join(name.replace("_", " ").split()))
    return out


def parse_pages(pages: Sequence[Page], languages: Sequence[str] = ("en",)) -> List[ParsedPage]:
    """Description (language fallback) and category links of file pages (a worker's job).

    :param pages: pages to parse.
    :param languages: description language fallback order.
    """
    from wikivel_bot.commons.wikitext import description

    out = []
    for page in pages:
        text = page.text or ""
        out.append(ParsedPage(page.page_id, page.title, description(text, languages) if text else "",
                              tuple(category_links(text)) if text else ()))
    return out


def parsed_file_pages(
    pages: Iterable[Page],
    wanted: Callable[[Page], bool],
    *,
    languages: Sequence[str] = ("en",),
    workers: int = 1,
    pool: Optional[ProcessPoolExecutor] = None,
) -> Iterator[ParsedPage]:
    """Parse the wanted pages, in dump order; with ``workers > 1`` in worker processes.

    :param pages: pages from :func:`iter_pages`.
    :param wanted: which pages to parse (namespace, id and extension checks).
    :param languages: description language fallback.
    :param workers: parsing processes (at most two jobs each in flight: bounded memory).
    :param pool: a process pool to use (started and stopped here when None).
    """
    def jobs() -> Iterator[List[Page]]:
        job: List[Page] = []
        for page in pages:
            if wanted(page):
                job.append(page)
                if len(job) >= JOB_PAGES:
                    yield job
                    job = []
        if job:
            yield job

    if workers <= 1:
        for job in jobs():
            yield from parse_pages(job, languages)
        return
    from wikivel_bot.labels.parallel import worker_pool

    executor = pool or worker_pool(workers)
    assert executor is not None
    pending: Deque[Future] = deque()
    try:
        for job in jobs():
            pending.append(executor.submit(parse_pages, job, tuple(languages)))
            if len(pending) >= 2 * workers:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        if pool is None:
            executor.shutdown(wait=True, cancel_futures=True)
