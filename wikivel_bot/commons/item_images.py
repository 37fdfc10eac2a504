"""Item images (P18) for CLIP Fusion's Wikidata side, fetched once and kept on disk.

Paper §4.2: "In the Wikidata encoder, in addition to the Wikidata labels, we use their item
images." A label set names each item's first P18 file; this module turns those names into
thumbnail bytes for ``ClipLinker`` (an ``ItemImageLoader``):

* thumbnail URLs come from the wiki's API (``imageinfo`` with ``iiurlwidth``), at one
  standard step (``fetch.thumb_width``), so the same images come back on every machine;
* every image is downloaded **once** into ``<linker.cache_dir>/item-images/<width>px/``
  (beside the label indexes), one file per name; a second label index build, another
  linker or another process reads them from there;
* a missing file or a broken image is recorded in ``failed.jsonl`` and not asked for again;
  that item's Wikidata side is then its text only (the linker's attach notes how many);
  a transient failure (timeouts, 5xx after retries) is simply tried on the next build;
* progress: a tqdm bar over the downloads when asked.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from wikivel_bot.commons.files import query_files
from wikivel_bot.commons.thumbnails import check_step
from wikivel_bot.core.titles import FILE_PREFIXES, page_name
from wikivel_bot.errors import FileUnavailable, WikivelError

FAILED = "failed.jsonl"
log = logging.getLogger(__name__)


@dataclass
class ItemImageStats:
    """What the last calls found (for the linker's note and the CLI)."""

    asked: int = 0
    from_cache: int = 0
    fetched: int = 0
    failed: int = 0
    transient: int = 0


def cache_directory(cache_dir: str, width: int) -> Path:
    """``<cache_dir>/item-images/<width>px``: where the item images of one step live."""
    return Path(cache_dir) / "item-images" / f"{int(width)}px"


class ItemImageCache:
    """An ``ItemImageLoader``: P18 file names -> thumbnail bytes of those that exist.

    :param directory: the cache directory (see :func:`cache_directory`).
    :param site: a pywikibot site of the wiki the files live on (Commons), or a function
        returning it: the site is opened only when something must be fetched, so cached
        images work offline and an unreachable wiki leaves the items text only.
    :param client: a ``ThumbnailClient`` (standard steps, polite connections, backoff).
    :param width: the thumbnail step.
    :param progress: show a progress bar while downloading.
    """

    def __init__(self, directory: Path, site: Any, client: Any, width: int, progress: bool = False) -> None:
        self.directory = Path(directory)
        self._site = site
        self.client = client
        self.width = check_step(int(width))
        self.progress = progress
        self.stats = ItemImageStats()
        # The label index key names the source: the same step gives the same images.
        self.cache_id = f"item-images:{self.width}px"
        self._failed: Optional[Dict[str, str]] = None

    def path_of(self, name: str) -> Path:
        """Where the thumbnail of file ``name`` is (or will be) stored."""
        digest = hashlib.sha1(_normal(name).encode("utf-8")).hexdigest()
        return self.directory / digest[:2] / f"{digest}.img"

    def failed(self) -> Dict[str, str]:
        """Names that failed for good, with the reason (read once from ``failed.jsonl``)."""
        if self._failed is None:
            self._failed = {}
            path = self.directory / FAILED
            if path.exists():
                for line in path.read_text(encoding="utf-8").splitlines():
                    try:
                        entry = json.loads(line)
                        self._failed[str(entry["name"])] = str(entry.get("reason", ""))
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut off by a crash: that name is simply tried again
        return self._failed

    def __call__(self, names: Sequence[str]) -> Mapping[str, bytes]:
        """Thumbnail bytes of every name that has one; fetches those not cached yet."""
        found: Dict[str, bytes] = {}
        todo: List[str] = []
        failed = self.failed()
        for name in dict.fromkeys(n for n in names if n):
            self.stats.asked += 1
            path = self.path_of(name)
            if path.exists():
                found[name] = path.read_bytes()
                self.stats.from_cache += 1
            elif _normal(name) in failed:
                self.stats.failed += 1
            else:
                todo.append(name)
        if todo:
            found.update(self._fetch(todo))
        return found

    def _fetch(self, names: List[str]) -> Dict[str, bytes]:
        from tqdm import tqdm

        self.directory.mkdir(parents=True, exist_ok=True)
        out: Dict[str, bytes] = {}
        bar = tqdm(total=len(names), desc="item images", unit="file", disable=not self.progress)
        try:
            titles = {f"File:{_normal(n)}": n for n in names}
            urls: Dict[str, str] = {}
            site = self._site() if callable(self._site) else self._site
            for entry in query_files(site, titles=list(titles), thumb_width=self.width):
                name = titles.get(str(entry.key), "")
                url = entry.info.get("thumburl") if entry.exists else None
                if not name:
                    continue
                if url:
                    urls[name] = str(url)
                else:
                    self._record_failure(name, "no such file on the wiki" if not entry.exists else "no thumbnail")
                    bar.update(1)
            results = self.client.get_many(list(urls.values())) if urls else {}
            for name, url in urls.items():
                outcome = results.get(url)
                if isinstance(outcome, (bytes, bytearray)):
                    data = bytes(outcome)
                    path = self.path_of(name)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    tmp = path.with_suffix(".tmp")
                    tmp.write_bytes(data)
                    tmp.replace(path)  # a cached file only ever appears complete
                    out[name] = data
                    self.stats.fetched += 1
                elif isinstance(outcome, FileUnavailable):
                    self._record_failure(name, str(outcome))
                else:
                    self.stats.transient += 1  # not recorded: tried again next time
                bar.update(1)
        except WikivelError as exc:
            # The wiki cannot be reached (or the API is down): nothing is recorded as failed,
            # those items are text only for now and are asked for again on the next build.
            log.warning("item images not fetched (%s): those items are text only", exc)
            self.stats.transient += len(names) - len(out)
        finally:
            bar.close()
        return out

    def _record_failure(self, name: str, reason: str) -> None:
        self.stats.failed += 1
        self.failed()[_normal(name)] = reason
        with (self.directory / FAILED).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"name": _normal(name), "reason": reason}, ensure_ascii=False) + "\n")


def _normal(name: str) -> str:
    """``File:Red_fox.jpg`` / ``red fox.jpg`` -> ``Red fox.jpg`` (how P18 values are written)."""
    return page_name(name, FILE_PREFIXES)


def item_image_cache(settings: Any, site: Any, progress: bool = False) -> ItemImageCache:
    """The cache for ``Settings``: ``linker.cache_dir``, ``fetch.thumb_width``, the operator's
    contact in the User-Agent.

    :param settings: the bot's ``Settings``.
    :param site: the pywikibot site of Commons (``settings.site``).
    """
    from wikivel_bot.commons.thumbnails import ThumbnailClient

    client = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    width = settings.fetch.thumb_width
    return ItemImageCache(cache_directory(settings.linker.cache_dir, width), site, client, width, progress)
